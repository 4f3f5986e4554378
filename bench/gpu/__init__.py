"""The GPU benchmark: GRPO steps of random policies of published shapes, default generation path against the
trainer's GPU defaults (`python -m bench.gpu`; docs/gpu.md)."""
