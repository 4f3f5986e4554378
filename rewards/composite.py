"""The one reward function TRL sees: gate, then a weighted sum of length, aesthetic and judge, or None.

TRL drops a rollout from its group only when EVERY reward function returns None for it, so the terms are not
separate reward functions: one composite returns None when infrastructure failed after its retries (and writes
a dead letter saying why), 0.0 when the sketch failed the gate, and otherwise

    weights.gate + weights.length * L + weights.aesthetic * A + weights.judge * J

composed in `compose` and nowhere else. A term whose weight is 0 is never measured, so its service is never
built or called; turning one off leaves the other alone. Every part of every rollout is reported as
`RewardParts` to the `on_scored` hook (the rollout store) and, as means, to TRL's `log_metric`.

Renders, aesthetic scores and judge verdicts go through the run's content cache: a resumed or repeated batch
costs no render and no remote call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any, cast

from renderers import BrowserPool, RendererUnavailable
from renderers.assets import library
from rewards.aesthetic import AestheticScorer, AestheticSettings, make_scorer
from rewards.cache import CachedRenderer, ContentCache, ContentKey, Renderer
from rewards.dead_letters import DeadLetterLog, dead_letter
from rewards.errors import ServiceUnavailable
from rewards.gate import gate, static_check
from rewards.judge import Judge, JudgeSettings, make_judge
from rewards.length import completion_text, length_score
from watercolour.config import RunConfig, Weights
from watercolour.records import AestheticScore, DeadLetter, JudgeVerdict, RewardParts
from watercolour.reference_pool import Reference, load_pool


# The pool relaunches a browser that died under a render, so one more attempt usually lands on a fresh one.
RENDER_ATTEMPTS = 2

OnScored = Callable[[list[Any], list[Any], list[RewardParts], dict[str, Any]], None]
ScorerFactory = Callable[[AestheticSettings], AestheticScorer]
JudgeFactory = Callable[[JudgeSettings, list[Reference]], Judge]


def compose(parts: RewardParts, weights: Weights) -> float | None:
    """The reward of one rollout from its parts: the only place the terms are weighted and added."""
    if parts.dead_letter is not None:
        return None
    if not parts.gate:
        return 0.0
    reward = weights.gate + weights.length * parts.length
    if weights.aesthetic > 0:
        assert parts.aesthetic is not None, "an admitted rollout with no aesthetic score must have a dead letter"
        reward += weights.aesthetic * parts.aesthetic
    if weights.judge > 0:
        assert parts.judge is not None, "an admitted rollout with no judge score must have a dead letter"
        reward += weights.judge * parts.judge
    return reward


def group_seed(prompt: Any, step: int | None) -> int:
    """One seed per (prompt, step): every rollout of a GRPO group faces the same judge references."""
    digest = hashlib.sha256(json.dumps([step, prompt], sort_keys=True, default=str).encode()).hexdigest()
    return int(digest[:8], 16)


def renderer_id() -> str:
    """What a render depends on besides the sketch, seed and size: the exact library versions."""
    return f"p5@{library('p5')[0]}+p5.brush@{library('p5.brush')[0]}"


@dataclass
class _Clients:
    """Everything bound to one event loop: the render pool and the service clients."""

    renderer: CachedRenderer
    owned_pool: BrowserPool | None
    scorer: AestheticScorer | None
    judge: Judge | None


class CompositeReward:
    """TRL reward function: `await reward(prompts, completions, **kwargs) -> list[float | None]`.

    Picklable: clients are built lazily on the running loop at the first call (and again if the loop changes)
    and are left out of the pickle. `pool` lends a started BrowserPool (the caller closes it); without one the
    reward starts its own from `config.render`. The factories build the service clients; tests pass their own.
    """

    __name__ = "watercolour_reward"

    def __init__(
        self,
        config: RunConfig,
        run_dir: Path,
        on_scored: OnScored | None = None,
        *,
        pool: Renderer | None = None,
        scorer_factory: ScorerFactory = make_scorer,
        judge_factory: JudgeFactory = make_judge,
    ) -> None:
        self.config = config
        self.run_dir = Path(run_dir)
        self.on_scored = on_scored
        self.scorer_factory = scorer_factory
        self.judge_factory = judge_factory
        self.cache = ContentCache(self.run_dir / "cache")
        self.dead_letters = DeadLetterLog(self.run_dir)
        self._lent_pool = pool
        self._clients: _Clients | None = None
        self._starting: asyncio.Task[_Clients] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_lent_pool": None, "_clients": None, "_starting": None}

    # ------------------------------------------------------------------ clients

    async def clients(self) -> _Clients:
        loop = asyncio.get_running_loop()
        if self._starting is None or self._starting.get_loop() is not loop:
            # Clients of a previous loop cannot be closed from this one; they are dropped with it.
            self._starting = loop.create_task(self._start())
        try:
            self._clients = await self._starting
        except BaseException:
            self._starting = None
            raise
        return self._clients

    async def _start(self) -> _Clients:
        weights, settings = self.config.weights, self.config.render
        # Service clients first: they fail fast on a bad setting (an empty pool, say) before a browser starts.
        scorer = self.scorer_factory(self.config.aesthetic) if weights.aesthetic > 0 else None
        # The judge's backend id covers the pool's content and the draw settings, so its cache keys do too.
        judge = self.judge_factory(self.config.judge, load_pool(self.config.pool_dir)) if weights.judge > 0 else None
        pool, owned = self._lent_pool, None
        if pool is None:
            owned = pool = BrowserPool(
                browsers=settings.browsers,
                pages_per_browser=settings.pages_per_browser,
                deadline_s=settings.deadline_s,
            )
            await pool.start()
        renderer = CachedRenderer(pool, self.cache, settings.size, renderer_id())
        return _Clients(renderer, owned, scorer, judge)

    async def aclose(self) -> None:
        clients, self._clients, self._starting = self._clients, None, None
        if clients is None:
            return
        if clients.scorer is not None:
            await clients.scorer.aclose()
        if clients.judge is not None:
            await clients.judge.aclose()
        if clients.owned_pool is not None:
            await clients.owned_pool.close()

    # ------------------------------------------------------------------ scoring

    async def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        clients = await self.clients()
        state = kwargs.get("trainer_state")
        # TRL's global_step counts finished steps; these rollouts train the next one (the rollout store's numbering).
        step = state.global_step + 1 if state is not None else None
        if step is None and "group_seed" in kwargs:
            seeds = [int(seed) for seed in kwargs["group_seed"]]
        else:
            seeds = [group_seed(prompt, step) for prompt in prompts]
        backends = {
            "renderer": clients.renderer.renderer_id,
            "aesthetic": clients.scorer.backend_id if clients.scorer else "off (weight 0)",
            "judge": clients.judge.backend_id if clients.judge else "off (weight 0)",
        }
        weights = self.config.weights.model_dump()
        parts = [RewardParts(reward=None, weights=weights, backends=backends) for _ in completions]

        await asyncio.gather(
            *(self._admit(clients, completion_text(c), p, step) for c, p in zip(completions, parts, strict=True))
        )
        admitted = [
            (part, seed) for part, seed in zip(parts, seeds, strict=True) if part.gate and part.dead_letter is None
        ]
        await asyncio.gather(
            self._score_aesthetic(clients, [part for part, _ in admitted], step),
            *(self._judge(clients, part, seed, step) for part, seed in admitted),
        )
        for part in parts:
            part.reward = compose(part, self.config.weights)

        if self.on_scored is not None:
            self.on_scored(prompts, completions, parts, kwargs)
        if "log_metric" in kwargs:
            log_means(kwargs["log_metric"], parts)
        return [part.reward for part in parts]

    def _fail(self, part: RewardParts, letter: DeadLetter) -> None:
        self.dead_letters.append(letter)
        if part.dead_letter is None:
            part.dead_letter = letter

    def _key(self, part: RewardParts, backend: str, extra: str = "") -> ContentKey:
        assert part.verdict is not None and part.verdict.sketch_hash is not None
        render = self.config.render
        return ContentKey(part.verdict.sketch_hash, render.seed, render.size, backend, extra)

    async def _admit(self, clients: _Clients, text: str, part: RewardParts, step: int | None) -> None:
        started = time.perf_counter()
        for attempt in range(1, RENDER_ATTEMPTS + 1):
            try:
                # The gate only calls `render`; the cached renderer stands in for the pool it is typed with.
                renderer = cast(BrowserPool, clients.renderer)
                verdict = await gate(text, renderer, seed=self.config.render.seed, settings=self.config.gate)
                break
            except RendererUnavailable as error:
                if attempt == RENDER_ATTEMPTS:
                    sketch = static_check(text, settings=self.config.gate).sketch_hash
                    self._fail(part, dead_letter("render", error, sketch, step, attempts=attempt))
                    return
        part.timings_ms["gate"] = _ms(started)
        part.verdict = verdict
        part.gate = float(verdict.passed)
        part.length = length_score(verdict.sketch)

    async def _score_aesthetic(self, clients: _Clients, parts: list[RewardParts], step: int | None) -> None:
        if clients.scorer is None or not parts:
            return
        todo = []
        for part in parts:
            key = self._key(part, clients.scorer.backend_id)
            cached = self.cache.load("aesthetic", key, AestheticScore)
            if cached is None:
                todo.append((part, key))
            else:
                part.aesthetic, part.aesthetic_score, part.timings_ms["aesthetic"] = cached.score, cached, 0.0
        if not todo:
            return
        started = time.perf_counter()
        try:
            scores = await clients.scorer.score([_png(part) for part, _ in todo])
            if len(scores) != len(todo):
                raise ServiceUnavailable("aesthetic", f"malformed: {len(scores)} scores for {len(todo)} images")
        except ServiceUnavailable as error:
            for part, key in todo:
                self._fail(part, dead_letter("aesthetic", error, key.sketch_hash, step))
            return
        for (part, key), score in zip(todo, scores, strict=True):
            self.cache.store("aesthetic", key, score)
            part.aesthetic, part.aesthetic_score, part.timings_ms["aesthetic"] = score.score, score, _ms(started)

    async def _judge(self, clients: _Clients, part: RewardParts, seed: int, step: int | None) -> None:
        if clients.judge is None:
            return
        key = self._key(part, clients.judge.backend_id, f"group_seed={seed}")
        started = time.perf_counter()
        verdict = self.cache.load("judge", key, JudgeVerdict)
        if verdict is None:
            try:
                verdict = await clients.judge.judge(_png(part), seed)
                if verdict.score is None:
                    raise ServiceUnavailable("judge", "malformed: no comparison resolved in either order")
            except ServiceUnavailable as error:
                self._fail(part, dead_letter("judge", error, key.sketch_hash, step))
                return
            self.cache.store("judge", key, verdict)
        part.judge_verdict, part.judge = verdict, verdict.score
        part.timings_ms["judge"] = _ms(started)


def log_means(log_metric: Callable[[str, float], None], parts: list[RewardParts]) -> None:
    """Batch means of the parts, through TRL's `log_metric`; unmeasured parts are left out of their mean."""
    log_metric("reward/gate", fmean(part.gate for part in parts))
    log_metric("reward/length", fmean(part.length for part in parts))
    for name in ("aesthetic", "judge"):
        values = [value for part in parts if (value := getattr(part, name)) is not None]
        if values:
            log_metric(f"reward/{name}", fmean(values))
    log_metric("dead_letters", float(sum(part.dead_letter is not None for part in parts)))


def _png(part: RewardParts) -> bytes:
    """The admitted rollout's picture; the gate admits nothing it did not render."""
    assert part.verdict is not None and part.verdict.render is not None and part.verdict.render.png is not None
    return part.verdict.render.png


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)
