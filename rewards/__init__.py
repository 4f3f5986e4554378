"""Pixels and sketch to numbers: the gate, the length ramp, aesthetic scorers, pairwise judges, the composite."""
