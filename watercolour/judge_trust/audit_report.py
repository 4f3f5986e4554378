"""The judge audit as a page a person reads: the audited judge beside the planted controls, then the references."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ground.run_config import RunConfig
from watercolour.judge_trust.judge_audit import (
    THRESHOLDS,
    AuditReport,
    AuditSettings,
    Figure,
    JudgeAudit,
    Picture,
    audit,
    run_paintings,
)


ROWS = (
    ("position bias", "position_bias", f"≤ {THRESHOLDS['position_bias']}"),
    ("first-position share", "first_position_share", f"0.5 ± {THRESHOLDS['first_position_skew']}"),
    ("self-consistency", "self_consistency", f"≥ {THRESHOLDS['self_consistency']}"),
    ("transitivity violations", "transitivity_violations", f"≤ {THRESHOLDS['transitivity_violations']}"),
    ("decisiveness (pairs decided)", "decisiveness", "high"),
    ("tier agreement (love beats okay)", "tier_agreement", f"≥ {THRESHOLDS['tier_agreement']}"),
    ("unresolved replies", "unresolved", f"≤ {THRESHOLDS['unresolved']}"),
)


def _cell(figure: Figure) -> str:
    return "–" if figure.value is None else f"{figure.value:.2f} (n {figure.n})"


def _judges(report: AuditReport) -> list[JudgeAudit]:
    return [report.audited, *report.controls]


def audit_markdown(report: AuditReport) -> str:
    """Markdown: the figures table, each judge's flags, and the references from hardest to easiest."""
    judges = _judges(report)
    header = ["figure", "healthy", *(f"`{j.backend}`" for j in judges)]
    lines = [
        "# Judge audit",
        "",
        f"{report.references} references and {report.rollouts} rollouts; the judge under audit is the first column, "
        "the planted controls (always 'A', a coin flip) were asked the same questions.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for label, field, healthy in ROWS:
        lines.append(f"| {label} | {healthy} | " + " | ".join(_cell(getattr(j, field)) for j in judges) + " |")
    lines.append("| questions asked | | " + " | ".join(str(j.questions) for j in judges) + " |")
    lines += ["", "## Flags", ""]
    for judge in judges:
        found = "; ".join(judge.flags) if judge.flags else "none"
        lines.append(f"- `{judge.backend}`: {found}")
    lines += [
        "",
        f"## Reference difficulty (`{report.audited.backend}`)",
        "",
        "How often typical paintings beat each reference "
        + ("(the run's rollouts)" if report.rollouts else "(the rest of the pool)")
        + ": a reference nobody beats teaches nothing, one everybody beats teaches little.",
        "",
        "| reference | tier | beaten | comparisons |",
        "|---|---|---|---|",
    ]
    ranked = sorted(
        report.audited.difficulty, key=lambda d: (d.beaten is None, d.beaten if d.beaten is not None else 0)
    )
    for item in ranked:
        beaten = "–" if item.beaten is None else f"{item.beaten:.2f}"
        lines.append(f"| {item.name} | {item.tier} | {beaten} | {item.comparisons} |")
    return "\n".join(lines) + "\n"


def run_audit(
    config: RunConfig, out_dir: Path, run_dir: Path | None = None, settings: AuditSettings | None = None
) -> AuditReport:
    """Audit the judge `config` names on its pool (and `run_dir`'s rollouts); writes `audit.md` and `audit.json`."""
    from ground.reference_pool import load_pool
    from rewards.judging.judge import judge_settings, make_judge
    from rewards.scoring.cache import write_atomic

    pool = load_pool(config.pool_dir)
    rollouts = run_paintings(run_dir) if run_dir is not None else []
    judge = make_judge(judge_settings(config), pool)

    async def ask() -> AuditReport:
        try:
            references = [Picture(r.name, r.png, r.tier) for r in pool]
            return await audit(judge, references, rollouts, settings)
        finally:
            await judge.aclose()

    report = asyncio.run(ask())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "audit.json", report.model_dump_json(indent=2).encode())
    write_atomic(out_dir / "audit.md", audit_markdown(report).encode())
    return report
