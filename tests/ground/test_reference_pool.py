"""The bundled seed reference pool: its size and tiers, its committed renders, the loader's errors."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from ground.reference_pool import BUNDLED_POOL, PoolError, by_tier, load_pool
from rewards.gate import static_check


def test_seed_pool_holds_at_least_24_project_rated_references_in_both_tiers():
    refs = load_pool()
    groups = by_tier(refs)
    assert len(refs) >= 24
    assert len({ref.name for ref in refs}) == len(refs)
    assert len(groups["love"]) >= 8 and len(groups["okay"]) >= 8
    assert {ref.rated_by for ref in refs} == {"project"}
    assert any("hibiscus" in ref.subject for ref in groups["love"])


def test_every_seed_render_is_a_600_square_png():
    for ref in load_pool():
        image = Image.open(io.BytesIO(ref.png))
        assert (image.format, image.size) == ("PNG", (600, 600)), ref.name


def test_every_seed_sketch_passes_the_static_gate():
    for ref in load_pool():
        verdict = static_check(ref.sketch)
        assert verdict.passed, (ref.name, verdict.details)


def test_load_pool_names_the_fix_when_the_folder_is_missing(tmp_path):
    with pytest.raises(PoolError, match="missing pool.json"):
        load_pool(tmp_path / "nowhere")


def test_load_pool_refuses_an_empty_pool(tmp_path):
    (tmp_path / "pool.json").write_text(json.dumps({"references": []}))
    with pytest.raises(PoolError, match="lists no paintings"):
        load_pool(tmp_path)


def test_load_pool_reads_a_pool_folder_given_by_path(tmp_path):
    entry = json.loads((BUNDLED_POOL / "pool.json").read_text())["references"][0]
    for name in (entry["file"], entry["png"]):
        (tmp_path / name).write_bytes((BUNDLED_POOL / name).read_bytes())
    (tmp_path / "pool.json").write_text(json.dumps({"references": [{**entry, "rated_by": "user"}]}))
    [ref] = load_pool(tmp_path)
    assert (ref.name, ref.rated_by) == (entry["name"], "user")


@pytest.mark.browser
@pytest.mark.parametrize("name", ["peach_hibiscus_loose", "red_poppy", "lavender_sprigs"])
async def test_seed_sketch_rerenders_to_its_committed_png(browser_pool, name):
    [ref] = [ref for ref in load_pool() if ref.name == name]
    result = await browser_pool.render(ref.sketch, seed=0)
    assert result.ok and result.png is not None, result.errors
    fresh = np.asarray(Image.open(io.BytesIO(result.png)).convert("RGB"), dtype=np.float64)
    committed = np.asarray(Image.open(io.BytesIO(ref.png)).convert("RGB"), dtype=np.float64)
    # llvmpipe renders the same seed to the same pixels on one machine; 2/255 leaves room for another CPU.
    assert np.abs(fresh - committed).mean() < 2.0
    assert result.coverage is not None and result.coverage > 0.02
