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
from watercolour.prompt import ALLOWLIST, JS_NAMESPACES
from watercolour.sketch_names import (
    EXTERNAL_NAMES,
    EXTERNAL_PROPERTIES,
    GLOBAL_OBJECTS,
    GLOBAL_ONLY_PROPERTIES,
    PERMITTED_FUNCTIONS,
    PRIMITIVES,
    REFLECTIVE_PROPERTIES,
    TEXT_CALLS,
    TIMERS,
    Role,
    global_use,
)
from watercolour.source_hazards import character_hazards, html_comment_hazards


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
    found = SketchInventory(ambiguous_source=character_hazards(source))
    _entry_points(root, found)
    declared = declarations(root)
    end_of_code = len(code.rstrip())
    canvases: list[bool] = []
    inert: list[tuple[int, int]] = []  # byte ranges of comments and strings
    stack = [root]
    while stack:  # iterative: a hostile source nests deeper than Python's recursion limit
        node = stack.pop()
        stack.extend(node.children)
        kind = node.type
        if node.is_error or node.is_missing:
            if node.end_byte >= end_of_code:
                found.truncated = True
            else:
                found.syntax_error_lines.append(node.start_point.row + 1)
        elif kind == "call_expression":
            _call(node, found, declared, canvases)
        elif kind in ("identifier", "shorthand_property_identifier"):
            _reference(node, found, declared)
        elif kind == "member_expression":
            _member(node, found)
        elif kind == "subscript_expression":
            _subscript(node, found, declared)
        elif kind in ("comment", "string", "template_string", "regex"):
            inert.append((node.start_byte, node.end_byte))
            if kind != "comment" and REFLECTIVE_PROPERTIES & set(_decoded_words(node)):
                found.external_access.append(
                    f"a string naming {sorted(REFLECTIVE_PROPERTIES & set(_decoded_words(node)))[0]}"
                )
        elif kind == "this" and not _inside_class(node):
            found.unlisted_names.append("this: outside a class it is the page's global object")
        elif kind in ("pair_pattern", "shorthand_property_identifier_pattern"):
            _pattern_key(node, found)
        elif kind in ("with_statement", "debugger_statement", "meta_property"):
            _construct(node, found)
        elif kind in ("import_statement", "export_statement"):
            found.external_access.append(kind.removesuffix("_statement"))
        elif kind == "new_expression" and node_text(node.child_by_field_name("constructor")) == "p5":
            found.bare_primitives.append("new p5")
    found.ambiguous_source += html_comment_hazards(code, inert)
    found.webgl = bool(canvases) and all(canvases)
    found.outside_allowlist = sorted(found.brush_members - set(allowlist))
    found.syntax_error_lines = sorted(set(found.syntax_error_lines))
    for name in LISTS:
        setattr(found, name, sorted(set(getattr(found, name))))
    return found


LISTS = ("bare_primitives", "text_drawing", "external_access", "computed_access", "unlisted_names", "global_writes")


def _pattern_key(node: Node, found: SketchInventory) -> None:
    """Destructuring reads properties too: `const { constructor: F } = f` is `f.constructor`."""
    key = node.child_by_field_name("key") if node.type == "pair_pattern" else node
    if key is not None and key.type == "computed_property_name":
        found.computed_access.append(f"{_snippet(node)}: destructuring by a computed key")
    elif node_text(key) in REFLECTIVE_PROPERTIES:
        found.external_access.append(f"{_snippet(node)}: destructuring {node_text(key)}")


def _construct(node: Node, found: SketchInventory) -> None:
    if node.type == "with_statement":
        found.computed_access.append("with (...)")
    else:
        found.unlisted_names.append(f"{_snippet(node)}: not a construct the prompt permits")


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
    elif name in TIMERS and first is not None and _unwrapped(first).type in _STRINGY:
        found.external_access.append(f"{name} with a string of code")
    elif name == "createCanvas" and args is not None:
        # WEBGL, p5.WEBGL or the constant's value, "webgl".
        canvases.append(any(node_text(a).split(".")[-1].strip("\"'").upper() == "WEBGL" for a in args.named_children))


_STRINGY = frozenset({"string", "template_string", "binary_expression"})


