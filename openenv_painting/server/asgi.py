"""The ASGI app OpenEnv's runtime providers start (`uvicorn openenv_painting.server.asgi:app`, openenv.yaml's
`app`): the `offline` preset with the default server settings. Any other preset or setting: run
`python -m openenv_painting.server.app --preset ...` (the Dockerfile's CMD), which builds the app from its
arguments. Built at import on purpose: uvicorn imports this module to find `app`, and nothing else imports it."""

from __future__ import annotations

from deployments.presets import load_config
from openenv_painting.server.app import ServerSettings, build_app


app = build_app(load_config("offline"), ServerSettings())
