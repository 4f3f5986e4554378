"""What the policy is told about the painting it just made: the observation of one repaint turn.

`observe(parts, turn, turns)` turns the scoring engine's `RewardParts` into an `Observation`, and
`Observation.text()` into the plain words a text-only policy reads: the gate's violations (which method is outside
the allowlist, what was cut off, which call threw), the picture's measured facts (`PictureFacts`: paint coverage,
where the paint sits, how far the painting reaches against the canvas, its palette, how soft its edges are) and,
when the judge was asked, its verdict and the reason it gave. The facts are measured with the same code as the
offline scorer and judge (`renderers.coverage`, `rewards.offline_aesthetic`), so the words and the reward agree.
A VLM policy also gets the rendered PNG (`Observation.png`, see `episodes.painting_env`).
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from PIL import Image
from pydantic import BaseModel, Field

from ground.records import GateVerdict, RewardParts, ViolationCode
from renderers.coverage import paint_mask
from rewards.offline_aesthetic import image_features
from rewards.pixels import ANALYSIS_SIZE


# The canvas is 600 units a side in the prompt's coordinates; facts are given in those units.
CANVAS_UNITS = 600
# Colours of the palette: paint pixels quantised to 3 bits a channel; a bin holding less than this share of the
# paint is a stray edge pixel, not a colour the sketch chose.
PALETTE_MIN_SHARE = 0.05
PALETTE_SIZE = 4
# A gate detail longer than this (a long error message) is cut, so one bad call cannot fill the policy's context.
DETAIL_CHARS = 160
DETAILS_PER_CODE = 4


class PictureFacts(BaseModel):
    """What was measured on the rendered picture; positions and sizes in canvas units (0..600)."""

    coverage: float = Field(description="Share of the canvas that is paint rather than paper (0..1).")
    centre: tuple[int, int] | None = Field(description="Where the paint's mass sits (x, y); None when no paint.")
    extent: tuple[int, int, int, int] | None = Field(
        description="The paint's bounding box (left, top, right, bottom); None when no paint."
    )
    palette: list[str] = Field(description="The main paint colours, most used first, as hex.")
    softness: float = Field(description="Share of edge contrast that is soft, bled wash rather than hard (0..1).")
    tonal_range: float = Field(description="Spread of the paint's tones, 0 one flat tone, 1 every tone (0..1).")


class JudgeNote(BaseModel):
    """The judge's verdict on the painting, and its reason."""

    score: float | None = Field(description="Win share against the references (0..1).")
    wins: int
    comparisons: int
    backend: str
    reason: str = Field(default="", description="Why, in words; an offline judge's reason is named as offline.")


class Observation(BaseModel):
    """One turn's observation: the wire type the environment returns (as text, or text and image)."""

    turn: int = Field(description="Which painting of the episode this is, from 1.")
    turns: int = Field(description="How many paintings the episode allows.")
    passed: bool = Field(description="The gate admitted the sketch.")
    reward: float | None = Field(description="This painting's composite reward; None: could not be measured.")
    problems: list[str] = Field(default_factory=list, description="Gate violations, in plain words.")
    facts: PictureFacts | None = None
    judge: JudgeNote | None = None
    failure: str | None = Field(default=None, description="Infrastructure failure (a dead letter's cause).")
    png: bytes | None = Field(default=None, repr=False, description="The rendered picture, for a VLM policy.")

    def text(self) -> str:
        """The observation in plain words, for a text-only policy."""
        lines = [f"Painting {self.turn} of {self.turns}."]
        if self.failure is not None:
            lines.append(f"The painting could not be scored (our failure, not yours): {self.failure}.")
        elif self.passed:
            lines.append(f"It passed the checks and scored {self.reward:.3f} out of 1.")
        else:
            lines.append("It was refused and scored 0:")
            lines += [f"- {problem}" for problem in self.problems]
        if self.facts is not None:
            lines.append(_facts_text(self.facts))
        if self.judge is not None:
            judge = self.judge
            lines.append(
                f"Judge ({judge.backend}): preferred it in {judge.wins} of {judge.comparisons} comparisons "
                f"with reference paintings. {judge.reason}".rstrip()
            )
        if self.turn < self.turns:
            lines.append("Call paint again with an improved sketch, or stop if you are done.")
        else:
            lines.append("That was the last painting of this episode.")
        return "\n".join(lines)


