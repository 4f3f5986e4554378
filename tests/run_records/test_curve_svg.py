"""The reward curve SVG: one dot per step in step order, the band, and the least-squares line of reward_trend."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from watercolour.run_records.curve_svg import BOTTOM, HEIGHT, TOP, curve_svg, write_curve_svg
from watercolour.run_records.curves import CurvesFile, columns, reward_trend


SVG = "{http://www.w3.org/2000/svg}"


def write_curves(run_dir, rewards, order=None):
    curves = CurvesFile(run_dir)
    for step in order or range(1, len(rewards) + 1):
        mean = rewards[step - 1]
        row = dict.fromkeys(columns(), "")
        row.update(step=step, reward_mean=mean, reward_best=min(1.0, mean + 0.2), reward_worst=max(0.0, mean - 0.1))
        curves.append(row)


def y_of(reward):
    return TOP + (1.0 - reward) * (HEIGHT - TOP - BOTTOM)


def test_the_curve_has_a_dot_per_step_in_step_order_and_the_fit_line(tmp_path):
    rewards = [0.10, 0.18, 0.22, 0.31, 0.35]
    write_curves(tmp_path, rewards, order=[3, 1, 5, 2, 4])
    root = ET.fromstring(curve_svg(tmp_path, "demo"))
    dots = root.findall(f"{SVG}circle[@class='step']")
    assert [float(dot.get("cy")) for dot in dots] == pytest.approx([y_of(r) for r in rewards], abs=0.06)
    xs = [float(dot.get("cx")) for dot in dots]
    assert xs == sorted(xs)
    slope, _, t = reward_trend([1, 2, 3, 4, 5], rewards)
    fit = root.find(f"{SVG}line[@class='fit']")
    intercept = sum(rewards) / 5 - slope * 3
    assert float(fit.get("y1")) == pytest.approx(y_of(intercept + slope), abs=0.06)
    assert float(fit.get("y2")) == pytest.approx(y_of(intercept + slope * 5), abs=0.06)
    assert f"t = {t:.2f}" in ET.tostring(root, encoding="unicode")
    assert root.find(f"{SVG}polygon[@class='band']") is not None


def test_two_steps_draw_no_fit_and_an_empty_run_is_an_error(tmp_path):
    write_curves(tmp_path / "two", [0.2, 0.3])
    root = ET.fromstring(curve_svg(tmp_path / "two"))
    assert len(root.findall(f"{SVG}circle[@class='step']")) == 2 and root.find(f"{SVG}line[@class='fit']") is None
    with pytest.raises(ValueError, match="no steps with a reward"):
        curve_svg(tmp_path / "empty")


def test_write_puts_the_svg_next_to_the_curves(tmp_path):
    write_curves(tmp_path, [0.1, 0.2, 0.4])
    path = write_curve_svg(tmp_path)
    assert path == tmp_path / "curve.svg" and ET.parse(path).getroot().tag == f"{SVG}svg"


def test_the_on_subject_share_is_drawn_where_the_run_measured_it(tmp_path):
    write_curves(tmp_path / "old", [0.1, 0.2, 0.3])
    assert ET.fromstring(curve_svg(tmp_path / "old")).find(f"{SVG}polyline[@class='on-subject']") is None
    curves = CurvesFile(tmp_path / "new")
    for step, share in enumerate([0.25, 0.5, 0.75], start=1):
        row = dict.fromkeys(columns(), "")
        row.update(step=step, reward_mean=0.1 * step, on_subject_share=share)
        curves.append(row)
    line = ET.fromstring(curve_svg(tmp_path / "new")).find(f"{SVG}polyline[@class='on-subject']")
    assert line is not None
    ys = [float(point.split(",")[1]) for point in line.get("points").split()]
    assert ys == pytest.approx([y_of(0.25), y_of(0.5), y_of(0.75)], abs=0.06)
