"""Publish a packed pool revision to a Hub dataset repository: the `datasets` dataset and the loader layout.

One `HfApi.upload_folder` commit per revision, its message naming the revision, so the repository's history is
the pool's. The endpoint defaults to the one `huggingface_hub` resolves (`HF_ENDPOINT`, else the Hub itself).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field


class PoolHubSettings(BaseModel):
    """Where a pool revision is published."""

    repo_id: str = Field(description="Dataset repo for the pool, e.g. 'me/watercolour-pool'.")
    endpoint: str | None = Field(default=None, description="The Hub API endpoint; None = HF_ENDPOINT or the Hub.")
    token_env: str = Field(default="HF_TOKEN", description="Env var holding a token with write access.")
    private: bool = Field(default=True, description="Create the repository private.")


def publish_pool(pool_dir: Path, settings: PoolHubSettings) -> str:
    """Upload `pool_dir` (as `pool pack` wrote it) in one commit; the commit's URL."""
    from huggingface_hub import HfApi

    from watercolour.pool.pack import REVISION

    token = os.environ.get(settings.token_env)
    if not token:
        raise RuntimeError(f"${settings.token_env} is not set: publishing the pool needs a token with write access")
    revision_file = Path(pool_dir) / REVISION
    if not revision_file.is_file():
        raise FileNotFoundError(
            f"no {REVISION} in {pool_dir}: pack it first with `watercolour pool pack FOLDER --out {pool_dir}`"
        )
    revision = revision_file.read_text(encoding="utf-8").strip()
    api = HfApi(endpoint=settings.endpoint, token=token)
    api.create_repo(settings.repo_id, repo_type="dataset", private=settings.private, exist_ok=True)
    return api.upload_folder(
        repo_id=settings.repo_id,
        repo_type="dataset",
        folder_path=pool_dir,
        commit_message=f"pool revision {revision}",
    ).commit_url
