"""What a render's frame did, heard from outside its realm: DevTools protocol events on the slot's page.

Errors, console errors and WebRTC attempts arrive as the reports of the harness's tripwire (renderers/harness.py),
which runs before any script of the frame, bounds each channel in count and bytes inside the page and cancels the
originals, so nothing unbounded crosses DevTools; navigations and contexts are the protocol's own events. The sketch
reaches none of it: replacing `console.error`, `window.onerror` or any harness object changes nothing here. Events
are kept only for the render's own frame and the frames it creates, so a late event of the previous render (its
frame is removed before the next is mounted) is not blamed on the next sketch. Every text leaves as `scrubbed`.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from ground.records import valid_text
from renderers import harness


# Each render's files live under a random token; texts drop it so equal sketches report equal errors, and no
# verdict carries the path of a render's one-time files, whole or cut short (a refusal quotes 24 characters of a
# string the sketch chose, which can start at the token), nor the token's own digits.
TOKEN = re.compile(r"/r/[0-9a-f]{1,32}/?")
MAX_ATTEMPTS = 20
# Bytes a verdict string may take in a JSON line that escapes everything but printable ASCII (the CLI's, Python's
# default): 500 characters of ASCII, 41 astral characters (12 bytes each).
MAX_TEXT = 500
# A render's errors and its blocked requests together stay under this, so its whole verdict stays under 16 kB
# (rewards.gate.VERDICT_BYTES); the rest is counted in a last line.
MAX_RESULT_BYTES = 6_144
# The tripwire's reports of what the page threw or logged, by kind, as the verdict names them.
REPORTS = {"uncaught": "uncaught", "rejection": "unhandled rejection", "console": "console"}
# Child frames whose link hints are read: a sketch that floods frames should not buy itself protocol calls.
MAX_CHILD_FRAMES = 8
CUT = " [cut]"


def json_bytes(text: str) -> int:
    """Bytes `text` takes as a JSON string escaped to ASCII, quotes left out."""
    return len(json.dumps(text)) - 2


def cut(text: str, limit: int) -> str:
    """`text` in at most `limit` bytes of escaped JSON, ending in CUT when something was left out."""
    head = text[: limit + 1]  # a character is a byte at least
    if len(head) <= limit and json_bytes(head) <= limit:
        return head
    low, high = 0, min(len(head), limit - len(CUT))
    while low < high:  # the longest prefix that fits beside the mark
        middle = (low + high + 1) // 2
        if json_bytes(head[:middle]) <= limit - len(CUT):
            low = middle
        else:
            high = middle - 1
    return head[:low] + CUT


def scrubbed(text: str, limit: int = MAX_TEXT, token: str = "") -> str:
    """A string the sketch wrote or provoked, as a verdict carries it: valid UTF-8, capped in bytes, and with no render
    token left in it: the token's path is removed until none is, since removing one can join what surrounds it into
    another (`/r/0` + a token + `r/<its digits>/`), and so are the digits of `token`, the render's own."""
    digits = token.strip("/").removeprefix("r/")  # the token is `/r/<32 hex digits>/`
    text = text[: 4 * limit]
    while True:
        clean = TOKEN.sub("/", text)
        if digits:
            clean = clean.replace(digits, "")
        if clean == text:
            return cut(valid_text(clean), limit)
        text = clean


