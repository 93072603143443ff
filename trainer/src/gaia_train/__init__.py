"""GAIA training and evaluation on top of the gaia-env MCP gateway."""
