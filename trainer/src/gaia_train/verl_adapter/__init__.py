"""The VeRL adapter: the agent loop verl runs, and the offline check of a verl configuration."""
