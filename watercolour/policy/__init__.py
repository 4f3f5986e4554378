"""The policy: where the model comes from, its LoRA and adapter, how rollouts generate fast (cache, compiled
decode, merged weights, linear-attention kernels, early scoring), and the procedural stand-in policy.
"""
