"""The renderer benchmark: the warm pool against a reference-style baseline, in one run (`python -m bench`)."""
