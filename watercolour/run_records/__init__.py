"""What a run leaves behind: the rollout store, per-step curves, the galleries, contact sheets and the run
directory's checkpoints.
"""