def observe(parts: RewardParts, turn: int, turns: int) -> Observation:
    """The observation of one scored painting."""
    verdict = parts.verdict
    render = verdict.render if verdict is not None else None
    png = render.png if render is not None else None
    failure = parts.dead_letter.cause if parts.dead_letter is not None else None
    return Observation(
        turn=turn,
        turns=turns,
        passed=parts.passed,
        reward=parts.reward,
        problems=problems(verdict) if verdict is not None and not verdict.passed else [],
        facts=picture_facts(png) if png is not None else None,
        judge=judge_note(parts.details.get("judge"), parts.backends.get("judge", "")),
        failure=failure,
        png=png,
    )


def problems(verdict: GateVerdict) -> list[str]:
    """Every violation of a refused sketch, in plain words, with what exactly was wrong."""
    lines = []
    for code in verdict.violations:
        details = [_clip(detail) for detail in verdict.details.get(code, [])[:DETAILS_PER_CODE]]
        meaning = ViolationCode.of(code).wording
        lines.append(f"{meaning}: {'; '.join(details)}" if details else meaning)
    return lines


def judge_note(detail: dict[str, Any] | None, backend: str) -> JudgeNote | None:
    """The judge's verdict from its term detail (a `JudgeVerdict` dump); None when the judge was not asked."""
    if not detail:
        return None
    comparisons = [c for c in detail.get("comparisons", []) if c.get("score") is not None]
    wins = sum(1 for c in comparisons if c["score"] >= 1.0)
    return JudgeNote(
        score=detail.get("score"),
        wins=wins,
        comparisons=len(comparisons),
        backend=detail.get("backend") or backend,
        reason=judge_reason(comparisons),
    )


def judge_reason(comparisons: list[dict[str, Any]]) -> str:
    """The judge's reason against one reference, the first the painting did not beat outright (what to improve),
    else the first it beat; the reason was given with the painting shown as image A. Empty without one."""
    explained = [c for c in comparisons if c.get("reason")]
    chosen = next((c for c in explained if c["score"] < 1.0), explained[0] if explained else None)
    if chosen is None:
        return ""
    return f"Against reference {chosen['reference']} (yours was image A): {chosen['reason'].rstrip('.')}."


def picture_facts(png: bytes) -> PictureFacts:
    """Measure the picture: the offline scorer's features plus where the paint is and which colours it has."""
    features = image_features(png)
    canvas = Image.open(io.BytesIO(png)).convert("RGB")  # opaque: the renderer put it on its paper
    canvas.thumbnail((ANALYSIS_SIZE, ANALYSIS_SIZE), Image.Resampling.BOX)
    rgb = np.asarray(canvas, dtype=np.uint8)
    paint = paint_mask(rgb)
    centre = extent = None
    if paint.any():
        ys, xs = np.nonzero(paint)
        height, width = paint.shape
        sx, sy = CANVAS_UNITS / width, CANVAS_UNITS / height
        centre = (round(xs.mean() * sx), round(ys.mean() * sy))
        extent = (round(xs.min() * sx), round(ys.min() * sy), round((xs.max() + 1) * sx), round((ys.max() + 1) * sy))
    return PictureFacts(
        coverage=round(features.coverage, 3),
        centre=centre,
        extent=extent,
        palette=palette(rgb[paint]),
        softness=round(features.softness, 3),
        tonal_range=round(features.tonal_range, 3),
    )


def palette(pixels: np.ndarray) -> list[str]:
    """The main colours of the paint pixels (N x 3), most used first: 3-bit bins, each bin's mean colour."""
    if len(pixels) == 0:
        return []
    bins = (pixels >> 5).astype(np.int32)
    keys = (bins[:, 0] << 6) | (bins[:, 1] << 3) | bins[:, 2]
    counts = np.bincount(keys)
    colours = []
    for key in np.argsort(counts)[::-1][:PALETTE_SIZE]:
        if counts[key] < PALETTE_MIN_SHARE * len(pixels):
            break
        mean = pixels[keys == key].mean(axis=0)
        colours.append("#" + "".join(f"{int(round(c)):02x}" for c in mean))
    return colours


def _facts_text(facts: PictureFacts) -> str:
    if facts.centre is None or facts.extent is None:
        return "The canvas shows no paint."
    left, top, right, bottom = facts.extent
    return (
        f"Paint covers {facts.coverage:.0%} of the canvas, centred at ({facts.centre[0]}, {facts.centre[1]}); it "
        f"reaches from x {left} to {right} and y {top} to {bottom} ({right - left} by {bottom - top} of 600 by 600). "
        f"Main colours: {', '.join(facts.palette) or 'none'}. Edges {facts.softness:.0%} soft; tonal range "
        f"{facts.tonal_range:.2f} of 1."
    )


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"
