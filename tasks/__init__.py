"""Prefect tasks: retries, timeouts and caching around domain functions that live below (the CLI calls the same ones)."""
