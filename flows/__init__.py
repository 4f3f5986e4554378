"""Prefect flows: train, pool (build and refresh), health checks, the judge audit, putting the scorer Space to sleep."""
