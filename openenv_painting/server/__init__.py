"""The OpenEnv server of the painting environment: `environment.py` (one session's episode) and `app.py`."""
