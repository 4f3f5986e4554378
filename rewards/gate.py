"""The admission gate: a completion passes if its sketch compiles, paints, keeps to the allowlist and plays fair.

`static_check` reads the sketch's parse tree (see `ground.sketch` for the rules) and never renders; `gate`
renders only what passed it, once, and judges the render. Every applicable code is reported, not just the
first, except that a truncated sketch reports only `truncated` (and `syntax_error`), and the picture's own checks
(a dark ground, then painted text) run only on a render that passed every other one. A failed gate scores 0 in
the composite reward; a renderer fault is not a verdict: `RendererUnavailable` propagates so the caller
records a dead letter and the rollout's reward is None.

| code | stage | when |
|---|---|---|
| `no_sketch` | static | no fenced block or reply text defines `setup` or `draw` (a refusal, prose, empty, garbage) |
| `oversize_source` | static | the sketch is longer than `max_source_chars`; checked before parsing |
| `syntax_error` | static | the parse tree has ERROR/MISSING nodes before the end of the text (details: line numbers) |
| `truncated` | static | the text ends inside an unfinished construct (an open block, call or string) |
| `missing_entry_points` | static | no `setup` that p5 can see (a function declaration, `var` or assignment at top level) |
| `not_webgl` | static, render | no `createCanvas(..., WEBGL)`, or a `createCanvas` without it; at render, `createCanvas` without WEBGL however the mode was spelled |
| `method_outside_allowlist` | static | a `brush.X` whose X is not one of the allowed methods |
| `brush_arguments` | static, render | a brush call with more arguments than the prompt lists, a required one left out, or one of another kind (`fill(colorHex[, opacity])`: a string, then optionally a finite number); at render the first such call ends it |
| `bare_primitives` | static | p5 drawing called without `brush.` (`ellipse(...)`, `window.rect`, `new p5`, `drawingContext`) |
| `text_drawing` | static | text drawn on the canvas (`text(...)`, `textToPoints`, `fillText`) |
| `external_access` | static | loaders, network, eval and the DOM (`loadImage`, `fetch`, `new Image`, `import()`, `eval`, ...) |
| `computed_access` | static | indexing what is not the sketch's own, or by a key built from strings; `brush` as a value |
| `name_outside_allowlist` | static | a name the prompt does not list (`console`, `this` outside a class), or a listed one misused |
| `global_write` | static | assigning to a global (`Math.random = ...`, `brush.fill = ...`) or to an undeclared name |
| `ambiguous_source` | static | text V8 may read otherwise: HTML-like comments, bare CR, U+2028/9, invisible characters |
| `no_painting_calls` | static | no `brush.endShape` or `brush.circle` call anywhere |
| `render_timeout` | render | the page ran past the browser pool's deadline and its renderer answered once the sketch was stopped (a hung renderer runs the sketch again alone; hung again, it is this) |
| `render_crashed` | render | the page's renderer, its browser or the driver died under the sketch, and again with it alone on a fresh renderer (the heap cap, a runaway sketch) |
| `no_canvas` | render | the page finished without a canvas to read back (and without another fault or error) |
| `navigation` | render | the sketch navigated its frame (reloaded it, or sent it to another address) |
| `readback_failed` | render | the picture could not be read from the canvas the harness knows as the sketch's |
| `oversize_picture` | render | the canvas is larger than the requested size (`pixelDensity` after `createCanvas`) |
| `render_fault` | render | the sketch broke the render harness some other way, and again alone on a fresh renderer |
| `canvas_size` | static, render | `createCanvas` with a side other than the prompt's 600 (at render: no canvas is made) |
| `flood` | render | more brush calls, errors, console messages, bytes of errors, network attempts or requests than the harness keeps; the render ends |
| `network_attempt` | render | the page attempted a network connection: a request, a WebSocket, WebRTC, a link hint |
| `runtime_error` | render | an uncaught error, a rejected promise or a console error |
| `blank_canvas` | render | paint coverage below `coverage_floor` |
| `dark_ground` | picture | the paper (the modal colour) is dark, or most of the sheet is (`rewards.picture.rules`) |
| `text_in_picture` | picture | writing in the paint, read by Tesseract or found by its shape, or a row of rating stars |
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from ground.prompt import PAINTING_METHODS
from ground.records import GateVerdict, RenderResult, ViolationCode, sketch_hash
from ground.settings import GateSettings
from ground.sketch import candidate_source, inventory
from renderers import RendererUnavailable
from renderers.watch import cut, json_bytes
from rewards.picture.rules import TextReaderMissing, dark_ground, painted_text


class Renderer(Protocol):
    """What the gate needs of a renderer: `renderers.BrowserPool` is one, the engine's `CachedRenderer` another."""

    async def render(self, source: str, seed: int = 0) -> RenderResult: ...


