"""The scoring engine: completions in, `RewardParts` out, with every reward rule applied once.

It owns what scoring needs (the browser pool, or a lent one; the clients of the service terms; the run's content
cache; the dead-letter log) and applies the rules every consumer shares:

- the gate first: a refused sketch scores 0.0 and no service is asked about it;
- a term whose weight is 0 is never built or called (`rewards.scoring.terms` says which terms there are);
- infrastructure that still fails after its retries gives the rollout a dead letter and a reward of None;
- the weighted sum, in `compose` and nowhere else;
- the step a rollout is numbered with is the caller's `step` (see `records.rollout_step`), for every record.

It runs on the caller's event loop: clients are built on the running loop at `start` (or the first `score`) and rebuilt
if the loop changes, since Playwright and httpx clients are bound to the loop that made them. `start` and `aclose` are
idempotent. It is the in-process `Scorer` behind the TRL reward (`rewards.scoring.composite`); the Prefect fan-out
reaches it through `rewards.scoring.engine_thread` (a loop of its own) and the OpenEnv server through its
environment; `watercolour score`, evaluation and the pool refresh call it directly. Renders and service answers go through the content cache: a repeated or resumed batch costs nothing twice, and
identical completions in one batch are rendered once. `prefetch` fills that cache for one completion before its batch
is scored (early scoring, `watercolour.policy.early_scoring`), and `score` joins a prefetch's service call that is
still in flight instead of asking the service twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

from ground.records import DeadLetter, GateVerdict, RewardParts, TermScore
from ground.settings import ScoringSettings
from rewards.errors import ServiceUnavailable
from rewards.scoring.cache import CachedRenderer, ContentCache, ContentKey
from rewards.scoring.dead_letters import DeadLetterLog, dead_letter
from rewards.scoring.terms import resolve_terms, reward_terms, sketch_terms
from rewards.term import Admitted, RewardTerm


if TYPE_CHECKING:
    from rewards.gate import Renderer


# The browser pool retries a render its renderer broke under, and raises RendererUnavailable only when it could not make
# itself whole (a launch failed): one more attempt gives a passing shortage (memory, say) a second chance.
RENDER_ATTEMPTS = 2

# A rollout waiting for a service term's answer: its parts, its picture and the answer's cache key.
Pending = tuple[RewardParts, Admitted, ContentKey]


def compose(parts: RewardParts, weights: Mapping[str, float]) -> float | None:
    """The reward of one rollout from its parts: the only place the terms are weighted and added.

    The terms are added in registry order (gate, length, aesthetic, judge, ...): a float sum depends on its order.
    """
    if parts.dead_letter is not None:
        return None
    if not parts.terms.get("gate"):
        return 0.0
    reward = 0.0
    for term in reward_terms().values():
        weight = weights.get(term.name, 0.0)
        if weight <= 0:  # never built, never measured: adds nothing
            continue
        value = parts.terms.get(term.name)
        assert value is not None, f"an admitted rollout with no {term.name} score must have a dead letter"
        reward += weight * value
    return reward


def renderer_id() -> str:
    """What a render depends on besides the sketch, seed and size: the exact library versions (SES decides what a
    sketch can reach, so a render cached before it is not the same verdict)."""
    from renderers.assets import LIBRARIES, library

    return "+".join(f"{name}@{library(name)[0]}" for name in LIBRARIES)


@dataclass
class _Clients:
    """Everything bound to one event loop: the browser pool and the service terms' clients."""

    renderer: CachedRenderer
    owned_browsers: Any
    services: dict[str, Any]
    # The service calls in flight, a prefetch's or a score's, by term name and cache key: a score that needs one of
    # their answers joins the call, a prefetch leaves it be.
    in_flight: dict[tuple[str, ContentKey], asyncio.Future[TermScore]] = field(default_factory=dict)


