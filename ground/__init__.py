"""The ground floor: what a sketch, a picture, a record and a setting are. Imports nothing of the project.

The prompt and its allowlist, sketch parsing and the JavaScript scope rules, the wire and record types, the
settings each layer takes (and the run configuration that holds them), the subjects' palettes, the reference pool's
records and atomic files. Every other floor stands on it (tests/house/test_import_graph.py keeps it so).
"""