def kept(texts: list[str], budget: int = MAX_RESULT_BYTES // 2) -> list[str]:
    """The first `texts` that fit in `budget` bytes of escaped JSON, and a line counting the rest: a render's errors
    and its blocked requests get half of MAX_RESULT_BYTES each."""
    spent = 0
    for index, text in enumerate(texts):
        spent += json_bytes(text) + 4  # quotes, a comma and a space
        if spent > budget:
            return texts[:index] + [f"... and {len(texts) - index} more, cut to keep the verdict under 16 kB"]
    return texts


def _describe(details: dict) -> str:
    """An exception as the old in-page collector wrote it: its first two stack lines on one line."""
    thrown = details.get("exception") or {}
    text = thrown.get("description") or str(thrown.get("value", details.get("text", "unknown error")))
    text = " ".join(text.split("\n")[:2])
    kind = "unhandled rejection" if "(in promise)" in details.get("text", "") else "uncaught"
    return f"{kind}: {text}"


def _console_text(event: dict) -> str:
    parts = [str(arg.get("value", arg.get("description", arg.get("type")))) for arg in event.get("args", [])]
    return "console: " + " ".join(parts)


class RenderWatch:
    """Listens on one slot's DevTools session; `begin(token)` starts a render's record.

    `trouble` is set by an uncaught error, a navigation or a flood, any of which can keep the finish mark from
    coming. `flooded` says what overflowed its cap (errors, attempts, requests): a refusal of its own.
    """

    def __init__(self, session: Any) -> None:
        self.session = session
        self._contexts: dict[int, str] = {}  # execution context id -> frame id
        self._worlds: dict[str, int] = {}  # frame id -> id of its watcher's isolated world
        self.token = ""
        self.frame_id: str | None = None
        self.frames: set[str] = set()
        self.errors: list[str] = []
        self.attempts: list[str] = []
        self.navigations: list[str] = []
        self.flooded = ""
        self.trouble = asyncio.Event()
        self.world: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def start(self) -> None:
        for event, handler in {
            "Runtime.executionContextCreated": self._on_context,
            "Runtime.executionContextDestroyed": self._on_context_gone,
            "Runtime.exceptionThrown": self._on_exception,
            "Runtime.consoleAPICalled": self._on_console,
            "Runtime.bindingCalled": self._on_binding,
            "Page.frameAttached": self._on_attached,
            "Page.frameNavigated": self._on_navigated,
            "Page.frameRequestedNavigation": self._on_requested,
        }.items():
            self.session.on(event, handler)
        await self.session.send("Page.enable")
        await self.session.send("Runtime.enable")
        await self.session.send("Runtime.addBinding", {"name": harness.ATTEMPT_BINDING})
        await self.session.send("Page.addScriptToEvaluateOnNewDocument", {"source": harness.TRIPWIRE_JS})
        await self.session.send(
            "Page.addScriptToEvaluateOnNewDocument", {"source": harness.WATCH_JS, "worldName": harness.WORLD}
        )

    def begin(self, token: str) -> None:
        """Forget the previous render; events from now on belong to the frame that loads `token`."""
        self.token = token
        self._contexts.clear()  # the previous frame's contexts are gone with it; no need to grow for 200 renders
        self._worlds.clear()
        self.frame_id = None
        self.frames = set()
        self.errors, self.attempts, self.navigations = [], [], []
        self.flooded = ""
        self.trouble = asyncio.Event()
        self.world = asyncio.get_running_loop().create_future()

    async def evaluate(self, expression: str, context_id: int | None = None) -> Any:
        """Evaluate in the render frame's isolated world (or another); a JavaScript exception raises RuntimeError."""
        context_id = context_id or self.world.result()
        reply = await self.session.send(
            "Runtime.evaluate",
            {"expression": expression, "contextId": context_id, "awaitPromise": True, "returnByValue": True},
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(_describe(reply["exceptionDetails"]))
        return reply["result"].get("value")

    async def child_reports(self) -> list[str]:
        """Link hints the watchers of frames the sketch created inside its own recorded; their refusals are noted."""
        from playwright.async_api import Error as PlaywrightError

        hints: list[str] = []
        for frame in sorted(self.frames - {self.frame_id})[:MAX_CHILD_FRAMES]:
            try:
                reports = await self.evaluate("__wcWatch.reports()", self._worlds[frame])
            except (KeyError, PlaywrightError, RuntimeError):  # a child frame gone, or never given a world
                continue
            hints += reports["hints"]
            self.note_refused(reports["refused"])
        return hints

    def scrub(self, text: str, limit: int = MAX_TEXT) -> str:
        """`scrubbed` with this render's token."""
        return scrubbed(text, limit, self.token)

    def note_refused(self, refused: list[list[str]]) -> None:
        """What the content security policy refused, as a watcher recorded it: code is an error, a load an attempt.

        A string turned into code (eval, Function, a string timer, WebAssembly) or an inline script is the
        sketch running code it did not ship: a runtime error. A refused script or worker URL is a load the
        harness did not serve, like a request the router aborts: a network attempt.
        """
        for kind, text in refused:
            text = self.scrub(str(text))
            if kind == "code":
                self._error(f"content security policy: {text}")
            else:
                self.attempt(text)

    def attempt(self, text: str) -> None:
        """Record a network attempt; past MAX_ATTEMPTS the render is a flood."""
        if len(self.attempts) < MAX_ATTEMPTS:
            self.attempts.append(self.scrub(text, 200))
        else:
            self.flood(f"more than {MAX_ATTEMPTS} network attempts")

    def flood(self, what: str) -> None:
        """End the render: something the sketch caused overflowed its cap."""
        self.flooded = self.flooded or what
        self.trouble.set()

    def _mine(self, context_id: int | None) -> bool:
        return self._contexts.get(context_id or -1) in self.frames

    def _on_context(self, event: dict) -> None:
        context = event["context"]
        frame = context.get("auxData", {}).get("frameId")
        self._contexts[context["id"]] = frame
        if context["name"] == harness.WORLD:
            self._worlds[frame] = context["id"]
            self._resolve_world()

    def _on_context_gone(self, event: dict) -> None:
        self._worlds = {frame: world for frame, world in self._worlds.items() if world != event["executionContextId"]}

    def _resolve_world(self) -> None:
        if self.frame_id in self._worlds and not self.world.done():
            self.world.set_result(self._worlds[self.frame_id])

    def _on_attached(self, event: dict) -> None:
        if event.get("parentFrameId") in self.frames:
            self.frames.add(event["frameId"])

    def _on_navigated(self, event: dict) -> None:
        frame = event["frame"]
        if self.frame_id is None and self.token and self.token in frame["url"] and frame.get("parentId"):
            self.frame_id = frame["id"]
            self.frames.add(frame["id"])
            self._resolve_world()
        elif frame["id"] == self.frame_id:
            self._navigation(frame["url"])

    def _on_requested(self, event: dict) -> None:
        if event["frameId"] == self.frame_id:
            self._navigation(event.get("url", ""))

    def _navigation(self, url: str) -> None:
        self.navigations.append(self.scrub(url, 200))
        self.trouble.set()

    def _on_exception(self, event: dict) -> None:
        """An exception the tripwire did not cancel (it cancels every one it hears)."""
        details = event["exceptionDetails"]
        if self._mine(details.get("executionContextId")):
            self._error(_describe(details))
            self.trouble.set()  # p5 stops at an uncaught error: the finish mark may never come

    def _on_console(self, event: dict) -> None:
        """A console message of the original console (the tripwire replaces it before any script runs)."""
        if event["type"] in ("error", "assert") and self._mine(event.get("executionContextId")):
            self._error(_console_text(event))

    def _error(self, text: str) -> None:
        if len(self.errors) < harness.MAX_ERRORS:
            self.errors.append(self.scrub(text))
        else:
            self.flood(f"more than {harness.MAX_ERRORS} errors")

    def _on_binding(self, event: dict) -> None:
        if event["name"] != harness.ATTEMPT_BINDING or not self._mine(event.get("executionContextId")):
            return
        kind, _, payload = event["payload"].partition(" ")
        if kind == "flood":
            self.flood(payload)
        elif kind == "attempt":
            self.attempt(payload)
        else:
            self._error(f"{REPORTS[kind]}: {payload}")
            if kind != "console":
                self.trouble.set()  # p5 stops at an uncaught error: the finish mark may never come
