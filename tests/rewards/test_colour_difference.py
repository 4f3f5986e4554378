"""CIELAB and CIEDE2000 as the colour-science references give them."""

from __future__ import annotations

import numpy as np
import pytest

from rewards.colour_difference import ciede2000, hex_to_rgb, srgb_to_lab


# Pairs of Sharma, Wu and Dalal's test data (Color Research & Application 30(1), 2005, table 1) with their CIEDE2000:
# a blue pair, a neutral one, the hue-rotation term's region, large differences and near-black.
SHARMA_PAIRS = [
    ((50.0000, 2.6772, -79.7751), (50.0000, 0.0000, -82.7485), 2.0425),
    ((50.0000, 0.0000, 0.0000), (50.0000, -1.0000, 2.0000), 2.3669),
    ((50.0000, 2.5000, 0.0000), (73.0000, 25.0000, -18.0000), 27.1492),
    ((50.0000, 2.5000, 0.0000), (56.0000, -27.0000, -3.0000), 31.9030),
    ((50.0000, 2.5000, 0.0000), (50.0000, 3.1736, 0.5854), 1.0000),
    ((22.7233, 20.0904, -46.6940), (23.0331, 14.9730, -42.5619), 2.0373),
    ((90.9257, -0.5406, -0.9208), (88.6381, -0.8985, -0.7239), 1.5381),
    ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082),
]


def test_ciede2000_matches_the_published_test_pairs_both_ways_and_in_one_broadcast():
    first = np.array([pair[0] for pair in SHARMA_PAIRS])
    second = np.array([pair[1] for pair in SHARMA_PAIRS])
    expected = np.array([pair[2] for pair in SHARMA_PAIRS])
    np.testing.assert_allclose(ciede2000(first, second), expected, atol=1e-4)
    np.testing.assert_allclose(ciede2000(second, first), expected, atol=1e-4)


@pytest.mark.parametrize(
    ("colour", "lab"),
    [("#ffffff", (100.0, 0.0, 0.0)), ("#ff0000", (53.24, 80.09, 67.20)), ("#808080", (53.59, 0.0, 0.0))],
)
def test_srgb_to_lab_gives_the_d65_values(colour, lab):
    np.testing.assert_allclose(srgb_to_lab(hex_to_rgb(colour)), lab, atol=0.01)
