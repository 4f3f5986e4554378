"""The pairwise judge: its protocol, its backends (an OpenAI-compatible VLM, the offline stand-in), the group and
curriculum modes, and the judge reward term.
"""
