"""The rating page, and the whole pool path: generate from loopback models, rate in Chromium, pack, load, judge."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from ground.reference_pool import load_pool
from rewards.judging.judge import make_judge
from rewards.judging.judge_protocol import draw_references
from rewards.judging.settings import JudgeSettings
from tests.servers.generator import critic_server, writer_server
from watercolour.cli import main
from watercolour.pool.candidates import Candidate, append_candidate, read_ratings
from watercolour.pool.rate import RatingDesk, make_server


def candidate(folder, name: str, passed: bool = True) -> Candidate:
    made = Candidate(
        id=name, model="m", endpoint="http://x", subject="a poppy", round=0, temperature=0.9, passed=passed,
        js=f"{name}.js", png=f"{name}.png",
    )  # fmt: skip
    (folder / made.js).write_text("function setup() {}")
    (folder / made.png).write_bytes(b"\x89PNG")
    append_candidate(folder, made)
    return made


def test_refused_candidates_are_hidden_and_other_files_are_not_served(tmp_path):
    candidate(tmp_path, "cand_0000")
    candidate(tmp_path, "cand_0001", passed=False)
    (tmp_path / "secret.txt").write_text("no")
    desk = RatingDesk(tmp_path)
    assert [item["id"] for item in desk.items()] == ["cand_0000"]
    assert desk.file("secret.txt") is None and desk.file("../secret.txt") is None
    assert [item["id"] for item in RatingDesk(tmp_path, show_refused=True).items()] == ["cand_0000", "cand_0001"]


def test_rating_twice_keeps_the_last_tier_and_undo_walks_back(tmp_path):
    for name in ("cand_0000", "cand_0001"):
        candidate(tmp_path, name)
    desk = RatingDesk(tmp_path)
    desk.rate("cand_0000", "love")
    desk.rate("cand_0001", "nope")
    desk.rate("cand_0000", "meh")
    assert read_ratings(tmp_path).order == ["cand_0001", "cand_0000"]
    assert desk.undo()["undone"] == "cand_0000"
    assert read_ratings(tmp_path).tiers == {"cand_0001": "nope"}
    with pytest.raises(ValueError, match="unknown tier"):
        desk.rate("cand_0001", "great")
    assert not list(tmp_path.glob("*.tmp"))  # every write went through a temporary file and os.replace


@pytest.mark.browser
def test_generate_rate_in_chromium_pack_and_the_judge_draws_from_the_rated_pool(tmp_path):
    from playwright.sync_api import sync_playwright

    from renderers.browsers import CHROMIUM

    folder, pool_dir = tmp_path / "candidates", tmp_path / "pool"
    with writer_server() as writer_a, writer_server() as writer_b, critic_server() as critic:
        code = main(
            ["pool", "generate", "--endpoints", f"{writer_a.url}/v1,{writer_b.url}/v1", "--models", "a/one,b/two"]
            + ["--per-model", "3", "--rounds", "1", "--critic-url", f"{critic.url}/v1", "--critic-model", "c/vl"]
            + ["--out", str(folder), "--timeout", "30"]
        )
    assert code == 0 and len((folder / "candidates.jsonl").read_text().splitlines()) == 12

    server = make_server(RatingDesk(folder), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    keys = "1212121234"  # love, okay, love, okay, love, okay, love, okay, meh, nope
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(url)
            progress, painting = page.locator("#progress"), page.locator("#painting")
            page.wait_for_function("document.querySelector('#progress').textContent === '0 of 12 rated'")
            shown = []
            for count, key in enumerate(keys, start=1):
                shown.append(painting.get_attribute("data-id"))
                page.keyboard.press(key)
                page.wait_for_function(f"document.querySelector('#progress').textContent === '{count} of 12 rated'")
            assert len(set(shown)) == 10
            page.keyboard.press("u")
            page.wait_for_function("document.querySelector('#progress').textContent === '9 of 12 rated'")
            assert painting.get_attribute("data-id") == shown[-1]
            page.reload()
            page.wait_for_function("document.querySelector('#progress').textContent === '9 of 12 rated'")
            assert painting.get_attribute("data-id") == shown[-1]  # resumes at the undone candidate
            assert progress.text_content() == "9 of 12 rated"
            page.keyboard.press("s")
            page.wait_for_function("document.querySelector('#sketch').textContent.includes('brush.')")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()

    ratings = json.loads((folder / "ratings.json").read_text())
    assert ratings["order"] == shown[:9]
    assert [ratings["tiers"][name] for name in shown[:9]] == ["love", "okay"] * 4 + ["meh"]

    assert main(["pool", "pack", str(folder), "--out", str(pool_dir)]) == 0
    pool = load_pool(pool_dir)
    assert sorted(r.name for r in pool) == sorted(shown[:8]) and {r.rated_by for r in pool} == {"user"}
    assert len((pool_dir / "REVISION").read_text().strip()) == 16
    judge = make_judge(JudgeSettings(backend="offline"), pool)
    drawn = draw_references(pool, 4, seed=7, mix=JudgeSettings().mix)
    assert sorted(r.tier for r in drawn) == ["love", "love", "okay", "okay"]
    verdict = asyncio.run(judge.judge((folder / f"{shown[9]}.png").read_bytes(), group_seed=7))
    assert len(verdict.comparisons) == 4 and 0 <= verdict.score <= 1


@pytest.mark.browser
def test_the_grid_view_rates_the_focused_candidate_by_keyboard_and_survives_a_reload(tmp_path):
    from playwright.sync_api import sync_playwright

    from renderers.browsers import CHROMIUM

    names = [candidate(tmp_path, f"cand_{number:04d}").id for number in range(5)]
    server = make_server(RatingDesk(tmp_path), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    progress = "document.querySelector('#progress').textContent === '{} of 5 rated'"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
            page.wait_for_function(progress.format(0))
            page.keyboard.press("g")
            cards, focused = page.locator("#grid .card"), page.locator("#grid .card.focused")
            assert cards.count() == 5 and focused.get_attribute("data-id") == names[0]
            page.keyboard.press("ArrowRight")
            page.keyboard.press("ArrowRight")
            assert focused.get_attribute("data-id") == names[2]
            page.keyboard.press("1")
            page.wait_for_function(progress.format(1))
            assert cards.count() == 4 and focused.get_attribute("data-id") == names[3]  # the focus stays in place
            page.keyboard.press("ArrowLeft")
            page.keyboard.press("4")
            page.wait_for_function(progress.format(2))
            page.reload()
            page.wait_for_function(progress.format(2))
            assert page.locator("#grid").is_visible() and cards.count() == 3  # the view came back with the page
            page.keyboard.press("u")
            page.wait_for_function(progress.format(1))
            assert focused.get_attribute("data-id") == names[1]  # the undone candidate is back, in focus
            page.keyboard.press("g")
            assert page.locator("#painting").is_visible() and page.locator("#painting").get_attribute("data-id")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    assert read_ratings(tmp_path).tiers == {names[2]: "love"}


def test_submitted_ratings_are_merged_into_the_saved_ones_and_unknown_ids_are_refused(tmp_path):
    from watercolour.pool.candidates import RatingsSubmitted, merge_submitted

    for name in ("cand_0000", "cand_0001"):
        candidate(tmp_path, name)
    RatingDesk(tmp_path).rate("cand_0000", "love")
    merged = merge_submitted(tmp_path, RatingsSubmitted(tiers={"cand_0001": "meh"}))
    assert merged.tiers == {"cand_0000": "love", "cand_0001": "meh"} == read_ratings(tmp_path).tiers
    with pytest.raises(ValueError, match="not in"):
        merge_submitted(tmp_path, RatingsSubmitted(tiers={"cand_9999": "love"}))
    assert read_ratings(tmp_path).tiers == merged.tiers  # nothing lost to the bad input


def test_finishing_with_no_flow_run_waiting_names_the_problem(tmp_path):
    from watercolour.pool.rate import NotWaiting

    candidate(tmp_path, "cand_0000")
    with pytest.raises(NotWaiting, match="no flow run waits"):
        RatingDesk(tmp_path).finish()
