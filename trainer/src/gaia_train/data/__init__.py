"""Data: a GAIA snapshot turned into VeRL parquet, and task files of other suites mixed in."""
