"""The token of the loopback Hugging Face Hub the tests start (`watercolour/rehearsal/hub.py`): never logged."""

HUB_TOKEN = "hf_secret_never_logged"
