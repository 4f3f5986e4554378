"""Publish a finished run to the Hub: the LoRA adapter as a model repo, the rollouts and curves as a dataset.

Off unless the run names repositories (the `train` flow's `publish_run` task calls `publish`). Uploads go through
`HfApi.upload_folder` (one commit per repository), so a re-run of the task after a network failure re-sends the same
files and the Hub keeps one copy.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field


class PublishSettings(BaseModel):
    """Where a finished run is published."""

    model_repo: str = Field(description="Model repo for the adapter, e.g. 'me/watercolour-lora'.")
    dataset_repo: str = Field(description="Dataset repo for the rollouts and curves, e.g. 'me/watercolour-rollouts'.")
    endpoint: str = Field(default="https://huggingface.co", description="The Hub API endpoint.")
    token_env: str = Field(default="HF_TOKEN", description="Env var holding a token with write access.")
    private: bool = Field(default=True, description="Create the repositories private.")


def publish(run_dir: Path, settings: PublishSettings) -> dict[str, str]:
    from huggingface_hub import HfApi

    token = os.environ.get(settings.token_env)
    if not token:
        raise RuntimeError(f"${settings.token_env} is not set: publishing needs a token with write access")
    api = HfApi(endpoint=settings.endpoint, token=token)
    run_dir = Path(run_dir)
    adapter = run_dir / "adapter"
    if not adapter.is_dir():
        raise FileNotFoundError(f"no adapter at {adapter}: the run has not finished training")
    urls = {}
    api.create_repo(settings.model_repo, private=settings.private, exist_ok=True)
    urls["adapter"] = api.upload_folder(
        repo_id=settings.model_repo, folder_path=adapter, commit_message=f"Adapter of run {run_dir.name}"
    ).commit_url
    api.create_repo(settings.dataset_repo, repo_type="dataset", private=settings.private, exist_ok=True)
    # The rollout store (parquet shards and their PNGs) and the per-step curves, nothing else of the run dir.
    urls["rollouts"] = api.upload_folder(
        repo_id=settings.dataset_repo,
        repo_type="dataset",
        folder_path=run_dir,
        allow_patterns=["rollouts/**", "curves.csv"],
        commit_message=f"Rollouts and curves of run {run_dir.name}",
    ).commit_url
    return urls
