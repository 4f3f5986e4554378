"""Pixels and sketch to numbers: the reward terms (gate, length, aesthetic), their backends and shared clients.

The judge's family is in `rewards.judging`, the engine that applies every term in `rewards.scoring`. Terms take
their own settings (`ground.settings`), never the run configuration.
"""
