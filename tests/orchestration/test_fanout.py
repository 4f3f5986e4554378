"""The Prefect fan-out: one task per GRPO group through the process's scoring engine, and one step numbering
for every record, direct or fanned out, before and after a resume."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor, wait

import pytest
from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from deployments.presets import load_config
from rewards.scoring.composite import CompositeReward
from rewards.scoring.dead_letters import DeadLetterLog
from rewards.scoring.engine_thread import close_engine_thread
from rewards.scoring.scoring_engine import ScoringEngine
from tasks.fanout import FannedScorer, StepState
from tests.servers.loopback import LoopbackServer, Reply, Request
from watercolour.run_records.rollout_store import RolloutStore


pytestmark = [pytest.mark.browser, pytest.mark.slow]

COLOURS = ("#f28c6a", "#6a8cf2", "#8cf26a", "#f2e26a", "#c06af2", "#6af2e0", "#f26ab0", "#8a6a4a")


def constant_scores(request: Request) -> Reply:
    """A scorer that answers mu = 0 (score 0.5) for every image, in the scorer Space's wire format."""
    scores = [{"mu": 0.0, "sigma": 1.0, "score": 0.5} for _ in request.body["images"]]
    return Reply(200, {"scores": scores, "model": "loopback"})


def fenced(sketch: str) -> str:
    return f"```javascript\n{sketch}\n```"


def test_one_step_makes_one_aesthetic_request_per_group(prefect_server, tmp_path, flower_sketch):
    batch = [fenced(flower_sketch.replace("#f28c6a", colour)) for colour in COLOURS]
    with LoopbackServer(constant_scores) as server:
        overrides = {"aesthetic.url": server.url, "training.num_generations": 4, "run_dir": str(tmp_path)}
        config = load_config("hps-only", {**overrides, "render.browsers": 1})

        @flow
        def one_step() -> list:
            with ThreadPoolTaskRunner(max_workers=2) as runner:
                fanned = CompositeReward(FannedScorer(config, tmp_path, runner=runner))
                return asyncio.run(fanned(["a"] * 4 + ["b"] * 4, batch, trainer_state=StepState(0)))

        try:
            rewards = one_step()
        finally:
            close_engine_thread()
    assert all(reward is not None and reward > 0.05 for reward in rewards)
    assert sorted(len(request.body["images"]) for request in server.requests) == [4, 4]


def test_dead_letters_carry_the_rollout_step_direct_and_fanned_and_a_resume_drops_them(
    prefect_server, tmp_path, flower_sketch
):
    # The scorer is down: every admitted rollout gets a dead letter, from the engine or from the failed group task.
    down = {"aesthetic.url": "http://127.0.0.1:9", "aesthetic.attempts": 1, "training.num_generations": 2}
    config = load_config("hps-only", {**down, "run_dir": str(tmp_path), "render.browsers": 1})
    empty_pool = tmp_path / "no-pool"
    empty_pool.mkdir()
    broken = load_config(
        "offline", {"pool_dir": str(empty_pool), "training.num_generations": 2, "run_dir": str(tmp_path)}
    )
    batch = [fenced(flower_sketch), "no sketch here"]

    @flow
    def fanned(global_step: int) -> None:
        with ThreadPoolTaskRunner(max_workers=2) as runner:
            state = StepState(global_step)
            asyncio.run(
                CompositeReward(FannedScorer(config, tmp_path, runner=runner))(["p"] * 2, batch, trainer_state=state)
            )
            # The judge cannot start on an empty pool: the group's task fails after its retries.
            broken_reward = CompositeReward(FannedScorer(broken, tmp_path, runner=runner, retries=0))
            asyncio.run(broken_reward(["p"] * 2, batch, trainer_state=state))

    async def direct(global_step: int) -> None:
        reward = CompositeReward(ScoringEngine(config.scoring, tmp_path))
        try:
            await reward(["p"] * 2, batch, trainer_state=StepState(global_step))
        finally:
            await reward.aclose()

    try:
        fanned(0)
        fanned(2)
    finally:
        close_engine_thread()
    asyncio.run(direct(1))
    letters = DeadLetterLog(tmp_path).read()
    by_stage = {(letter.stage, letter.step) for letter in letters}
    # TRL's global_step g scores the rollouts of step g + 1, like the store and the curves.
    assert by_stage == {("aesthetic", 1), ("fan-out", 1), ("aesthetic", 2), ("aesthetic", 3), ("fan-out", 3)}
    # A resume from checkpoint-2 replays step 3: its letters go, the ones of steps 1 and 2 stay.
    DeadLetterLog(tmp_path).truncate(after_step=2)
    RolloutStore(tmp_path, num_generations=2).truncate(after_step=2)
    assert {letter.step for letter in DeadLetterLog(tmp_path).read()} == {1, 2}


def test_a_group_that_calls_the_judge_waits_for_a_judge_slot_before_its_task_exists(prefect_server, tmp_path):
    """Every slot of the global `judge` limit held elsewhere: the step's group task is not even created until one
    is free (the training task takes the slot first), then it scores, and the slot is given back."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName
    from prefect.concurrency.sync import concurrency

    from tasks.fanout import JUDGE_LIMIT
    from watercolour.rehearsal.services import judge_service, scorer_service
    from watercolour.rehearsal.stand_in import PoolSketches

    with get_client(sync_client=True) as client:
        client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=JUDGE_LIMIT, limit=1))
    with scorer_service() as scorer, judge_service() as judge:
        overrides = {"aesthetic.url": scorer, "judge.base_url": judge, "judge.model": "stand-in"}
        config = load_config("judge-led", {**overrides, "training.num_generations": 2, "render.browsers": 1})
        texts = [PoolSketches()(f"rollout {i}") for i in range(2)]

        @flow
        def one_step() -> list:
            with ThreadPoolTaskRunner(max_workers=2) as runner:
                reward = CompositeReward(FannedScorer(config, tmp_path, runner=runner))
                return asyncio.run(reward(["p"] * 2, texts, trainer_state=StepState(6)))

        def group_tasks() -> list:
            name = TaskRunFilterName(like_="score-step7-group")
            with get_client(sync_client=True) as client:
                return client.read_task_runs(task_run_filter=TaskRunFilter(name=name))

        with ThreadPoolExecutor(max_workers=1) as pool:
            with concurrency(JUDGE_LIMIT, occupy=1, strict=True):  # the one slot, held by another run
                step = pool.submit(one_step)
                _, waiting = wait([step], timeout=5.0)
                created_while_held = group_tasks()
            try:
                rewards = step.result(timeout=300)
            finally:
                close_engine_thread()
    assert waiting == {step} and created_while_held == []
    assert len(rewards) == 2 and all(reward is not None for reward in rewards)
    assert [run.state.type.value for run in group_tasks()] == ["COMPLETED"]
    with get_client(sync_client=True) as client:
        assert client.read_global_concurrency_limit_by_name(JUDGE_LIMIT).active_slots == 0
