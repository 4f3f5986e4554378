"""Source text on which tree-sitter and V8 may read different programs, so the static check would judge one
program while Chromium runs another.

Measured against Node 20's V8 (tests/ground/test_v8_parse.py): V8 ends a `//` comment at a bare CR, U+2028 or U+2029
and treats `<!--` anywhere and `-->` at a line's start as comments (HTML-like comments, Annex B), while
tree-sitter reads `a <!-- b` as `a < !(--b)`. Invisible characters (other control characters, format characters
such as a zero-width joiner or a byte-order mark, spaces other than U+0020, unpaired surrogates) are where two
lexers' tables are most likely to differ and no painting needs them, so all of these are refused outright
rather than reasoned about one by one. A sketch that paints has no use for any of them.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable


# Tab, LF and CRLF are the only layout characters a sketch needs.
_ASCII_HAZARDS = re.compile(r"\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_HTML_COMMENTS = re.compile(rb"<!--|-->")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# Unicode categories refused outside ASCII: control, format, private use, surrogate, unassigned, and separators
# (line, paragraph and every space but U+0020).
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp", "Zs"})


def character_hazards(source: str) -> list[str]:
    """Details for the characters that make the parse ambiguous, one per kind, with the first line it is on."""
    lines = _Lines(source)
    found: dict[str, int] = {}
    for match in _ASCII_HAZARDS.finditer(source):
        kind = "a bare carriage return" if match.group() == "\r" else f"control character U+{ord(match.group()):04X}"
        if kind not in found:
            found[kind] = lines.of(match.start())
    if not source.isascii():
        first: dict[str, int] = {}
        for match in _NON_ASCII.finditer(source):
            first.setdefault(match.group(), match.start())
        for char in sorted(first):
            if unicodedata.category(char) in _REFUSED_CATEGORIES:
                found.setdefault(f"U+{ord(char):04X} ({unicodedata.name(char, 'unnamed')})", lines.of(first[char]))
    return [f"{kind} on line {line}" for kind, line in found.items()]


def html_comment_hazards(code: bytes, inert: Iterable[tuple[int, int]]) -> list[str]:
    """`<!--` or `-->` outside the byte ranges of comments and strings (`inert`): V8 reads a comment there."""
    ranges, hazards, lines = sorted(inert), [], _Lines(code)
    starts = [low for low, _ in ranges]
    for match in _HTML_COMMENTS.finditer(code):
        # Comments and strings do not overlap, so only the last range starting at or before the match can hold it.
        holder = bisect.bisect_right(starts, match.start()) - 1
        if holder < 0 or ranges[holder][1] < match.end():
            hazards.append(f"an HTML-like comment {match.group().decode()} on line {lines.of(match.start())}")
    return hazards


class _Lines:
    """Line numbers by position, the newlines found once and only if asked: counting the newlines before every
    hazard was quadratic (a source of 64,000 `-->` took seconds)."""

    def __init__(self, text: str | bytes) -> None:
        self.text = text
        self.newlines: list[int] | None = None

    def of(self, position: int) -> int:
        if self.newlines is None:
            newline = re.compile("\n" if isinstance(self.text, str) else b"\n")
            self.newlines = [match.start() for match in newline.finditer(self.text)]  # type: ignore[arg-type]
        return bisect.bisect_left(self.newlines, position) + 1
