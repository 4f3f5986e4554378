"""The scoring engine and what stands around it: the term registry, the content cache, dead letters, the TRL reward
adapter and the engine's own loop thread. Completions in, `RewardParts` out, every reward rule applied once.
"""
