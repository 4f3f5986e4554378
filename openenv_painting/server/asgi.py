"""The ASGI app OpenEnv's runtime providers start (`uvicorn openenv_painting.server.asgi:app`, openenv.yaml's
`app`): the `offline` preset with the default server settings. Any other preset or setting: run
`python -m openenv_painting.server.app --preset ...` (the Dockerfile's CMD), which builds the app from its
arguments. Built at import on purpose: uvicorn imports this module to find `app`, and nothing else imports it."""

from __future__ import annotations

import logging

from deployments.presets import load_config
from openenv_painting.server.app import ServerSettings, build_app


# uvicorn configures its own loggers only: without this the server's start, configuration and dead letters vanish.
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
app = build_app(load_config("offline"), ServerSettings())
