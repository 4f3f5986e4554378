"""Prefect flows: train, pool (build and refresh), health checks, the judge audit, the scorer Space's sleep."""
