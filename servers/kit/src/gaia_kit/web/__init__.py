"""Outbound HTTP: the one client (timeouts, retries, per-host limits, size cap), its SSRF guard and record/replay cache, and Chromium's launch options and guarding proxy."""