def static_check(completion: str, settings: GateSettings | None = None) -> GateVerdict:
    """Every check that needs no browser. A verdict that passes here still has to be rendered by `gate`."""
    settings = settings or GateSettings()
    source = candidate_source(completion)
    if len(source) > settings.max_source_chars:
        limit = f"{len(source)} characters; the limit is {settings.max_source_chars}"
        return GateVerdict(
            passed=False, violations=[ViolationCode.OVERSIZE_SOURCE], details={ViolationCode.OVERSIZE_SOURCE: [limit]}
        )
    found = inventory(source, settings.allowlist)
    if not found.names_entry_point:
        return GateVerdict(passed=False, violations=[ViolationCode.NO_SKETCH])
    details: dict[str, list[str]] = {
        ViolationCode.SYNTAX_ERROR: [f"line {line}" for line in found.syntax_error_lines],
        ViolationCode.TRUNCATED: ["the sketch ends inside an unfinished block, call or string"]
        if found.truncated
        else [],
        ViolationCode.MISSING_ENTRY_POINTS: [] if found.defines_setup else ["define setup as a top-level function"],
        ViolationCode.NOT_WEBGL: [] if found.webgl else ["call createCanvas(600, 600, WEBGL)"],
        ViolationCode.CANVAS_SIZE: found.canvas_size,
        ViolationCode.METHOD_OUTSIDE_ALLOWLIST: [f"brush.{name}" for name in found.outside_allowlist],
        ViolationCode.BRUSH_ARGUMENTS: found.brush_arguments,
        ViolationCode.BARE_PRIMITIVES: found.bare_primitives,
        ViolationCode.TEXT_DRAWING: found.text_drawing,
        ViolationCode.EXTERNAL_ACCESS: found.external_access,
        ViolationCode.COMPUTED_ACCESS: found.computed_access,
        ViolationCode.NAME_OUTSIDE_ALLOWLIST: found.unlisted_names,
        ViolationCode.GLOBAL_WRITE: found.global_writes,
        ViolationCode.AMBIGUOUS_SOURCE: found.ambiguous_source,
        ViolationCode.NO_PAINTING_CALLS: []
        if any(found.brush_calls[m] for m in PAINTING_METHODS)
        else ["nothing is painted"],
    }
    if found.truncated:  # the rest was read from a fragment whose last token is cut: `brush.begi` is no method
        details = {
            code: details[code]
            for code in (ViolationCode.SYNTAX_ERROR, ViolationCode.TRUNCATED, ViolationCode.AMBIGUOUS_SOURCE)
        }
    details = capped(details)
    return GateVerdict(
        passed=not details,
        violations=list(details),
        details=details,
        sketch=source,
        sketch_hash=sketch_hash(source),
        counts=found.counts(),
    )


async def gate(
    completion: str, renderer: Renderer, seed: int = 0, settings: GateSettings | None = None
) -> GateVerdict:
    """Static checks, then one render of what passed them; the render rides on the verdict for scoring."""
    settings = settings or GateSettings()
    return await rendered(await checked(completion, settings), renderer, seed, settings)


async def checked(completion: str, settings: GateSettings) -> GateVerdict:
    """`static_check` in a worker thread: the check is linear, but a sketch at a raised length limit takes up to a
    second to read (docs/rendering.md), and the loop that awaits it also drives every other render and score."""
    return await asyncio.to_thread(static_check, completion, settings)


async def rendered(verdict: GateVerdict, renderer: Renderer, seed: int, settings: GateSettings) -> GateVerdict:
    """The verdict of the static checks after one render of what passed them; a refusal comes back as it was."""
    if not verdict.passed or verdict.sketch is None:
        return verdict
    try:
        async with asyncio.timeout(settings.deadline_s):
            render = await renderer.render(verdict.sketch, seed=seed)
    except TimeoutError as error:
        raise RendererUnavailable(
            f"no render within {settings.deadline_s} s although the browser pool kills pages at its own deadline: "
            "the renderer is stuck; restart the browser pool or raise GateSettings.deadline_s if it is only saturated"
        ) from error
    details = await render_violations(render, settings)
    return verdict.model_copy(
        update={"passed": not details, "violations": list(details), "details": details, "render": render}
    )


