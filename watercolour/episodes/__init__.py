"""Repaint episodes: the painting environment TRL's `environment_factory` steps, what the policy is told about its
picture, the tool-calling chat template and the repaint warm start's examples.
"""