class ScoringEngine:
    """Scores batches (`score`) or one painting (`score_one`) under one run's scoring settings, into one directory.

    `settings` is the run configuration's scoring half (`RunConfig.scoring`). `browsers` lends a started renderer (the
    caller closes it); without one the engine starts a BrowserPool from `settings.render`. `clients` overrides how a
    service term's client is built (term name -> factory taking what its `build` takes: the term's settings and the
    `ScoringSettings`); tests pass counting wrappers of the real clients. Picklable: live clients stay out of the pickle.
    """

    def __init__(
        self,
        settings: ScoringSettings,
        run_dir: Path,
        *,
        browsers: Renderer | None = None,
        clients: Mapping[str, Any] | None = None,
    ) -> None:
        settings = resolve_terms(settings)
        self.settings = settings
        self.run_dir = Path(run_dir)
        self.weights: dict[str, float] = settings.weights.model_dump()
        self.cache = ContentCache(self.run_dir / "cache")
        self.dead_letters = DeadLetterLog(self.run_dir)
        self.factories = dict(clients or {})
        self._lent_browsers = browsers
        self._clients: _Clients | None = None
        self._starting: asyncio.Task[_Clients] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_lent_browsers": None, "_clients": None, "_starting": None}

    def measured_terms(self) -> list[RewardTerm]:
        """The service terms this configuration pays for: the only ones whose clients are built."""
        return [term for term in reward_terms().values() if term.is_service and self.weights.get(term.name, 0.0) > 0]

    def _factory(self, term: RewardTerm) -> Any:
        factory = self.factories.get(term.name, term.build)
        assert factory is not None, "a service term has a build"
        return factory

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Build the browser pool and the clients on the running loop; again only if the loop changed."""
        loop = asyncio.get_running_loop()
        if self._starting is None or self._starting.get_loop() is not loop:
            # Clients of a previous loop cannot be closed from this one; they are dropped with it.
            self._starting = loop.create_task(self._start())
        try:
            self._clients = await self._starting
        except BaseException:
            self._starting = None
            raise

    async def _start(self) -> _Clients:
        # Service clients first: they fail fast on a bad setting (an empty pool, say) before a browser starts.
        services = {
            term.name: self._factory(term)(term.settings_of(self.settings), self.settings)
            for term in self.measured_terms()
        }
        browsers, owned = self._lent_browsers, None
        if browsers is None:
            from renderers import BrowserPool

            owned = browsers = BrowserPool.from_settings(self.settings.render)
            await owned.start()
        renderer = CachedRenderer(browsers, self.cache, self.settings.render.size, renderer_id())
        return _Clients(renderer, owned, services)

    async def aclose(self) -> None:
        clients, self._clients, self._starting = self._clients, None, None
        if clients is None:
            return
        for client in clients.services.values():
            await client.aclose()
        if clients.owned_browsers is not None:
            await clients.owned_browsers.close()

    @property
    def renderer(self) -> CachedRenderer:
        """The started engine's cached renderer (its `renders` and `hits` say what the cache saved)."""
        assert self._clients is not None, "start the engine first"
        return self._clients.renderer

    def backends(self) -> dict[str, str]:
        """Backend ids of every term, by name; a service term at weight 0 is named as off."""
        assert self._clients is not None, "start the engine first"
        backends = {"renderer": self._clients.renderer.renderer_id}
        for term in reward_terms().values():
            if term.is_service:
                client = self._clients.services.get(term.name)
                backends[term.name] = client.backend_id if client is not None else "off (weight 0)"
        return backends

    # ------------------------------------------------------------------ scoring

    async def score(
        self,
        completions: Sequence[str],
        seeds: Sequence[int],
        step: int | None,
        subjects: Sequence[str | None] | None = None,
    ) -> list[RewardParts]:
        """Parts (with their reward) of each completion; `seeds` are the group seeds (one per completion), `subjects`
        what each was asked to paint (default, and for a None: the run's `training.subject`)."""
        if len(completions) != len(seeds):
            raise ValueError(f"{len(completions)} completions but {len(seeds)} group seeds: give one seed each")
        if subjects is None:
            subjects = [None] * len(completions)
        subjects = [self.settings.subject if subject is None else subject for subject in subjects]
        if len(subjects) != len(completions):
            raise ValueError(f"{len(completions)} completions but {len(subjects)} subjects: give one subject each")
        await self.start()
        clients = self._clients
        assert clients is not None
        backends = self.backends()
        parts = [self._blank(backends) for _ in completions]
        await asyncio.gather(
            *(self._admit(clients, text, part, step) for text, part in zip(completions, parts, strict=True))
        )
        admitted = [
            (part, _admitted(part.verdict, seed, subject))
            for part, seed, subject in zip(parts, seeds, subjects, strict=True)
            if part.passed
        ]
        await asyncio.gather(*(self._measure(clients, term, admitted, step) for term in self.measured_terms()))
        for part in parts:
            part.reward = compose(part, self.weights)
        return parts

    async def score_one(
        self, completion: str, seed: int = 0, step: int | None = None, subject: str | None = None
    ) -> RewardParts:
        """One painting's parts: a batch of one."""
        (parts,) = await self.score([completion], [seed], step, [subject] if subject is not None else None)
        return parts

    async def prefetch(
        self, completion: str, *, seed: int | None = None, step: int | None = None, subject: str | None = None
    ) -> None:
        """Gate and render `completion` into the cache ahead of its `score` (`watercolour.policy.early_scoring`); given
        the group `seed` its batch will be scored with, also answer its service terms into the cache.

        `subject` is what it was asked to paint (default: the run's `training.subject`, as in `score`); `step` is not
        needed, since a prefetch records nothing (the `rewards.scoring.composite.Scorer` interface has it). A term is
        answered ahead only when its cache key does not depend on the batch: the judge's group mode ranks a painting
        among its groupmates, which only `score` sees. A `score` that needs an answer still in flight here joins it.
        Records nothing: a failure here is left for `score` to meet again, with its retries and dead letter.
        """
        from renderers import RendererUnavailable
        from rewards.gate import gate

        await self.start()
        clients = self._clients
        assert clients is not None
        try:
            verdict = await gate(completion, clients.renderer, self.settings.render.seed, self.settings.gate)
        except RendererUnavailable:
            return
        if seed is None or not verdict.passed:
            return
        rollout = _admitted(verdict, seed, self.settings.subject if subject is None else subject)
        await asyncio.gather(*(self._answer_ahead(clients, term, rollout) for term in self.measured_terms()))

    async def _answer_ahead(self, clients: _Clients, term: RewardTerm, rollout: Admitted) -> None:
        """One rollout's answer of `term` into the cache, unless it is there, in flight, or depends on the batch."""
        client = clients.services[term.name]
        context = term.cache_context(client, rollout, [rollout])
        if context != term.cache_context(client, rollout, []):
            return
        key = self._key(rollout, client.backend_id, context)
        flight = (term.name, key)
        if flight in clients.in_flight or self.cache.load(f"terms/{term.name}", key, TermScore) is not None:
            return
        call = asyncio.ensure_future(self._answer_into_cache(term, client, rollout, key))
        _register(clients, flight, call)
        try:
            # Shielded: cancelling this prefetch must not cancel a call that a `score` may have joined.
            await asyncio.shield(call)
        except ServiceUnavailable:
            return

    async def _answer_into_cache(self, term: RewardTerm, client: Any, rollout: Admitted, key: ContentKey) -> TermScore:
        (score,) = await self._answers(term, client, [rollout])
        self.cache.store(f"terms/{term.name}", key, score)
        return score

    def _blank(self, backends: dict[str, str]) -> RewardParts:
        terms = {term.name: (0.0 if not term.is_service else None) for term in reward_terms().values()}
        return RewardParts(reward=None, terms=terms, weights=dict(self.weights), backends=backends)

    def _fail(self, part: RewardParts, letter: DeadLetter) -> None:
        self.dead_letters.append(letter)
        if part.dead_letter is None:
            part.dead_letter = letter

    async def _admit(self, clients: _Clients, text: str, part: RewardParts, step: int | None) -> None:
        from renderers import RendererUnavailable
        from rewards.gate import checked, rendered

        started = time.perf_counter()
        settings = self.settings
        static = await checked(text, settings.gate)  # once: a retried render reads the same sketch
        for attempt in range(1, RENDER_ATTEMPTS + 1):
            try:
                verdict = await rendered(static, clients.renderer, settings.render.seed, settings.gate)
                break
            except RendererUnavailable as error:
                if attempt == RENDER_ATTEMPTS:
                    self._fail(part, dead_letter("render", error, static.sketch_hash, step, attempts=attempt))
                    return
        part.timings_ms["gate"] = _ms(started)
        part.verdict = verdict
        part.terms.update(sketch_terms(verdict))

    async def _measure(
        self, clients: _Clients, term: RewardTerm, admitted: list[tuple[RewardParts, Admitted]], step: int | None
    ) -> None:
        """Answer `term` for every admitted rollout: from the cache, from a prefetch's call still in flight, else in
        one call (batched) or one each."""
        client = clients.services[term.name]
        todo: list[Pending] = []
        joins = []
        batch = [rollout for _, rollout in admitted]
        for part, rollout in admitted:
            key = self._key(rollout, client.backend_id, term.cache_context(client, rollout, batch))
            cached = self.cache.load(f"terms/{term.name}", key, TermScore)
            flight = clients.in_flight.get((term.name, key))
            if cached is not None:
                _keep(term, part, cached, 0.0)
            elif flight is not None:
                joins.append(self._join(term, client, (part, rollout, key), flight, step))
            else:
                todo.append((part, rollout, key))
        calls = [todo] if term.is_batched(client) and todo else [[item] for item in todo]
        # Registered before anything awaits, so a prefetch of the same answer that starts meanwhile waits for these.
        answers = [self._announce(clients, term, call) for call in calls]
        await asyncio.gather(
            *(self._call(term, client, call, step, futures) for call, futures in zip(calls, answers, strict=True)),
            *joins,
        )

    def _announce(self, clients: _Clients, term: RewardTerm, call: list[Pending]) -> list[asyncio.Future[TermScore]]:
        """Register the answers `call` will give as in flight; `_call` settles them."""
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[TermScore]] = []
        for _, _, key in call:
            future: asyncio.Future[TermScore] = loop.create_future()
            _register(clients, (term.name, key), future)
            futures.append(future)
        return futures

    async def _join(
        self, term: RewardTerm, client: Any, item: Pending, flight: asyncio.Future[TermScore], step: int | None
    ) -> None:
        """Wait for a prefetch's call of this answer; if it failed, make this score's own call (it records)."""
        started = time.perf_counter()
        try:
            score = await asyncio.shield(flight)
        except ServiceUnavailable:
            await self._call(term, client, [item], step)
            return
        _keep(term, item[0], score, _ms(started))

    async def _call(
        self,
        term: RewardTerm,
        client: Any,
        call: list[Pending],
        step: int | None,
        futures: Sequence[asyncio.Future[TermScore]] = (),
    ) -> None:
        """One call of `term` for `call`'s rollouts, recording a dead letter for each when it fails; `futures` (from
        `_announce`) are settled with the answers, so whoever joined them gets the same."""
        started = time.perf_counter()
        try:
            scores = await self._answers(term, client, [rollout for _, rollout, _ in call])
        except ServiceUnavailable as error:
            for part, _, key in call:
                self._fail(part, dead_letter(term.name, error, key.sketch_hash, step))
            for future in futures:
                future.set_exception(error)
            return
        except BaseException:  # cancelled: whoever joined makes its own call
            for future in futures:
                future.set_exception(ServiceUnavailable(term.name, "the call was cancelled"))
            raise
        for (part, _, key), score in zip(call, scores, strict=True):
            self.cache.store(f"terms/{term.name}", key, score)
            _keep(term, part, score, _ms(started))
        for future, score in zip(futures, scores, strict=False):  # none for a joiner's own call
            future.set_result(score)

    async def _answers(self, term: RewardTerm, client: Any, rollouts: list[Admitted]) -> list[TermScore]:
        """One call of `term` for `rollouts`; raises ServiceUnavailable when the backend did not answer each one."""
        assert term.measure is not None
        scores = await term.measure(client, rollouts)
        if len(scores) != len(rollouts):
            raise ServiceUnavailable(term.name, f"malformed: {len(scores)} scores for {len(rollouts)} paintings")
        return scores

    def _key(self, rollout: Admitted, backend: str, extra: str) -> ContentKey:
        render = self.settings.render
        return ContentKey(rollout.sketch_hash, render.seed, render.size, backend, extra)


