"""Repaint episodes: the painting environment, one class that TRL's `environment_factory` steps in process and
the OpenEnv server (`openenv_painting/server/`) serves over the network, and what the policy is told about its picture.
"""
