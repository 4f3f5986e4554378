"""The rules a sketch's parse tree is read against, one node at a time, for `ground.sketch.inventory`.

The rules, decided here and enforced by `rewards.gate`:

- **Brush methods** are the static members named on the global `brush` (`brush.X`, called or not). Their
  results are p5.brush's internal shapes (with `hatch` and stroke methods): discarded or returned, never kept.
  A call takes the arguments the prompt lists (`ground.prompt.BRUSH_METHODS`): no more than it lists, at least
  those without a default, and the kind of each literal; a spread or a computed value is left to the render, where the stand-in checks every call.
- **Names by allowlist** (`ground.sketch_names`): a global the prompt does not permit, or a permitted one
  used otherwise (a p5 setter's result, `Math` as a value), is `unlisted_names`; writing a global or an
  undeclared name is `global_writes`. `this` outside a class body is the page's global object: refused.
- **Bare primitives** are p5 drawing functions called as globals (`ellipse(...)`, `window.rect(...)`), plus
  ways around them (`new p5`, `p5.prototype`, `drawingContext`). A call resolves to the sketch's own function
  when a binding of that name is in scope: p5 2.x then either calls the sketch's function (a `let` helper)
  or refuses to start at all (a top-level `function ellipse` makes p5 throw "Cannot redefine property").
- **External access** names (`fetch`, `eval`, `document`, ...) are refused wherever they are referenced, even
  when the sketch declares them, as are members, destructured keys and strings that name `constructor`,
  `__proto__`, `caller` and kin (escapes decoded): they lead from any value to the Function constructor.
- **Computed access**: indexing is for the sketch's own values (`pts[i][0]`, `PALETTE[name]`), by keys not
  built from strings; `brush` and the global objects may appear only as the object of a static member; a
  `with` block and destructuring by a computed key are refused.
- **Ambiguous source** (`ground.source_hazards`): text V8 may read differently from tree-sitter.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field

from tree_sitter import Node

from ground.js_scope import ScopeWalk, name_of, node_text, string_words
from ground.prompt import BRUSH_ARGUMENTS, BRUSH_REQUIRED, CANVAS_SIZE, JS_NAMESPACES, brush_arguments_wanted
from ground.records import ViolationCode
from ground.sketch_names import (
    EXTERNAL_NAMES,
    EXTERNAL_PROPERTIES,
    GLOBAL_OBJECTS,
    GLOBAL_ONLY_PROPERTIES,
    PERMITTED_FUNCTIONS,
    PRIMITIVES,
    REFLECTIVE_PROPERTIES,
    TEXT_CALLS,
    TIMERS,
    UseOf,
    global_use,
)


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
    unlisted_names: list[str] = field(default_factory=list)  # globals and uses the prompt does not permit
    global_writes: list[str] = field(default_factory=list)
    ambiguous_source: list[str] = field(default_factory=list)  # where tree-sitter and V8 may disagree
    canvas_size: list[str] = field(default_factory=list)  # createCanvas with a literal side other than 600
    brush_arguments: list[str] = field(default_factory=list)  # a brush call the prompt's signature does not fit
    syntax_error_lines: list[int] = field(default_factory=list)
    truncated: bool = False

    def counts(self) -> dict[str, int]:
        """Shape statistics for metrics: call sites of the painting methods."""
        calls = self.brush_calls
        return dict(shapes=calls["beginShape"], vertices=calls["vertex"], circles=calls["circle"], fills=calls["fill"])


LISTS = ("bare_primitives", "text_drawing", "external_access", "computed_access", "unlisted_names", "global_writes")
# The kind a literal argument is, by its node type; any other expression's kind is known only when it runs.
LITERAL_KINDS = {"number": "number", "string": "string", "template_string": "string", "true": "boolean"}
LITERAL_KINDS |= {"false": "boolean", "null": "null", "undefined": "undefined", "array": "list", "object": "object"}
INERT = frozenset({"comment", "string", "template_string", "regex"})
# What tree-sitter-javascript parses and Node 20's V8 refuses to compile (measured): JSX, which hid a call in its
# text (`<b>ellipse()</b>`), decorators and `using` declarations. No sketch needs them: a syntax error.
NOT_COMPILED = frozenset({"jsx_element", "jsx_self_closing_element", "decorator", "using_declaration"})


# Bytes of source a detail's snippet is read from: a node's whole text, read at every node of a chain nested
# thousands deep, made the check quadratic.
SNIPPET_BYTES = 1024
# String literals: an index holding one is "built from strings".
STRINGS = frozenset({"string", "template_string"})
# The nodes that can name setup or draw, collected for `ground.sketch`'s entry points as the walk passes them.
ENTRY_DEFINERS = frozenset({"function_declaration", "function_expression", "variable_declarator"})


def snippet(code: bytes, node: Node) -> str:
    """The offending code as written (escapes left alone), on one line and short, for verdict details."""
    text = code[node.start_byte : min(node.end_byte, node.start_byte + SNIPPET_BYTES)]
    return " ".join(text.decode("utf-8", "replace").split())[:80]


def short_text(node: Node, limit: int = 64) -> str:
    """A node's text when it is at most `limit` bytes long, else "": for comparing with a short constant."""
    return node_text(node) if node.end_byte - node.start_byte <= limit else ""


