"""Wire types: everything that crosses a process, task or HTTP boundary is defined here, once."""

from __future__ import annotations

import hashlib
import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


# A lone surrogate: a sketch writes one as an ASCII escape ("\\ud800") in an error or an argument, Chromium hands it
# over as such, and no UTF-8 encoder takes it (the rollout store's JSON raised). A pair never reaches Python split.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` as valid UTF-8 can carry it: every lone surrogate replaced by U+FFFD."""
    return _LONE_SURROGATE.sub("\ufffd", text)


# Strings a sketch wrote or provoked: whoever builds a record with them, it serialises.
SketchText = Annotated[str, AfterValidator(valid_text)]


def sketch_hash(source: str) -> str:
    """Content address of a sketch: the cache key's first part and the rollout store's join key."""
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class RenderResult(BaseModel):
    """What one render of one sketch produced. Sketch faults live here; infrastructure faults raise."""

    ok: bool = Field(description="A canvas was created and read back.")
    png: bytes | None = Field(default=None, description="The WEBGL canvas as PNG bytes.", repr=False)
    width: int = 0
    height: int = 0
    seed: int = 0
    coverage: float | None = Field(default=None, description="Share of pixels that differ from the paper colour.")
    finished: bool = Field(default=False, description="setup (and one draw, if any) completed before the deadline.")
    timed_out: bool = Field(default=False, description="The hard deadline killed the page.")
    crashed: bool = Field(default=False, description="The page crashed (for example it hit the heap cap).")
    errors: list[SketchText] = Field(default_factory=list, description="Console errors, uncaught errors, rejections.")
    blocked_requests: list[SketchText] = Field(
        default_factory=list, description="Network requests the page attempted."
    )
    render_ms: float = Field(default=0.0, description="Wall time from submit to PNG, queueing excluded.")
    draw_ms: float | None = Field(default=None, description="In-page time from sketch start to last frame.")
    fault: str | None = Field(
        default=None,
        description="A fault the sketch caused in the render path: 'navigation' (it left its frame), 'readback' "
        "(its picture could not be read), 'oversize' (its canvas exceeds the requested size), 'harness' (it broke "
        "the harness otherwise). A gate failure, never an infrastructure fault.",
    )
    fault_detail: SketchText = Field(default="", description="What the fault was, for people.")

    def summary(self) -> dict:
        """Everything but the PNG bytes, for JSON lines and logs."""
        return self.model_dump(exclude={"png"})


# The gate's violation codes: each code's string (what records and JSON carry), the stages that find it and the
# words the policy is told when its sketch is refused. The gate (`rewards.gate`) reports them, the observation
# (`episodes.observation`) words them, and the table in `rewards/gate.py`'s docstring says when each is raised; a test
# holds the three to this one list.
class Stage(StrEnum):
    """Where a violation is found: in the parse tree, while the page runs, or in the finished picture."""

    STATIC = "static"
    RENDER = "render"
    PICTURE = "picture"


STATIC, RENDER, PICTURE = (Stage.STATIC,), (Stage.RENDER,), (Stage.PICTURE,)


