"""Service clients with a count of their calls, for tests that say how often the scorer and the judge were asked
(the scorer and judge protocols are two methods), and the completion a policy writes around a sketch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ground.records import AestheticScore, JudgeVerdict


@dataclass
class StepState:
    """The one attribute of TRL's TrainerState the reward reads (importing transformers costs ~30 s here)."""

    global_step: int


class Counted:
    """A real scorer or judge, with a count of its calls and the group seeds it was asked for."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.backend_id = inner.backend_id
        self.calls = 0
        self.seeds: list[int] = []
        self.subjects: list[Any] = []

    async def score(self, pngs: list[bytes], subjects: list[str | None] | None = None) -> list[AestheticScore]:
        self.calls += 1
        self.subjects.append(subjects)
        return await self.inner.score(pngs, subjects)

    async def judge(self, png: bytes, group_seed: int, subject: str | None = None) -> JudgeVerdict:
        self.calls += 1
        self.seeds.append(group_seed)
        self.subjects.append(subject)
        return await self.inner.judge(png, group_seed, subject)

    async def aclose(self) -> None:
        await self.inner.aclose()


class CountingFactory:
    """Builds the real client the settings name, wrapped in `Counted`; picklable, like the reward that holds it."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.built: list[Counted] = []

    def __call__(self, *args: Any) -> Counted:
        self.built.append(Counted(self.make(*args)))
        return self.built[-1]

    @property
    def calls(self) -> int:
        return sum(client.calls for client in self.built)


def fenced(source: str) -> str:
    return f"Here is my painting.\n```javascript\n{source}\n```\n"
