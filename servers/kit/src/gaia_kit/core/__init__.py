"""The server and the rules every server follows: KitServer, sessions, paths, quotas, limits, errors, settings, serve."""
