"""Building a reference pool by hand: generate candidates, rate them in a browser, pack, calibrate against a judge.

`candidates` holds the on-disk records the steps share; each other module is one step (see docs/pool.md).
"""
