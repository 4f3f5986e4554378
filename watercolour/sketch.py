"""Getting a sketch out of a completion, and a static inventory of it read from a real JavaScript parse tree.

The tree comes from tree-sitter, so a name inside a comment, a string or a longer identifier (`// ellipse`,
`"fetch"`, `retrieval`) is never a call. The rules, decided here and enforced by `rewards.gate`:

- **Entry points.** p5 runs `setup`/`draw` only when they are properties of `window`: a top-level function
  declaration, a top-level `var`, or an assignment. A top-level `let`/`const` setup is never called (measured:
  the page waits until its deadline), so it makes the text a sketch but is not a visible entry point.
- **Brush methods** are the static members named on the global `brush` (`brush.X`, called or not).
- **Bare primitives** are p5 drawing functions called as globals (`ellipse(...)`, `window.rect(...)`), plus
  ways around them (`new p5`, `p5.prototype`, `drawingContext`). A call resolves to the sketch's own function
  when a binding of that name is in scope: p5 2.x then either calls the sketch's function (a `let` helper)
  or refuses to start at all (a top-level `function ellipse` makes p5 throw "Cannot redefine property"), so
  neither case paints with plain p5.
- **External access** names (`fetch`, `eval`, `document`, `new Image`, the p5 loaders, ...) are refused
  wherever they are referenced as identifiers, even when the sketch declares them: a sketch has no use for a
  variable called `fetch`, and declining to resolve scopes here closes every shadowing trick.
- **Computed access**: a call built from strings is refused by refusing its two ingredients. `brush` and the
  global objects (`window`, `globalThis`, `self`, `this`, ...) may appear only as the object of a static member
  (`brush.fill`); indexing them (`brush["li" + "ne"]`) or letting them escape as a value (`const w = window`,
  `Reflect.get(window, name)`, `const {line} = brush`) is computed access, as is a `with` block.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from itertools import zip_longest

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser

from watercolour.js_scope import FUNCTIONS, Declarations, declarations, descendants, is_declared, node_text
from watercolour.prompt import ALLOWLIST


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
# Property names that write markup, leave the page or reach the Function constructor, on any object.
EXTERNAL_PROPERTIES = frozenset(
    "innerHTML outerHTML insertAdjacentHTML srcdoc sendBeacon cookie constructor __proto__".split()
)
GLOBAL_OBJECTS = frozenset("window globalThis self frames parent top opener".split())
GLOBAL_ONLY_PROPERTIES = frozenset({"location", "open", "brush"})  # fine on your own objects, not on window
TIMERS = frozenset({"setTimeout", "setInterval"})


@dataclass
class SketchInventory:
    """What a sketch defines and calls, as far as the source text says (call sites, not executions)."""

    defines_setup: bool = False  # visible to p5 (see the module docstring)
    defines_draw: bool = False
    names_entry_point: bool = False  # any definition of setup or draw, visible or not
    webgl: bool = False  # every createCanvas(...) passes WEBGL, and there is at least one
    brush_calls: Counter[str] = field(default_factory=Counter)
    brush_members: set[str] = field(default_factory=set)
    outside_allowlist: list[str] = field(default_factory=list)
    bare_primitives: list[str] = field(default_factory=list)
    text_drawing: list[str] = field(default_factory=list)
    external_access: list[str] = field(default_factory=list)
    computed_access: list[str] = field(default_factory=list)
    syntax_error_lines: list[int] = field(default_factory=list)
    truncated: bool = False

    def counts(self) -> dict[str, int]:
        """Shape statistics for metrics: call sites of the painting methods."""
        calls = self.brush_calls
        return dict(shapes=calls["beginShape"], vertices=calls["vertex"], circles=calls["circle"], fills=calls["fill"])


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


@cache
def _language() -> Language:
    return Language(tree_sitter_javascript.language())


def _snippet(node: Node) -> str:
    """The offending code as written (escapes left alone), on one line and short, for verdict details."""
    return " ".join((node.text or b"").decode("utf-8", "replace").split())[:80]


def inventory(source: str, allowlist: tuple[str, ...] = ALLOWLIST) -> SketchInventory:
    """Parse `source` and list its definitions, brush calls and every rule breach in the module docstring."""
    code = source.encode("utf-8", "replace")
    root = Parser(_language()).parse(code).root_node
    found = SketchInventory()
    _entry_points(root, found)
    declared = declarations(root)
    end_of_code = len(code.rstrip())
    canvases: list[bool] = []
    stack = [root]
    while stack:  # iterative: a hostile source nests deeper than Python's recursion limit
        node = stack.pop()
        stack.extend(node.children)
        if node.is_error or node.is_missing:
            if node.end_byte >= end_of_code:
                found.truncated = True
            else:
                found.syntax_error_lines.append(node.start_point.row + 1)
        elif node.type == "call_expression":
            _call(node, found, declared, canvases)
        elif node.type in ("identifier", "shorthand_property_identifier"):
            _reference(node, found, declared)
        elif node.type == "member_expression":
            _member(node, found)
        elif node.type == "subscript_expression":
            obj = node.child_by_field_name("object")
            if obj is not None and (obj.type == "this" or _is_root_object(obj, declared)):
                found.computed_access.append(_snippet(node))
        elif node.type == "with_statement":
            found.computed_access.append("with (...)")
        elif node.type == "import_statement":
            found.external_access.append("import")
        elif node.type == "new_expression" and node_text(node.child_by_field_name("constructor")) == "p5":
            found.bare_primitives.append("new p5")
    found.webgl = bool(canvases) and all(canvases)
    found.outside_allowlist = sorted(found.brush_members - set(allowlist))
    found.syntax_error_lines = sorted(set(found.syntax_error_lines))
    for name in ("bare_primitives", "text_drawing", "external_access", "computed_access"):
        setattr(found, name, sorted(set(getattr(found, name))))
    return found


def _entry_points(root: Node, found: SketchInventory) -> None:
    visible: set[str] = set()
    for child in root.children:  # root is `program`, or ERROR when the parse failed at the top level
        if child.type == "function_declaration":
            visible.add(node_text(child.child_by_field_name("name")))
        elif child.type == "variable_declaration":
            visible.update(
                node_text(d.child_by_field_name("name")) for d in child.named_children if _binds_function(d)
            )
        elif child.type == "expression_statement" and child.named_children:
            assignment = child.named_children[0]
            target = assignment.child_by_field_name("left")
            if assignment.type == "assignment_expression" and target is not None and _binds_function(assignment):
                visible.add(node_text(target).removeprefix("window."))
    named = set(visible) | {
        node_text(n.child_by_field_name("name") or n.child_by_field_name("left"))
        for n in descendants(root, {"function_declaration", "function_expression", "variable_declarator"})
        if n.type != "variable_declarator" or _binds_function(n)
    }
    found.defines_setup, found.defines_draw = "setup" in visible, "draw" in visible
    found.names_entry_point = bool(named & {"setup", "draw"})


def _binds_function(node: Node) -> bool:
    value = node.child_by_field_name("value") or node.child_by_field_name("right")
    return value is not None and value.type in FUNCTIONS


def _is_root_object(node: Node, declared: Declarations) -> bool:
    """`brush` or a global object, not rebound by the sketch."""
    return (
        node.type == "identifier" and node_text(node) in GLOBAL_OBJECTS | {"brush"} and not is_declared(node, declared)
    )


def _call(node: Node, found: SketchInventory, declared: Declarations, canvases: list[bool]) -> None:
    function, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
    if function is None:
        return
    if function.type == "import":
        found.external_access.append("import()")
        return
    if function.type == "member_expression":
        obj, name = function.child_by_field_name("object"), node_text(function.child_by_field_name("property"))
        if obj is not None and node_text(obj) == "brush":
            found.brush_calls[name] += 1
        elif obj is not None and (obj.type == "this" or node_text(obj) in GLOBAL_OBJECTS) and name in PRIMITIVES:
            found.bare_primitives.append(_snippet(function))
        if name in TEXT_CALLS - {"text"} or (name == "text" and node_text(obj) in GLOBAL_OBJECTS | {"this"}):
            found.text_drawing.append(_snippet(function))
        return
    name = node_text(function)
    if function.type != "identifier" or is_declared(function, declared):
        return
    first = args.named_children[0] if args is not None and args.named_children else None
    if name in PRIMITIVES:
        found.bare_primitives.append(name)
    elif name in TEXT_CALLS:
        found.text_drawing.append(name)
    elif name in TIMERS and first is not None and first.type in ("string", "template_string", "binary_expression"):
        found.external_access.append(f"{name} with a string of code")
    elif name == "createCanvas" and args is not None:
        # WEBGL, p5.WEBGL or the constant's value, "webgl".
        canvases.append(any(node_text(a).split(".")[-1].strip("\"'").upper() == "WEBGL" for a in args.named_children))


def _reference(node: Node, found: SketchInventory, declared: Declarations) -> None:
    name, parent = node_text(node), node.parent
    if name in EXTERNAL_NAMES:
        found.external_access.append(name)
    elif name == "drawingContext" and not is_declared(node, declared):
        found.bare_primitives.append(name)
    elif name == "location" and parent is not None and parent.type == "assignment_expression":
        if parent.child_by_field_name("left") == node and not is_declared(node, declared):
            found.external_access.append("location =")
    elif _is_root_object(node, declared) and parent is not None:
        static_member = parent.type == "member_expression" and parent.child_by_field_name("object") == node
        if not static_member and parent.type != "subscript_expression":  # subscripts are reported on their own
            found.computed_access.append(f"{name} used as a value")


def _member(node: Node, found: SketchInventory) -> None:
    obj, prop = node.child_by_field_name("object"), node_text(node.child_by_field_name("property"))
    owner = node_text(obj)
    if owner == "brush":
        found.brush_members.add(prop)
    if prop in EXTERNAL_PROPERTIES or (owner in GLOBAL_OBJECTS | {"this"} and prop in EXTERNAL_NAMES):
        found.external_access.append(_snippet(node))
    elif owner in GLOBAL_OBJECTS and prop in GLOBAL_ONLY_PROPERTIES:
        (found.computed_access if prop == "brush" else found.external_access).append(_snippet(node))
    elif owner == "p5" and prop in ("prototype", "instance"):
        found.bare_primitives.append(f"p5.{prop}")