def _register(clients: _Clients, flight: tuple[str, ContentKey], call: asyncio.Future[TermScore]) -> None:
    """List `call` as in flight under `flight` until it is done."""
    clients.in_flight[flight] = call

    def done(finished: asyncio.Future[TermScore]) -> None:
        if clients.in_flight.get(flight) is finished:
            del clients.in_flight[flight]
        if not finished.cancelled():
            finished.exception()  # a failure is met by whoever needs the answer; do not report it as lost

    call.add_done_callback(done)


def log_means(log_metric: Any, parts: list[RewardParts]) -> None:
    """Batch means of every term through TRL's `log_metric`; a term measured for no rollout is left out."""
    for name in reward_terms():
        values = [value for part in parts if (value := part.term(name)) is not None]
        if values:
            log_metric(f"reward/{name}", fmean(values))
    log_metric("dead_letters", float(sum(part.dead_letter is not None for part in parts)))


def _admitted(verdict: GateVerdict | None, seed: int, subject: str | None) -> Admitted:
    """The admitted rollout's picture; the gate admits nothing it did not render."""
    assert verdict is not None and verdict.render is not None and verdict.render.png is not None
    assert verdict.sketch is not None and verdict.sketch_hash is not None
    return Admitted(
        png=verdict.render.png,
        sketch=verdict.sketch,
        sketch_hash=verdict.sketch_hash,
        group_seed=seed,
        subject=subject,
    )


def _keep(term: RewardTerm, part: RewardParts, score: TermScore, ms: float) -> None:
    part.terms[term.name] = score.value
    part.details[term.name] = score.detail
    part.timings_ms[term.name] = ms


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)