def _unwrapped(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    return node


def _reference(node: Node, found: SketchInventory, declared: Declarations) -> None:
    name, parent = node_text(node), node.parent
    if name in EXTERNAL_NAMES:
        found.external_access.append(name)
    if is_declared(node, declared) or parent is None:
        return
    role, member = _role(node)
    violation = global_use(name, role, member)
    if violation is not None:
        code, detail = violation
        (found.unlisted_names if code == "name_outside_allowlist" else found.global_writes).append(detail)
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


_PATTERNS = frozenset({"array_pattern", "object_pattern", "pair_pattern", "rest_pattern", "assignment_pattern"})


def _role(node: Node) -> tuple[Role, str]:
    """How the expression `node` is used by its parent, and the static member read from it if any."""
    parent = node.parent
    assert parent is not None
    kind = parent.type
    if kind == "member_expression" and parent.child_by_field_name("object") == node:
        member = node_text(parent.child_by_field_name("property"))
        return ("member_write" if _is_written(parent) else "member"), member
    if kind == "call_expression" and parent.child_by_field_name("function") == node:
        holder = parent.parent
        if holder is not None and holder.type == "await_expression":
            holder = holder.parent
        return ("statement" if holder is not None and holder.type == "expression_statement" else "call"), ""
    if kind == "new_expression" and parent.child_by_field_name("constructor") == node:
        return "new", ""
    return ("write" if _is_written(node) else "value"), ""


def _is_written(node: Node) -> bool:
    """Whether `node` is the target of an assignment, an update, a `delete` or a for-in/of loop head."""
    while node.parent is not None and node.parent.type in _PATTERNS:
        node = node.parent
    parent = node.parent
    if parent is None:
        return False
    if parent.type in ("assignment_expression", "augmented_assignment_expression", "for_in_statement"):
        return parent.child_by_field_name("left") == node
    if parent.type == "update_expression":
        return True
    return parent.type == "unary_expression" and node_text(parent.child_by_field_name("operator")) == "delete"


def _inside_class(node: Node) -> bool:
    """Class code is strict, so `this` there is an instance or undefined, never the page's global object; but a
    computed member name (`[this.x]() {}`) is evaluated outside the class, where `this` is the page's."""
    parent = node.parent
    while parent is not None and parent.type != "class_body":
        if parent.type == "computed_property_name" and parent.parent is not None:
            class_body = parent.parent.parent
            if class_body is not None and class_body.type == "class_body":
                parent = class_body  # skip this class: the name is evaluated around it
        parent = parent.parent
    return parent is not None


_ESCAPES = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u\{([0-9a-fA-F]{1,6})\}|u([0-9a-fA-F]{4})|([0-7]{1,3})|(.))", re.S)


def _decoded_words(node: Node) -> list[str]:
    """The words a string or template literal spells once its escapes are decoded (`"\\x63onstructor"`)."""
    text = (node.text or b"").decode("utf-8", "replace")

    def decode(m: re.Match) -> str:
        hexa = m.group(1) or m.group(2) or m.group(3)
        if hexa:
            return chr(min(int(hexa, 16), 0x10FFFF))
        return chr(int(m.group(4), 8)) if m.group(4) else m.group(5)

    return re.findall(r"[A-Za-z_$][\w$]*", _ESCAPES.sub(decode, text).lower())


def _is_own_value(node: Node, declared: Declarations) -> bool:
    """Whether a member chain starts from the sketch's own value (`a` in `a.b[c].d()[e]`, or the result of a
    permitted maths call), rather than from a global, `this` outside a class or an expression it cannot follow."""
    while True:
        if node.type == "call_expression":
            function = node.child_by_field_name("function")
            if function is None:
                return False
            owner = function.child_by_field_name("object") if function.type == "member_expression" else function
            if owner is not None and owner.type == "identifier" and not is_declared(owner, declared):
                name = node_text(owner)
                return name in PERMITTED_FUNCTIONS if owner == function else name in JS_NAMESPACES
            node = function
        elif node.type in ("member_expression", "subscript_expression", "parenthesized_expression"):
            inner = node.child_by_field_name("object") if node.named_children else None
            if node.type == "parenthesized_expression" and node.named_children:
                inner = node.named_children[0]
            if inner is None:
                return False
            node = inner
        elif node.type == "identifier":
            return is_declared(node, declared)
        else:
            return node.type in ("array", "object", "string", "template_string", "number") or (
                node.type == "this" and _inside_class(node)
            )


def _subscript(node: Node, found: SketchInventory, declared: Declarations) -> None:
    """Indexing is for the sketch's own arrays and objects, by keys that are not spelled as strings."""
    obj, index = node.child_by_field_name("object"), node.child_by_field_name("index")
    if obj is None:
        return
    if not _is_own_value(obj, declared):
        found.computed_access.append(f"{_snippet(node)}: only the sketch's own arrays and objects may be indexed")
    elif index is not None and index.type != "string" and descendants(index, {"string", "template_string"}):
        # A lone literal is read by the string rule (no `"constructor"`); a built one could spell anything.
        found.computed_access.append(f"{_snippet(node)}: a key built from strings")


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