class ViolationCode(StrEnum):
    """A reason the gate refuses a sketch. A member is its code's string, so verdicts serialise as before."""

    stages: tuple[Stage, ...]
    wording: str

    def __new__(cls, code: str, stages: tuple[Stage, ...], wording: str) -> ViolationCode:
        member = str.__new__(cls, code)
        member._value_ = code
        member.stages = stages
        member.wording = wording
        return member

    @classmethod
    def of(cls, code: str) -> ViolationCode:
        """The member of a code as a verdict carries it; a code outside this list is an error, never spelled out."""
        for member in cls:
            if member == code:
                return member
        raise ValueError(f"{code!r} is not a violation code: ground/records.py lists every one")

    NO_SKETCH = "no_sketch", STATIC, "no sketch was found: reply with a sketch that defines setup and draw"
    OVERSIZE_SOURCE = "oversize_source", STATIC, "the sketch is too long"
    SYNTAX_ERROR = "syntax_error", STATIC, "the JavaScript does not parse"
    TRUNCATED = (
        "truncated",
        STATIC,
        "the sketch was cut off before its end (an unfinished block, call or string): write a shorter one",
    )
    MISSING_ENTRY_POINTS = "missing_entry_points", STATIC, "setup is not defined as a top-level function"
    NOT_WEBGL = (
        "not_webgl",
        (Stage.STATIC, Stage.RENDER),
        "the canvas is not created with createCanvas(600, 600, WEBGL)",
    )
    CANVAS_SIZE = (
        "canvas_size",
        (Stage.STATIC, Stage.RENDER),
        "the canvas is not 600 by 600: call createCanvas(600, 600, WEBGL)",
    )
    METHOD_OUTSIDE_ALLOWLIST = (
        "method_outside_allowlist",
        STATIC,
        "these brush methods do not exist (only the ten listed may be used)",
    )
    BRUSH_ARGUMENTS = (
        "brush_arguments",
        (Stage.STATIC, Stage.RENDER),
        "a brush method was called with other arguments than the prompt lists for it",
    )
    BARE_PRIMITIVES = "bare_primitives", STATIC, "plain p5 drawing was called without brush. in front"
    TEXT_DRAWING = "text_drawing", STATIC, "text was drawn on the canvas"
    EXTERNAL_ACCESS = "external_access", STATIC, "the sketch loads files, uses the network or the page"
    COMPUTED_ACCESS = "computed_access", STATIC, "the sketch reaches into objects that are not its own"
    NAME_OUTSIDE_ALLOWLIST = "name_outside_allowlist", STATIC, "these names are not allowed"
    GLOBAL_WRITE = "global_write", STATIC, "the sketch assigns to a global name it did not declare"
    AMBIGUOUS_SOURCE = (
        "ambiguous_source",
        STATIC,
        "the source holds characters or comments a browser may read otherwise",
    )
    NO_PAINTING_CALLS = (
        "no_painting_calls",
        STATIC,
        "nothing is painted: call brush.endShape(true) after a shape, or brush.circle",
    )
    RENDER_TIMEOUT = "render_timeout", RENDER, "the sketch ran too long and was stopped"
    RENDER_CRASHED = "render_crashed", RENDER, "the page crashed while painting (too much work or memory)"
    NO_CANVAS = "no_canvas", RENDER, "no canvas was made"
    NAVIGATION = "navigation", RENDER, "the sketch left its page"
    READBACK_FAILED = "readback_failed", RENDER, "the picture could not be read from the canvas"
    OVERSIZE_PICTURE = "oversize_picture", RENDER, "the canvas is larger than 600 by 600"
    RENDER_FAULT = "render_fault", RENDER, "the sketch broke the page"
    FLOOD = (
        "flood",
        RENDER,
        "the sketch made more brush calls, errors or messages than a painting needs and was stopped",
    )
    NETWORK_ATTEMPT = "network_attempt", RENDER, "the page tried to use the network"
    RUNTIME_ERROR = "runtime_error", RENDER, "a call threw an error while painting"
    BLANK_CANVAS = "blank_canvas", RENDER, "almost nothing is visible on the canvas"
    DARK_GROUND = "dark_ground", PICTURE, "the paper is dark: paint on a light ground and leave some of it white"
    TEXT_IN_PICTURE = "text_in_picture", PICTURE, "letters or digits were painted into the picture"


class GateVerdict(BaseModel):
    """Admission of one completion: passed, plus machine-readable violation codes and their details."""

    passed: bool
    violations: list[str] = Field(default_factory=list, description="Violation codes, e.g. 'not_webgl'.")
    details: dict[str, list[SketchText]] = Field(
        default_factory=dict, description="Code -> offending names or messages."
    )
    sketch: SketchText | None = Field(
        default=None,
        description="The extracted sketch, None when there was none. One with a lone surrogate is refused "
        "(`ambiguous_source`), so only a refused sketch is ever changed here.",
    )
    sketch_hash: str | None = None
    counts: dict[str, int] = Field(
        default_factory=dict, description="Call sites of beginShape, vertex, circle and fill, for shape metrics."
    )
    render: RenderResult | None = None

    def summary(self) -> dict:
        data = self.model_dump(exclude={"sketch", "render"})
        data["render"] = self.render.summary() if self.render else None
        return data