def _unwrapped(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    return node


class Reader:
    """Reads each node once as the scope walk reaches it; chain, holder, pattern and string answers are memoised by
    node and details read a bounded snippet, so a source nested thousands deep stays linear."""

    def __init__(self, found: SketchInventory, scope: ScopeWalk, code: bytes) -> None:
        self.found, self.scope, self.code = found, scope, code
        self.canvases: list[bool] = []
        self.inert: list[tuple[int, int]] = []  # byte ranges of comments and strings
        self.use_of = UseOf(scope)
        self.own: dict[int, bool] = {}
        self.string_starts: list[int] = []  # in walk order, which is source order
        self.indexed: list[tuple[Node, Node]] = []  # (subscript, index) of the sketch's own values, for `finish`
        self.definers: list[Node] = []

    def snippet(self, node: Node) -> str:
        return snippet(self.code, node)

    def read(self, node: Node, kind: str) -> None:
        found = self.found
        if kind == "call_expression":
            self.call(node)
        elif kind in ("identifier", "shorthand_property_identifier"):
            self.reference(node)
        elif kind == "member_expression":
            self.member(node)
        elif kind == "subscript_expression":
            self.subscript(node)
        elif kind in INERT:
            # A template's substitutions are code: only its literal text is inert.
            parts = [c for c in node.children if c.type == "string_fragment"] if kind == "template_string" else [node]
            if kind in STRINGS:
                self.string_starts.append(node.start_byte)
            self.inert += [(part.start_byte, part.end_byte) for part in parts]
            named = sorted(REFLECTIVE_PROPERTIES & set(string_words(node))) if kind != "comment" else []
            if named:
                found.external_access.append(f"a string naming {named[0]}")
        elif kind == "this" and not self.scope.in_class:
            found.unlisted_names.append("this: outside a class it is the page's global object")
        elif kind in ("pair_pattern", "shorthand_property_identifier_pattern"):
            key = node.child_by_field_name("key") if kind == "pair_pattern" else node
            if key is not None and key.type == "computed_property_name":
                found.computed_access.append(f"{self.snippet(node)}: destructuring by a computed key")
            elif node_text(key) in REFLECTIVE_PROPERTIES:  # const { constructor: F } = f is f.constructor
                found.external_access.append(f"{self.snippet(node)}: destructuring {node_text(key)}")
        elif kind in NOT_COMPILED:
            found.syntax_error_lines.append(node.start_point.row + 1)
        elif kind == "with_statement":
            found.computed_access.append("with (...)")
        elif kind in ("debugger_statement", "meta_property"):
            found.unlisted_names.append(f"{self.snippet(node)}: not a construct the prompt permits")
        elif kind in ("import_statement", "export_statement"):
            found.external_access.append(kind.removesuffix("_statement"))
        elif kind == "new_expression" and name_of(node.child_by_field_name("constructor")) == "p5":
            found.bare_primitives.append("new p5")
        elif kind in ENTRY_DEFINERS:
            self.definers.append(node)

    def call(self, node: Node) -> None:
        found = self.found
        function, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        if function is None:
            return
        if function.type == "import":
            found.external_access.append("import()")
            return
        if function.type == "member_expression":
            obj, name = function.child_by_field_name("object"), node_text(function.child_by_field_name("property"))
            if name_of(obj) == "brush":
                found.brush_calls[name] += 1
                if name in BRUSH_ARGUMENTS and args is not None and not self.fits(name, args):
                    found.brush_arguments.append(f"{self.snippet(node)}: {brush_arguments_wanted(name)}")
                if not self.result_discarded(node):
                    found.unlisted_names.append(
                        f"{self.snippet(node)}: its result is p5.brush's own shape, whose methods are not on the list"
                    )
            elif name_of(obj) in GLOBAL_OBJECTS | {"this"} and name in PRIMITIVES:
                found.bare_primitives.append(self.snippet(function))
            if name in TEXT_CALLS - {"text"} or (name == "text" and name_of(obj) in GLOBAL_OBJECTS | {"this"}):
                found.text_drawing.append(self.snippet(function))
            return
        if function.type != "identifier" or self.scope.is_declared(function):
            return
        name = node_text(function)
        first = args.named_children[0] if args is not None and args.named_children else None
        if name in PRIMITIVES:
            found.bare_primitives.append(name)
        elif name in TEXT_CALLS:
            found.text_drawing.append(name)
        elif (
            name in TIMERS
            and first is not None
            and _unwrapped(first).type in ("string", "template_string", "binary_expression")
        ):
            found.external_access.append(f"{name} with a string of code")
        elif name == "createCanvas" and args is not None:
            # WEBGL, p5.WEBGL or the constant's value, "webgl".
            webgl = any(short_text(a).split(".")[-1].strip("\"'").upper() == "WEBGL" for a in args.named_children)
            self.canvases.append(webgl)
            sides = [_unwrapped(a) for a in args.named_children[:2]]
            if any(side.type == "number" and node_text(side) != str(CANVAS_SIZE) for side in sides):
                found.canvas_size.append(f"{self.snippet(node)}: the canvas is {CANVAS_SIZE} x {CANVAS_SIZE}")

    def fits(self, name: str, args: Node) -> bool:
        """Whether a brush call's arguments can fit its signature: no more than it lists, no fewer than it requires,
        and each literal of the listed kind (a spread, or any expression but a literal, is left to the render, which
        checks every call)."""
        values = [arg for arg in args.named_children if arg.type != "comment"]
        if any(arg.type == "spread_element" for arg in values):
            return True
        found, kinds = [LITERAL_KINDS.get(_unwrapped(arg).type) for arg in values], BRUSH_ARGUMENTS[name]
        return BRUSH_REQUIRED[name] <= len(found) <= len(kinds) and all(
            kind in (None, wanted) or (wanted, kind) == ("close", "boolean")
            for kind, wanted in zip(found, kinds, strict=False)
        )

    def result_discarded(self, call: Node) -> bool:
        """Whether a call's value is thrown away, or handed back by an arrow body or a return to its caller (the
        common `pts.forEach((p) => brush.circle(...))`; a caller that keeps it is out of this check's reach).
        `brush.circle` returns `[plot, x, y]` and `brush.endShape` its polygon: p5.brush's internals, with
        hatch and stroke methods outside the ten."""
        parent = self.use_of.holder(call)  # past `a, b;`, `ok && brush.circle(...);`
        return parent is None or parent.type in ("expression_statement", "arrow_function", "return_statement")

    def reference(self, node: Node) -> None:
        found, name, parent = self.found, node_text(node), self.scope.parent(node)
        if name in EXTERNAL_NAMES:
            found.external_access.append(name)
        if self.scope.declares(name) or parent is None:
            return
        role, member = self.use_of(node)
        violation = global_use(name, role, member)
        if violation is not None:
            code, detail = violation
            (found.unlisted_names if code == ViolationCode.NAME_OUTSIDE_ALLOWLIST else found.global_writes).append(
                detail
            )
        if name == "drawingContext":
            found.bare_primitives.append(name)
        elif name == "location" and role == "write":
            found.external_access.append("location =")
        elif name in PRIMITIVES | TEXT_CALLS and role not in ("call", "statement"):
            found.unlisted_names.append(f"{name}: p5's own {name}, taken as a value")
        elif name in GLOBAL_OBJECTS | {"brush"} and "member" not in role and parent.type != "subscript_expression":
            found.computed_access.append(f"{name} used as a value")
        elif name == "p5" and role != "new" and member not in ("prototype", "instance"):
            found.unlisted_names.append("p5: not one of the names the prompt permits")

    def member(self, node: Node) -> None:
        found = self.found
        obj, prop = node.child_by_field_name("object"), node_text(node.child_by_field_name("property"))
        owner = name_of(obj)
        if owner == "brush":
            found.brush_members.add(prop)
        if prop in EXTERNAL_PROPERTIES or (owner in GLOBAL_OBJECTS | {"this"} and prop in EXTERNAL_NAMES):
            found.external_access.append(self.snippet(node))
        elif owner in GLOBAL_OBJECTS and prop in GLOBAL_ONLY_PROPERTIES:
            (found.computed_access if prop == "brush" else found.external_access).append(self.snippet(node))
        elif owner == "p5" and prop in ("prototype", "instance"):
            found.bare_primitives.append(f"p5.{prop}")

    def subscript(self, node: Node) -> None:
        """Indexing is for the sketch's own arrays and objects, by keys not built from strings."""
        obj, index = node.child_by_field_name("object"), node.child_by_field_name("index")
        if obj is None:
            return
        if not self.is_own_value(obj):
            self.found.computed_access.append(
                f"{self.snippet(node)}: only the sketch's own arrays and objects may be indexed"
            )
        elif index is not None and index.type != "string":
            self.indexed.append((node, index))

    def finish(self) -> None:
        """The checks that need the whole tree read: an index built from strings holds a string literal, which starts
        inside its byte range (checked once, by bisecting the strings' starts: walking each index's subtree made
        `a[a[a[...]]]` quadratic, 28 s at 4 kB)."""
        for node, index in self.indexed:
            at = bisect.bisect_left(self.string_starts, index.start_byte)
            if at < len(self.string_starts) and self.string_starts[at] < index.end_byte:
                # A lone literal is read by the string rule (no `"constructor"`); a built one could spell anything.
                self.found.computed_access.append(f"{self.snippet(node)}: a key built from strings")

    def is_own_value(self, node: Node) -> bool:
        """Whether a member chain starts from the sketch's own value (`a` in `a.b[c].d()[e]`, or a permitted maths
        call's result), rather than from a global, `this` outside a class or an expression it cannot follow."""
        path, answer = [], None
        while answer is None:
            if node.id in self.own:
                answer = self.own[node.id]
                break
            path.append(node.id)
            inner = None
            if node.type == "call_expression":
                function = node.child_by_field_name("function")
                owner = (
                    function.child_by_field_name("object")
                    if function and function.type == "member_expression"
                    else function
                )
                if owner is not None and owner.type == "identifier" and not self.scope.is_declared(owner):
                    name = node_text(owner)
                    answer = name in PERMITTED_FUNCTIONS if owner == function else name in JS_NAMESPACES
                inner = function
            elif node.type in ("member_expression", "subscript_expression"):
                inner = node.child_by_field_name("object")
            elif node.type == "parenthesized_expression":
                inner = node.named_children[0] if node.named_children else None
            elif node.type == "identifier":
                answer = self.scope.is_declared(node)
            else:
                answer = node.type in ("array", "object", "string", "template_string", "number") or (
                    node.type == "this" and self.scope.in_class
                )
            if answer is None:
                if inner is None:
                    answer = False
                else:
                    node = inner
        self.own.update(dict.fromkeys(path, answer))
        return answer
