"""Teams: roles from a TOML file, and the delegation that runs them on one transcript."""
