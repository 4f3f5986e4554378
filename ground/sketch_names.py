"""Which global names a sketch may use, and how: the allowlist half of the static check.

A sketch may name only what the prompt permits (`ground.prompt`: the ten brush methods, the p5 calls,
maths and constants, a few JavaScript helpers) besides its own declarations. How a name is used matters as much
as which: p5 2.3's `translate` and `createCanvas` return its renderer, so `translate(0, 0).drawingContext` is
the raw context; a namespace such as `Math` is read member by member, never as a value, so no alias escapes
its member list. `UseOf` tells how a reference is used and `global_use` judges one use of a global; the
families that have their own violation code (bare primitives, text, external access, computed access on
`brush` and `window`) are decided in `ground.sketch_rules`, and this module names everything else.
"""

from __future__ import annotations

from typing import Literal

from tree_sitter import Node

from ground.js_scope import ScopeWalk, node_text
from ground.prompt import JS_CONSTANTS, JS_FUNCTIONS, JS_NAMESPACES, P5_CONSTANTS, P5_MATHS, P5_STATEMENTS
from ground.records import ViolationCode


PRIMITIVES = frozenset(
    "arc ellipse circle line point quad rect square triangle bezier curve spline beginShape endShape vertex "
    "bezierVertex quadraticVertex curveVertex splineVertex beginContour endContour image plane box sphere "
    "cylinder cone ellipsoid torus model updatePixels".split()
)
TEXT_CALLS = frozenset("text textToPoints textToContours textToModel fillText strokeText".split())
EXTERNAL_NAMES = frozenset(
    "loadImage loadBytes loadBlob loadJSON loadStrings loadTable loadXML loadModel loadFont loadShader "
    "loadFilterShader loadSound httpGet httpPost httpDo createImg createVideo createAudio createCapture "
    "createElement createA createP createDiv createSpan createButton createInput createFileInput select selectAll "
    "fetch importScripts eval Function XMLHttpRequest WebSocket EventSource Worker SharedWorker Image Audio "
    "RTCPeerConnection BroadcastChannel document navigator localStorage sessionStorage indexedDB caches".split()
)
# Properties that lead from any value to the Function constructor, a caller's frame or a prototype's accessors.
REFLECTIVE_PROPERTIES = frozenset(
    "constructor __proto__ caller callee arguments __defineGetter__ __defineSetter__ __lookupGetter__ "
    "__lookupSetter__".split()
)
# Property names that write markup or leave the page, on any object.
EXTERNAL_PROPERTIES = REFLECTIVE_PROPERTIES | frozenset(
    "innerHTML outerHTML insertAdjacentHTML srcdoc sendBeacon cookie".split()
)
GLOBAL_OBJECTS = frozenset("window globalThis self frames parent top opener".split())
GLOBAL_ONLY_PROPERTIES = frozenset({"location", "open", "brush"})  # fine on your own objects, not on window
TIMERS = frozenset({"setTimeout", "setInterval"})
ENTRY_POINTS = frozenset({"setup", "draw"})
# Globals whose misuse another violation code already reports (see `ground.sketch`).
REPORTED_ELSEWHERE = PRIMITIVES | TEXT_CALLS | EXTERNAL_NAMES | GLOBAL_OBJECTS | {"brush", "drawingContext", "p5"}

STATEMENTS = frozenset(P5_STATEMENTS)
PERMITTED_FUNCTIONS = frozenset(P5_MATHS + JS_FUNCTIONS)
CONSTANTS = frozenset(P5_CONSTANTS + JS_CONSTANTS)

# How a reference is used: called as a statement, called for its value, constructed, read as an object's static
# member (`member`), written (assigned, updated, deleted), or anything else (`value`).
Role = Literal["statement", "call", "new", "member", "member_write", "write", "value"]
Violation = tuple[Literal[ViolationCode.NAME_OUTSIDE_ALLOWLIST, ViolationCode.GLOBAL_WRITE], str]


