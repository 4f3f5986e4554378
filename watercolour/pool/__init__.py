"""The reference pool's tools: generate candidates, rate them in a browser, pack, calibrate against a judge, publish,
and refresh a pool against today's renderer and gate.

`candidates` holds the on-disk records the steps share; each other module is one step (see docs/pool.md). What a
reference is, and the bundled pool, are on the ground floor (`ground.reference_pool`, `ground/seed_pool/`).
"""