async def render_violations(render: RenderResult, settings: GateSettings) -> dict[str, list[str]]:
    """Violation code -> reasons for one render: what the page did, then the picture's own checks on a clean one."""
    details = runtime_violations(render, settings.coverage_floor)
    if not details and render.png is not None:
        details = capped({ViolationCode.DARK_GROUND: dark_ground(render.png)})
    if not details and render.png is not None and settings.read_text:
        try:
            details = capped({ViolationCode.TEXT_IN_PICTURE: await painted_text(render.png)})
        except TextReaderMissing as error:
            raise RendererUnavailable(str(error)) from error
    return details


# The renderer's fault kinds (RenderResult.fault) and the violation code each one is.
FAULT_CODES = {
    "navigation": ViolationCode.NAVIGATION,
    "readback": ViolationCode.READBACK_FAILED,
    "oversize": ViolationCode.OVERSIZE_PICTURE,
    "harness": ViolationCode.RENDER_FAULT,
    "canvas_size": ViolationCode.CANVAS_SIZE,
    "not_webgl": ViolationCode.NOT_WEBGL,
    "flood": ViolationCode.FLOOD,
    "brush_arguments": ViolationCode.BRUSH_ARGUMENTS,
}


def runtime_violations(render: RenderResult, coverage_floor: float) -> dict[str, list[str]]:
    """Violation code -> reasons, for what the page did."""
    unexplained = not (render.ok or render.timed_out or render.crashed or render.fault or render.errors)
    details: dict[str, list[str]] = {
        ViolationCode.RENDER_TIMEOUT: ["killed at the browser pool's deadline"] if render.timed_out else [],
        ViolationCode.RENDER_CRASHED: ["the page crashed"] if render.crashed else [],
        ViolationCode.NO_CANVAS: ["no canvas to read back"] if unexplained else [],
        **(
            {FAULT_CODES.get(render.fault, ViolationCode.RENDER_FAULT): [render.fault_detail or render.fault]}
            if render.fault
            else {}
        ),
        ViolationCode.NETWORK_ATTEMPT: render.blocked_requests,
        ViolationCode.RUNTIME_ERROR: render.errors,
        ViolationCode.BLANK_CANVAS: [f"coverage {render.coverage:.4f} < {coverage_floor}"]
        if render.coverage is not None and render.coverage < coverage_floor
        else [],
    }
    return capped(details)


# A verdict, serialised as the CLI's JSON line or the store's record (its sketch and picture aside), is at most
# VERDICT_BYTES, whatever the characters: counted as JSON escaped to ASCII, where an astral character is 12 bytes
# (20 reasons of 500 astral characters made 115 kB and 239 kB lines from a 1 kB sketch). Its details keep to
# DETAILS_BYTES, the render's own texts to renderers.watch.MAX_RESULT_BYTES, and the rest (codes, counts, numbers
# and the lines that say what was cut) fits in what is left. Reasons kept per code: MAX_REASONS (a sketch with 3,000
# refused names made a 30 MB line), each at most MAX_REASON_BYTES (a refused name can be a 20,000-character
# identifier); the count of the rest is enough to act on.
VERDICT_BYTES = 16_384
DETAILS_BYTES = 5_120
MAX_REASONS = 20
MAX_REASON_BYTES = 500


def capped(details: dict[str, list[str]]) -> dict[str, list[str]]:
    """The codes that have reasons, each with the reasons that fit (at most MAX_REASONS, DETAILS_BYTES in all) and a
    line counting the rest, which says when the verdict's size cut them."""
    out, spent = {}, 0
    for code, reasons in details.items():
        if not reasons:
            continue
        kept = []
        for reason in reasons[:MAX_REASONS]:
            reason = cut(reason, MAX_REASON_BYTES)
            spent += json_bytes(reason) + 4  # quotes, a comma and a space
            if spent > DETAILS_BYTES:
                break
            kept.append(reason)
        rest = len(reasons) - len(kept)
        if rest:
            cut_short = len(kept) < min(len(reasons), MAX_REASONS)
            kept.append(f"... and {rest} more" + (", cut to keep the verdict under 16 kB" if cut_short else ""))
        out[code] = kept
    return out
