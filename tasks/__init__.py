"""Prefect tasks: retries, timeouts and caching around domain functions below (the CLI calls the same ones)."""
