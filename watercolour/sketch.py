"""Getting a sketch out of a completion: the first JavaScript code block, or the whole reply.

What the sketch defines, calls and breaks is read by `watercolour.sketch_inventory` (re-exported here, as the
gate, the curves and the tests know it from this module).
"""

from __future__ import annotations

import re
from itertools import zip_longest

from watercolour.sketch_inventory import SketchInventory, inventory, language


__all__ = ["SketchInventory", "candidate_source", "extract_sketch", "inventory", "language"]

_FENCE = re.compile(r"```([^\n`]*)")
_JS_INFO = frozenset({"", "js", "javascript"})


def candidate_source(completion: str) -> str:
    """The body of the first ```js, ```javascript or bare fenced block, else the whole reply, stripped.

    A fence left open (the reply was cut off) yields everything after it, so the parse reports truncation.
    """
    fences = list(_FENCE.finditer(completion))
    for opener, closer in zip_longest(fences[0::2], fences[1::2]):
        if opener.group(1).strip().lower() in _JS_INFO:
            return completion[opener.end() : closer.start() if closer else len(completion)].strip()
    return completion.strip()


def extract_sketch(completion: str) -> str | None:
    """The sketch in a completion, or None when the text defines neither `setup` nor `draw`."""
    source = candidate_source(completion)
    return source if source and inventory(source).names_entry_point else None
