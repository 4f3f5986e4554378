"""Getting a sketch out of a completion, and a static inventory of it read from a real JavaScript parse tree.

The tree comes from tree-sitter, so a name inside a comment, a string or a longer identifier (`// ellipse`,
`"fetch"`, `retrieval`) is never a call. Entry points: p5 runs `setup`/`draw` only when they are properties
of `window`: a top-level function declaration, a top-level `var`, or an assignment. A top-level `let`/`const`
setup is never called (measured: the page waits until its deadline), so it makes the text a sketch but is not
a visible entry point. Every other rule is in `ground.sketch_rules`, enforced by `rewards.gate`.
"""

from __future__ import annotations

import re
from functools import cache
from itertools import zip_longest

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser

from ground.js_scope import FUNCTIONS, ScopeWalk, descendants, name_of, node_text
from ground.prompt import ALLOWLIST
from ground.sketch_rules import ENTRY_DEFINERS, LISTS, Reader, SketchInventory
from ground.source_hazards import character_hazards, html_comment_hazards


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
    """The sketch in a completion, or None when the text defines neither `setup` nor `draw`; reads the entry points
    alone, not the whole inventory (the length term ran every rule again to learn this)."""
    source = candidate_source(completion)
    if not source:
        return None
    found = SketchInventory()
    root = _parse(source.encode("utf-8", "replace"))
    _entry_points(root, found, descendants(root, ENTRY_DEFINERS))
    return source if found.names_entry_point else None


@cache
def language() -> Language:
    return Language(tree_sitter_javascript.language())


def _parse(code: bytes) -> Node:
    return Parser(language()).parse(code).root_node


def inventory(source: str, allowlist: tuple[str, ...] = ALLOWLIST) -> SketchInventory:
    """Parse `source` and list its definitions, brush calls and every rule breach in the module docstring.

    Linear in the source, whatever its nesting (`bench.static_check` times the shapes that were not)."""
    code = source.encode("utf-8", "replace")
    root = _parse(code)
    found = SketchInventory(ambiguous_source=character_hazards(source))
    if root.has_error:  # a MISSING `)` is an anonymous node, which the scope walk does not visit
        _syntax_errors(root, found, end_of_code=len(code.rstrip()))
    reader = Reader(found, ScopeWalk(root), code)
    reader.scope.walk(reader.read)
    reader.finish()
    _entry_points(root, found, reader.definers)
    found.ambiguous_source += html_comment_hazards(code, reader.inert)
    found.webgl = bool(reader.canvases) and all(reader.canvases)
    found.outside_allowlist = sorted(found.brush_members - set(allowlist))
    found.syntax_error_lines = sorted(set(found.syntax_error_lines))
    for name in LISTS:
        setattr(found, name, sorted(set(getattr(found, name))))
    return found


def _syntax_errors(root: Node, found: SketchInventory, end_of_code: int) -> None:
    """ERROR and MISSING nodes: at the end of the text the reply was cut off, before it the code is wrong."""
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.is_error or node.is_missing:
            if node.end_byte >= end_of_code:
                found.truncated = True
            else:
                found.syntax_error_lines.append(node.start_point.row + 1)


def _entry_points(root: Node, found: SketchInventory, definers: list[Node]) -> None:
    """Which of setup and draw p5 can see (`definers`: every node of ENTRY_DEFINERS in the tree)."""
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
        name_of(n.child_by_field_name("name"))
        for n in definers
        if n.type != "variable_declarator" or _binds_function(n)
    }
    found.defines_setup, found.defines_draw = "setup" in visible, "draw" in visible
    found.names_entry_point = bool(named & {"setup", "draw"})


def _binds_function(node: Node) -> bool:
    value = node.child_by_field_name("value") or node.child_by_field_name("right")
    return value is not None and value.type in FUNCTIONS
