"""A run pins the pool revision it starts with: recorded in its configuration, and a resume against a pool folder
that now holds another revision is refused instead of quietly changing the run's taste."""

from __future__ import annotations

import shutil

import pytest

from deployments.presets import load_config
from ground.reference_pool import BUNDLED_POOL, pool_revision
from watercolour.training.run import PoolRevisionChanged, pin_pool_revision


def test_a_resumed_run_keeps_its_revision_and_refuses_a_pool_that_changed_under_it(tmp_path):
    pool = tmp_path / "pool"
    shutil.copytree(BUNDLED_POOL, pool)
    config = load_config("smoke", {"run_dir": str(tmp_path / "run"), "pool_dir": str(pool)})
    started = pin_pool_revision(config, None)
    assert started.pool_revision == pool_revision(pool) == pool_revision(None)
    saved = tmp_path / "run" / "config.yaml"
    started.save(saved)
    assert pin_pool_revision(config, saved).pool_revision == started.pool_revision  # same pool: resumes

    (pool / "red_poppy.png").write_bytes(
        (BUNDLED_POOL / "orange_poppy.png").read_bytes()
    )  # a new revision packed in place
    with pytest.raises(PoolRevisionChanged, match=f"trains against revision {started.pool_revision}"):
        pin_pool_revision(config, saved)
    # Named up front (a run that must train on one revision), a mismatch is refused the same way.
    named = config.model_copy(update={"pool_revision": started.pool_revision})
    with pytest.raises(PoolRevisionChanged, match="point pool_dir at that revision's folder"):
        pin_pool_revision(named, None)
