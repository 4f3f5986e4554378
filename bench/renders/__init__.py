"""The render benchmark's parts (`python -m bench`): the published recipe's renderer as the baseline, and the warm
pool's throughput paired against another checkout."""
