"""Pipelined rollouts: a decode batch kept full across steps by per-slot refill, within a staleness bound, and the
trainer's side of it (TRL's importance correction, early scoring, the rows' step and weights)."""
