"""Training: TRL's GRPO trainer wired to the reward and the run records, the warm start and its cache, repaint
training's glue, several processes, evaluation, and the demo's learning run.
"""
