"""The painting environment served over OpenEnv: wire models, a client, and the server (`server/`).

Layout as OpenEnv's own environments: `models.py` (the wire types, shared by both ends), `client.py` (what a
trainer imports; it never imports the server), `server/` (the environment over the scoring engine and the app),
`Dockerfile`, `README.md` and `openenv.yaml` (a Hugging Face Docker Space, pushed as the directory `space_bundle.py`
writes). docs/openenv.md says how to run, publish, deploy and load it.
"""
