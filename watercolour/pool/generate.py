"""Generate pool candidates from several OpenAI-compatible chat models, gate each as it arrives, refine on critique.

Each candidate is a chain: a first draft (optionally shown a licensed reference photo), gated and rendered at once,
then up to `rounds` revisions in which the model sees its sketch, its render and a vision critic's written critique.
Every draft is appended to `candidates.jsonl` the moment its render exists, so rating can start while models are
still writing (the published tool generated everything first and rendered afterwards, so nothing could be rated
until the last model finished).
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ground.prompt import DEFAULT_SUBJECT, SUBJECTS, system_prompt, user_prompt
from ground.settings import RenderSettings
from rewards.errors import ServiceUnavailable
from rewards.gate import Renderer, gate
from rewards.http import BoundClient, post_json
from rewards.judging.openai_judge import message_content
from watercolour.pool.candidates import CANDIDATES, Candidate, append_candidate


# One browser, two pages: a pool build renders a few dozen sketches, and the machine may be training too. Its
# deadline is three times training's 30 s: a build is not latency-bound, and at 30 s a test build on a 2-core box
# under a load of 30 lost every draft to render_timeout (a candidate lost to a timeout is one nobody can rate).
POOL_RENDER = RenderSettings(browsers=1, pages_per_browser=2, deadline_s=90.0)
# The published generator drew from these; the spread gives the rater variety without a per-model tuning pass.
TEMPERATURES = (0.6, 0.9, 1.1)
CRITIC_PROMPT = (
    "You teach watercolour. Below is a p5.brush sketch and the picture it rendered to. In at most 80 words, say "
    "the two or three changes that would most improve it as a loose watercolour (washes, layering, edges, "
    "composition, paper left white). Do not write code."
)
REVISE_PROMPT = (
    "This is what your sketch rendered to, and a teacher's critique of it:\n\n{critique}\n\n"
    "Write the complete revised sketch in a single JavaScript code block, keeping the same rules."
)


class GenerateSettings(BaseModel):
    """Where candidates come from and how many."""

    endpoints: list[str] = Field(description="OpenAI-compatible base URLs; one for all models, or one per model.")
    models: list[str] = Field(min_length=1, description="Model ids, one chain of candidates per model each time.")
    per_model: int = Field(default=15, ge=1, description="First drafts per model.")
    subject: str = Field(default=DEFAULT_SUBJECT, description="What to paint; 'sample' draws from the subjects.")
    subjects: list[str] = Field(
        default_factory=list, description="Subjects taken in turn, one per chain; overrides `subject` when given."
    )
    rounds: int = Field(default=0, ge=0, le=3, description="Critique-and-revise rounds after each first draft.")
    critic_url: str | None = Field(default=None, description="OpenAI-compatible base URL of the vision critic.")
    critic_model: str | None = Field(default=None, description="Model id of the vision critic.")
    token_env: str = Field(default="HF_TOKEN", description="Env var holding the API key, read when clients are built.")
    max_tokens: int = Field(default=2400, ge=64, description="Reply budget of one sketch.")
    timeout_s: float = Field(
        default=180.0, gt=0, description="Read timeout of one call; a stalled call must not hang."
    )
    attempts: int = Field(default=3, ge=1, description="Attempts per call before that chain is given up.")
    backoff_s: float = Field(default=2.0, ge=0, description="Base of the jittered exponential backoff.")
    concurrency: int = Field(default=4, ge=1, description="Calls in flight at once per endpoint.")
    seed: int = 0

    def model_endpoints(self) -> list[tuple[str, str]]:
        if len(self.endpoints) not in (1, len(self.models)):
            raise ValueError(
                f"{len(self.endpoints)} endpoints for {len(self.models)} models: "
                "pass one endpoint for all models, or one per model in the same order"
            )
        urls = self.endpoints * len(self.models) if len(self.endpoints) == 1 else self.endpoints
        return list(zip(self.models, urls, strict=True))


@dataclass(frozen=True)
class Photo:
    file: Path
    attribution: str


def load_photos(folder: Path) -> list[Photo]:
    """Photos listed in `folder/attribution.json` (rows: file, licence, attribution); unlicensed ones are refused."""
    index = folder / "attribution.json"
    if not index.is_file():
        raise FileNotFoundError(f"no attribution.json in {folder}: list each photo's file, licence and attribution")
    photos = []
    for row in json.loads(index.read_text(encoding="utf-8")):
        if not row.get("licence") or not row.get("attribution"):
            raise ValueError(f"photo {row.get('file')} in {index} lacks a licence or attribution: add both")
        photos.append(Photo(folder / row["file"], f"{row['attribution']} ({row['licence']})"))
    return photos


@dataclass(frozen=True)
class Draft:
    """Where one reply came from: what the candidate record says besides the gate's verdict."""

    model: str
    endpoint: str
    subject: str
    temperature: float
    round: int
    parent: str | None
    photo: Photo | None
    critique: str | None


