"""Judge tasks: the audit (`watercolour.judge_trust.audit_report.run_audit`), with one retry for a judge endpoint that
blips."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from ground.run_config import RunConfig
from watercolour.judge_trust.audit_report import run_audit
from watercolour.judge_trust.judge_audit import AuditReport, AuditSettings


@task(name="audit-judge", retries=1, retry_delay_seconds=[10])
def audit_judge(config: RunConfig, out_dir: Path, run_dir: Path | None, settings: AuditSettings) -> AuditReport:
    """Ask the judge the audit's questions (and the planted controls the same ones); write audit.md and .json."""
    return run_audit(config, out_dir, run_dir, settings)