def global_use(name: str, role: Role, member: str = "") -> Violation | None:
    """The violation for one use of the global `name` (not declared by the sketch), or None if the prompt permits
    it; `member` is the static property read when the role is `member` or `member_write`."""
    if name in ENTRY_POINTS or (name in GLOBAL_OBJECTS and role == "member_write" and member in ENTRY_POINTS):
        return None  # setup = ..., window.draw = ...
    if role in ("write", "member_write"):
        what = f"{name}.{member}" if role == "member_write" else name
        known = name in STATEMENTS | PERMITTED_FUNCTIONS | CONSTANTS | set(JS_NAMESPACES) | REPORTED_ELSEWHERE
        fix = "a global of p5 or JavaScript may not be changed" if known else "not declared: declare it with let"
        return ViolationCode.GLOBAL_WRITE, f"{what}: {fix}"
    if name in GLOBAL_OBJECTS:
        if role == "member" and member not in EXTERNAL_NAMES | GLOBAL_ONLY_PROPERTIES | PRIMITIVES:
            return (
                ViolationCode.NAME_OUTSIDE_ALLOWLIST,
                f"{name}.{member}: the page's globals are not part of the sketch",
            )
        return None  # `window` as a value and its dangerous members are computed or external access
    if name in REPORTED_ELSEWHERE:
        return None
    if name in CONSTANTS:
        return None
    if name in JS_NAMESPACES and role == "member":
        if member in JS_NAMESPACES[name]:
            return None
        return (
            ViolationCode.NAME_OUTSIDE_ALLOWLIST,
            f"{name}.{member}: the prompt permits only {', '.join(JS_NAMESPACES[name])}",
        )
    if name in STATEMENTS:
        if role == "statement":
            return None
        return ViolationCode.NAME_OUTSIDE_ALLOWLIST, f"{name}: call it as a statement; its result is p5's renderer"
    if name in PERMITTED_FUNCTIONS:
        if role == "call" or role == "statement" or (role == "new" and name == "Array"):
            return None
        return ViolationCode.NAME_OUTSIDE_ALLOWLIST, f"{name}: call it; it may not be used as a value"
    if name in JS_NAMESPACES:
        return ViolationCode.NAME_OUTSIDE_ALLOWLIST, f"{name}: use its permitted members, not the object itself"
    return ViolationCode.NAME_OUTSIDE_ALLOWLIST, f"{name}: not one of the names the prompt permits"


# Expressions whose value is one of their operands: a call's value goes on to whatever holds them.
PASS_THROUGH = frozenset(
    {"await_expression", "parenthesized_expression", "sequence_expression", "ternary_expression", "binary_expression"}
)
_PATTERNS = frozenset({"array_pattern", "object_pattern", "pair_pattern", "rest_pattern", "assignment_pattern"})


class UseOf:
    """How an expression is used by its parent, and the static member read from it if any. Whether a pattern is
    an assignment target is memoised per pattern, so a pattern nested thousands deep is read in linear time."""

    def __init__(self, walk: ScopeWalk) -> None:
        self.parent = walk.parent  # tree-sitter's own `.parent` walks down from the root: quadratic when deep
        self.written_patterns: dict[int, bool] = {}
        self.holders: dict[int, Node | None] = {}  # pass-through node id -> the first ancestor that is not one

    def holder(self, node: Node) -> Node | None:
        """The nearest ancestor of `node` that is not a pass-through expression (what receives its value); memoised,
        so each call of `f() && g() && ...` does not climb the whole chain again (35 s at 32 kB before)."""
        path = []
        parent = self.parent(node)
        while parent is not None and parent.type in PASS_THROUGH:
            if parent.id in self.holders:
                parent = self.holders[parent.id]
                break
            path.append(parent.id)
            parent = self.parent(parent)
        self.holders.update(dict.fromkeys(path, parent))
        return parent

    def __call__(self, node: Node) -> tuple[Role, str]:
        parent = self.parent(node)
        if parent is None:
            return "value", ""
        kind = parent.type
        if kind == "member_expression" and parent.child_by_field_name("object") == node:
            member = node_text(parent.child_by_field_name("property"))
            return ("member_write" if self.is_written(parent) else "member"), member
        if kind == "call_expression" and parent.child_by_field_name("function") == node:
            holder = self.holder(parent)  # past `ok && push();`, `push(), translate(1, 2);`
            return ("statement" if holder is not None and holder.type == "expression_statement" else "call"), ""
        if kind == "new_expression" and parent.child_by_field_name("constructor") == node:
            return "new", ""
        return ("write" if self.is_written(node) else "value"), ""

    def is_written(self, node: Node) -> bool:
        """Whether `node` is the target of an assignment, an update, a `delete` or a for-in/of loop head."""
        path = []
        parent = self.parent(node)
        while parent is not None and parent.type in _PATTERNS:
            node, parent = parent, self.parent(parent)
            if node.id in self.written_patterns:
                return self.written_patterns[node.id]
            path.append(node.id)
        written = parent is not None and (
            (
                parent.type in ("assignment_expression", "augmented_assignment_expression", "for_in_statement")
                and parent.child_by_field_name("left") == node
            )
            or parent.type == "update_expression"
            or (parent.type == "unary_expression" and node_text(parent.child_by_field_name("operator")) == "delete")
        )
        self.written_patterns.update(dict.fromkeys(path, written))
        return written