def data_url(data: bytes, suffix: str = ".png") -> str:
    mime = "image/jpeg" if suffix.lower() in (".jpg", ".jpeg") else "image/png"
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def image_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


class Generator:
    """Runs every chain concurrently; chat calls are bounded per endpoint, renders by the renderer's slots."""

    def __init__(self, settings: GenerateSettings, out: Path, renderer: Renderer, photos: list[Photo]) -> None:
        self.settings = settings
        self.out = out
        self.renderer = renderer
        self.photos = photos
        self.clients: dict[str, BoundClient] = {}
        self.failures: list[str] = []
        out.mkdir(parents=True, exist_ok=True)
        existing = out / CANDIDATES
        # Numbering continues after earlier batches, so several runs can share one folder.
        self.next_index = len(existing.read_text().splitlines()) if existing.is_file() else 0

    async def chat(self, base_url: str, body: dict[str, Any], stage: str) -> str:
        s = self.settings
        http = self.clients.setdefault(base_url, BoundClient(s.timeout_s, s.token_env, s.concurrency))
        client, semaphore = http.bind()
        url = base_url.rstrip("/") + "/chat/completions"
        async with semaphore:
            return await post_json(
                client, url, body, message_content, stage=stage, attempts=s.attempts, backoff_s=s.backoff_s
            )

    async def run(self) -> list[Candidate]:
        s = self.settings
        chains = [
            self.chain(model, url, number) for model, url in s.model_endpoints() for number in range(s.per_model)
        ]
        try:
            found = await asyncio.gather(*chains)
        finally:
            await self.aclose()
        return [candidate for chain in found for candidate in chain]

    async def aclose(self) -> None:
        for http in self.clients.values():
            await http.aclose()
        self.clients.clear()

    async def chain(self, model: str, url: str, number: int) -> list[Candidate]:
        """A first draft, then up to `rounds` revisions on the critic's word; a call that still fails ends it."""
        made: list[Candidate] = []
        try:
            candidate, png = await self.first_draft(model, url, number)
            made.append(candidate)
            for _ in range(self.settings.rounds):
                if png is None or not (self.settings.critic_url and self.settings.critic_model):
                    break
                candidate, png = await self.next_round(candidate, png)
                made.append(candidate)
        except ServiceUnavailable as error:
            self.failures.append(str(error))
        return made

    def opening(self, subject: str, photo: Photo | None) -> list[dict[str, Any]]:
        """The system prompt and the first user turn (with the reference photo, when there is one)."""
        prompt: list[dict[str, Any]] = [{"type": "text", "text": user_prompt(subject)}]
        if photo:
            prompt.append(image_part(data_url(photo.file.read_bytes(), photo.file.suffix)))
        return [{"role": "system", "content": system_prompt()}, {"role": "user", "content": prompt}]

    async def first_draft(
        self, model: str, url: str, number: int, name: str | None = None
    ) -> tuple[Candidate, bytes | None]:
        """Chain `number`'s first draft, gated and rendered; raises ServiceUnavailable when the writer fails."""
        s = self.settings
        rng = random.Random(f"{s.seed}:{model}:{number}")
        subject = rng.choice(SUBJECTS) if s.subject == "sample" else s.subject
        if s.subjects:
            subject = s.subjects[number % len(s.subjects)]
        temperature = rng.choice(TEMPERATURES)
        photo = self.photos[number % len(self.photos)] if self.photos else None
        body = {
            "model": model,
            "messages": self.opening(subject, photo),
            "temperature": temperature,
            "max_tokens": s.max_tokens,
        }
        reply = await self.chat(url, body, stage=f"generate {model}")
        return await self.admit(reply, Draft(model, url, subject, temperature, 0, None, photo, None), name)

    async def next_round(
        self, parent: Candidate, png: bytes, name: str | None = None
    ) -> tuple[Candidate, bytes | None]:
        """The critic's word on `parent` and the writer's revision of it.

        The writer sees its opening prompt, its latest sketch, that sketch's render and the critique, not every
        earlier round: the conversation stays one revision long however many rounds run.
        """
        photo = next((p for p in self.photos if p.file.name == parent.photo), None)
        critique = await self.critique(parent, png)
        sketch = (self.out / parent.js).read_text(encoding="utf-8")
        revise = REVISE_PROMPT.format(critique=critique)
        conversation = self.opening(parent.subject, photo) + [
            {"role": "assistant", "content": f"```javascript\n{sketch}\n```"},
            {"role": "user", "content": [{"type": "text", "text": revise}, image_part(data_url(png))]},
        ]
        body = {
            "model": parent.model,
            "messages": conversation,
            "temperature": parent.temperature,
            "max_tokens": self.settings.max_tokens,
        }
        reply = await self.chat(parent.endpoint, body, stage=f"generate {parent.model}")
        draft = Draft(
            parent.model, parent.endpoint, parent.subject, parent.temperature, parent.round + 1, parent.id, photo,
            critique,
        )  # fmt: skip
        return await self.admit(reply, draft, name)

    async def admit(self, reply: str, draft: Draft, name: str | None = None) -> tuple[Candidate, bytes | None]:
        """Gate and render one reply, write its sketch and picture and append its record; numbered on arrival
        unless the caller names it (a flow's tasks name theirs, so a retried task rewrites its own files)."""
        if name is None:
            name = f"cand_{self.next_index:04d}"
            self.next_index += 1
        verdict = await gate(reply, self.renderer)
        (self.out / f"{name}.js").write_text(verdict.sketch or reply, encoding="utf-8")
        render = verdict.render
        png = render.png if render else None
        if png:
            (self.out / f"{name}.png").write_bytes(png)
        candidate = Candidate(
            id=name,
            model=draft.model,
            endpoint=draft.endpoint,
            subject=draft.subject,
            round=draft.round,
            parent=draft.parent,
            photo=draft.photo.file.name if draft.photo else None,
            attribution=draft.photo.attribution if draft.photo else None,
            critique=draft.critique,
            temperature=draft.temperature,
            passed=verdict.passed,
            violations=verdict.violations,
            coverage=render.coverage if render else None,
            js=f"{name}.js",
            png=f"{name}.png" if png else None,
        )
        print(
            f"{name} {draft.model} round {draft.round}: {'passed' if verdict.passed else verdict.violations}",
            flush=True,
        )
        append_candidate(self.out, candidate)
        return candidate, png

    async def critique(self, candidate: Candidate, png: bytes) -> str:
        sketch = (self.out / candidate.js).read_text(encoding="utf-8")
        text = f"{CRITIC_PROMPT}\n\n```javascript\n{sketch}\n```"
        body = {
            "model": self.settings.critic_model,
            "temperature": 0.3,
            "max_tokens": 300,
            "messages": [{"role": "user", "content": [{"type": "text", "text": text}, image_part(data_url(png))]}],
        }
        assert self.settings.critic_url is not None  # chain() only critiques when a critic is configured
        return (await self.chat(self.settings.critic_url, body, stage="critic")).strip()


async def generate(settings: GenerateSettings, out: Path, renderer: Renderer, photos: list[Photo]) -> list[Candidate]:
    """Every chain's candidates, appended to `out/candidates.jsonl` as they were gated."""
    generator = Generator(settings, out, renderer, photos)
    candidates = await generator.run()
    for failure in generator.failures:
        print(f"gave up a chain: {failure}", file=sys.stderr)
    return candidates