class AestheticScore(BaseModel):
    """One image's aesthetic score in 0..1, from a named backend."""

    score: float
    raw: float | None = Field(default=None, description="The backend's raw value (HPSv3 mu), for reading only.")
    backend: str
    subject_match: float | None = Field(
        default=None, description="Offline stand-in only: how far the washes show the subject's colours, 0..1."
    )


class Comparison(BaseModel):
    """One reference, judged in both presentation orders."""

    reference: str
    first: str | None = Field(default=None, description="Winner with the rollout shown as A: 'A', 'B' or None.")
    second: str | None = Field(default=None, description="Winner with the rollout shown as B: 'A', 'B' or None.")
    score: float | None = Field(default=None, description="1 won both, 0.5 split, 0 lost both; None unresolved.")
    position_biased: bool = False
    reason: str | None = Field(
        default=None,
        description="The judge's reason with the rollout shown as A (an offline judge's names itself as offline).",
    )


class JudgeVerdict(BaseModel):
    """The pairwise judge's score for one painting: mean over resolved comparisons."""

    score: float | None
    comparisons: list[Comparison] = Field(default_factory=list)
    position_bias_rate: float | None = None
    backend: str
    draw: dict[str, float | None] | None = Field(
        default=None, description="The reference curriculum's draw: recent win rate, wanted and drawn difficulty."
    )


class DeadLetter(BaseModel):
    """Work that failed after its retries: recorded with its cause, and its rollout's reward is None."""

    stage: str = Field(description="render | aesthetic | judge | ...")
    cause: str
    sketch_hash: str | None = None
    attempts: int = 1
    step: int | None = None
    at: float = Field(description="Unix time.")


class TermScore(BaseModel):
    """One service term's answer for one painting: its value in 0..1 and the backend's own answer, for reading."""

    value: float
    detail: dict[str, Any] = Field(default_factory=dict, description="E.g. HPSv3's raw mu, the judge's comparisons.")


class RewardParts(BaseModel):
    """The composite reward of one rollout, with every part, for logs, curves and the rollout store."""

    # A term passed as a field of its own (the layout before terms were registered) is an error, not dropped.
    model_config = ConfigDict(extra="forbid")

    reward: float | None = Field(description="None: could not be measured (infrastructure), never 'bad'.")
    terms: dict[str, float | None] = Field(
        default_factory=dict,
        description="Every registered term by name (rewards.scoring.terms); None: not measured (weight 0, refused, failed).",
    )
    details: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Service terms' answers by term name (raw scores, comparisons)."
    )
    weights: dict[str, float] = Field(default_factory=dict)
    backends: dict[str, str] = Field(default_factory=dict, description="Backend ids, offline ones named as such.")
    verdict: GateVerdict | None = None
    dead_letter: DeadLetter | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)

    def term(self, name: str) -> float | None:
        """One term's value; a term this record does not hold (registered after it was written) is None."""
        return self.terms.get(name)

    @property
    def passed(self) -> bool:
        """Admitted by the gate and measured: the rollouts whose service terms were asked."""
        return self.verdict is not None and self.verdict.passed and self.dead_letter is None


def rollout_step(trainer_state: Any) -> int | None:
    """The step a batch of rollouts is recorded under: TRL's `global_step` counts finished optimizer steps, and
    these rollouts train the next one, so step N's update learns from the rollouts numbered N (like its
    checkpoint and its log line). Every consumer (reward, dead letters, store, artifacts) numbers through here."""
    return None if trainer_state is None or trainer_state.global_step is None else trainer_state.global_step + 1
