"""The `judge` flow's audit: the judge a preset names, asked the audit's questions beside the planted controls.

The same `run_audit` as `watercolour judge audit`, as a task (`tasks.judge`: a judge behind an endpoint can blip,
so one retry), with the report as a markdown artifact, so an audit scheduled beside training shows up in the UI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from deployments.presets import load_config
from tasks.judge import audit_judge
from watercolour.judge_trust.audit_report import audit_markdown
from watercolour.judge_trust.judge_audit import AuditSettings


@flow(name="judge", log_prints=True)
def audit(
    preset: str = "offline",
    overrides: dict[str, Any] | None = None,
    out_dir: str = "runs/judge-audit",
    run_dir: str | None = None,
    settings: AuditSettings | None = None,
) -> dict[str, Any]:
    """Audit the judge; the report is the `judge-audit` markdown artifact and `out_dir/audit.md`.

    Args:
        preset: Run preset whose judge (and reference pool) is audited.
        overrides: Configuration overrides, e.g. {"judge.base_url": "http://127.0.0.1:8000/v1"}.
        out_dir: Where audit.md and audit.json are written.
        run_dir: A run directory whose rendered rollouts join the audit as challengers.
        settings: How many questions of each kind to ask.
    """
    config = load_config(preset, overrides or {})
    report = audit_judge(config, Path(out_dir), Path(run_dir) if run_dir else None, settings or AuditSettings())
    create_markdown_artifact(audit_markdown(report), key="judge-audit", description=f"judge audit of {preset}")
    print(f"{report.audited.backend}: {'; '.join(report.audited.flags) or 'no flags'}")
    return {"backend": report.audited.backend, "flags": report.audited.flags, "questions": report.audited.questions}
