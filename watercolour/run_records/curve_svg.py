"""A run's reward curve as a small standalone SVG: no plotting library, readable in a browser and in the docs.

Per step: the mean reward (a line with dots), the best-to-worst band of its group(s), the least-squares line
of `evaluation.reward_trend` with its slope and t-statistic in the title, and, where the run measured it, the
share of on-subject paintings (a green dotted line on the same 0..1 axis).
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

from watercolour.run_records.curves import reward_trend, rewarded_steps


WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 56, 20, 44, 44
CURVE_FILE = "curve.svg"


def curve_svg(run_dir: Path, title: str = "") -> str:
    """The SVG text for `run_dir/curves.csv`; rewards lie in 0..1, so the y axis is fixed to 0..1."""
    rows = rewarded_steps(run_dir)
    steps = [float(row["step"]) for row in rows]
    means = [float(row["reward_mean"]) for row in rows]
    lo, hi = min(steps), max(steps)
    span = (hi - lo) or 1.0

    def x(step: float) -> float:
        return LEFT + (step - lo) / span * (WIDTH - LEFT - RIGHT)

    def y(reward: float) -> float:
        return TOP + (1.0 - reward) * (HEIGHT - TOP - BOTTOM)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#fffdf8"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#e4ddd0"/>'
            f'<text x="{LEFT - 8}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.2f}</text>'
        )
    for step in steps:
        parts.append(f'<text x="{x(step):.1f}" y="{HEIGHT - BOTTOM + 18}" text-anchor="middle">{step:g}</text>')
    band = [
        (step, float(row["reward_best"]), float(row["reward_worst"]))
        for step, row in zip(steps, rows, strict=True)
        if row["reward_best"] and row["reward_worst"]
    ]
    if band:
        upper = " ".join(f"{x(s):.1f},{y(b):.1f}" for s, b, _ in band)
        lower = " ".join(f"{x(s):.1f},{y(w):.1f}" for s, _, w in reversed(band))
        parts.append(f'<polygon class="band" points="{upper} {lower}" fill="#e9b8a3" fill-opacity="0.35"/>')
    line = " ".join(f"{x(s):.1f},{y(m):.1f}" for s, m in zip(steps, means, strict=True))
    parts.append(f'<polyline class="mean" points="{line}" fill="none" stroke="#b5482a" stroke-width="2"/>')
    parts.extend(
        f'<circle class="step" cx="{x(s):.1f}" cy="{y(m):.1f}" r="3.5" fill="#b5482a"/>'
        for s, m in zip(steps, means, strict=True)
    )
    shares = [
        (s, float(row["on_subject_share"])) for s, row in zip(steps, rows, strict=True) if row.get("on_subject_share")
    ]
    if shares:
        points = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in shares)
        parts.append(
            f'<polyline class="on-subject" points="{points}" fill="none" stroke="#4f7a3b" stroke-width="1.5" '
            'stroke-dasharray="2 3"/>'
        )
    heading = escape(title)
    if len(steps) >= 3:
        slope, se, t = reward_trend(steps, means)
        intercept = sum(means) / len(means) - slope * sum(steps) / len(steps)
        parts.append(
            f'<line class="fit" x1="{x(lo):.1f}" y1="{y(intercept + slope * lo):.1f}" x2="{x(hi):.1f}" '
            f'y2="{y(intercept + slope * hi):.1f}" stroke="#3d5a80" stroke-width="1.5" stroke-dasharray="6 4"/>'
        )
        heading += escape(f"{' · ' if heading else ''}slope {slope:+.4f}/step, SE {se:.4f}, t = {t:.2f}")
    parts += [
        f'<text x="{LEFT}" y="24" font-size="14">{heading.strip()}</text>',
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 8}" text-anchor="middle">GRPO step '
        f"(line: mean reward; band: best to worst rollout; dashed: least-squares fit"
        f"{'; green dots: on-subject share' if shares else ''})</text>",
        "</svg>",
    ]
    return "\n".join(parts) + "\n"


def write_curve_svg(run_dir: Path, out: Path | None = None, title: str = "") -> Path:
    """Write the curve next to the run's curves.csv (or to `out`) and return its path."""
    out = Path(out) if out is not None else Path(run_dir) / CURVE_FILE
    out.write_text(curve_svg(run_dir, title))
    return out
