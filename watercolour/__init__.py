"""watercolour: RL-train a code language model to paint watercolours by writing p5.brush sketches."""

__version__ = "0.1.0"
