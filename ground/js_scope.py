"""Which names a JavaScript parse tree binds, and where: enough scope resolution for the gate's rules.

`ground.sketch_rules` asks one question of it: does this identifier refer to something the sketch
itself declared (a helper named `circle`), or to a global (p5's `circle`)? Scopes are blocks, functions, loops and
catch clauses and class expressions; `var` is kept to its block rather than hoisted to its function, which can
only make a name look undeclared (and so be checked) more often, never less.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from tree_sitter import Node


SCOPES = frozenset(
    "program statement_block function_declaration function_expression generator_function_declaration "
    "arrow_function method_definition for_statement for_in_statement catch_clause class switch_body".split()
)
FUNCTIONS = frozenset({"function_expression", "arrow_function", "generator_function"})
DECLARATIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "class_declaration", "variable_declarator"}
)
PARAMETERS = FUNCTIONS | {"function_declaration", "generator_function_declaration", "method_definition"}

# Scope node id -> names bound directly in that scope.
Declarations = dict[int, set[str]]


# JavaScript lets an identifier spell any letter as an escape: `\u0065val` is `eval`, `f\u{65}tch` is `fetch`.
# Leading zeros are allowed inside the braces (`\u{0000000065}` is `e` to V8).
_ESCAPE = re.compile(r"\\u\{0*([0-9a-fA-F]{1,6})\}|\\u([0-9a-fA-F]{4})")


def node_text(node: Node | None) -> str:
    """A node's source text with unicode escapes decoded, so names compare as the engine sees them."""
    text = node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""
    return (
        _ESCAPE.sub(lambda m: chr(min(int(m.group(1) or m.group(2), 16), 0x10FFFF)), text) if "\\u" in text else text
    )


def name_of(node: Node | None) -> str:
    """The name an identifier (or `this`) spells, escapes decoded; "" for any other node. The rules compare names, and
    reading a whole expression's text at every node of a chain nested thousands deep made the check quadratic."""
    return node_text(node) if node is not None and node.type in ("identifier", "this") else ""


def descendants(root: Node, types: set[str] | frozenset[str]) -> list[Node]:
    """Every named node under `root` (itself included) of one of `types`; iterative, as hostile code nests deep."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if node.type in types:
            out.append(node)
    return out


def declarations(root: Node) -> Declarations:
    """The names each scope binds directly: declarations, parameters, a named function expression's own name."""
    declared: Declarations = {}

    def bind(scope: Node | None, pattern: Node | None) -> None:
        if scope is not None and pattern is not None:
            declared.setdefault(scope.id, set()).update(_bound_names(pattern))

    # Top-down with each node's enclosing scope carried along: tree-sitter finds a node's parent by walking down
    # from the root, so climbing `.parent` from every declaration was quadratic in the nesting depth.
    stack: list[tuple[Node, Node | None]] = [(root, None)]
    while stack:
        node, scope = stack.pop()
        kind = node.type
        inner = node if kind in SCOPES else scope
        stack.extend([(child, inner) for child in node.named_children])
        if kind in DECLARATIONS:
            bind(scope, node.child_by_field_name("name"))
        if kind in PARAMETERS:
            bind(node, node.child_by_field_name("parameters") or node.child_by_field_name("parameter"))
        if kind in ("function_expression", "catch_clause", "class"):
            bind(node, node.child_by_field_name("name") or node.child_by_field_name("parameter"))
        if kind == "for_in_statement" and node.child_by_field_name("kind") is not None:
            bind(node, node.child_by_field_name("left"))  # for (const [t, w] of outline): the loop's own names
    return declared


def _bound_names(pattern: Node) -> list[str]:
    """Names a binding pattern introduces; default values are expressions, not bindings."""
    names, stack = [], [pattern]
    while stack:
        node = stack.pop()
        if node.type in ("identifier", "shorthand_property_identifier_pattern"):
            names.append(node_text(node))
        elif node.type in ("assignment_pattern", "object_assignment_pattern"):
            stack.extend(n for n in [node.child_by_field_name("left")] if n is not None)
        elif node.type == "pair_pattern":  # its key, computed or not, binds nothing (walking it was quadratic)
            stack.extend(n for n in [node.child_by_field_name("value")] if n is not None)
        else:
            stack.extend(node.named_children)
    return names


class ScopeWalk:
    """Every named node of a tree once, parents before children, knowing at each which names are in scope, whether it
    is class code, and every visited node's parent. One pass, so a source nested thousands deep costs no more
    than a flat one: tree-sitter's `Node.parent` walks down from the root, so climbing ancestors per identifier
    was quadratic (docs/decisions.md, "The gate").

    Class code is strict, so `this` there is an instance or undefined, never the page's global object; a class
    member's computed name (`[this.x]() {}`) is evaluated around the class, so it does not count as class code.
    """

    def __init__(self, root: Node) -> None:
        self.root = root
        self.declared = declarations(root)
        self.visible: Counter[str] = Counter()
        self.class_depth = 0
        self.parents: dict[int, Node] = {}

    def walk(self, visit: Callable[[Node, str], None]) -> None:
        """Call `visit(node, its type)` for every named node, parents first, iteratively (a hostile source nests
        deeper than Python's recursion limit)."""
        stack: list[tuple[Node, bool]] = [(self.root, False)]
        parents, declared, visible = self.parents, self.declared, self.visible
        while stack:
            node, leaving = stack.pop()
            step = -1 if leaving else 1
            names = declared.get(node.id)
            if names:
                visible.update(dict.fromkeys(names, step))
            kind = node.type
            if kind == "class_body":
                self.class_depth += step
            elif kind == "computed_property_name" and self.grandparent_type(node) == "class_body":
                self.class_depth -= step
            if leaving:
                continue
            if names or kind in ("class_body", "computed_property_name"):
                stack.append((node, True))
            children = node.named_children
            for child in children:
                parents[child.id] = node
            stack.extend([(child, False) for child in reversed(children)])
            visit(node, kind)

    def parent(self, node: Node) -> Node | None:
        """The parent of a node the walk has reached (or one of its children)."""
        return self.parents.get(node.id)

    def grandparent_type(self, node: Node) -> str | None:
        parent = self.parent(node)
        grandparent = self.parent(parent) if parent is not None else None
        return grandparent.type if grandparent is not None else None

    def is_declared(self, identifier: Node) -> bool:
        """Whether `identifier`, a node under the one the walk stands on, names a binding of the sketch's own."""
        return self.visible[node_text(identifier)] > 0

    def declares(self, name: str) -> bool:
        """Whether `name` is bound by the sketch where the walk stands."""
        return self.visible[name] > 0

    @property
    def in_class(self) -> bool:
        return self.class_depth > 0


_STRING_ESCAPE = re.compile(
    r"\\(?:x([0-9a-fA-F]{2})|u\{0*([0-9a-fA-F]{1,6})\}|u([0-9a-fA-F]{4})|([0-7]{1,3})|(.))", re.S
)


def string_words(node: Node) -> list[str]:
    """The lower-cased words a string or template literal spells once its escapes are decoded, so
    `"\\x63onstructor"` and the legacy octal `"\\143onstructor"` both read as `constructor`."""

    def decode(match: re.Match) -> str:
        hexa = match.group(1) or match.group(2) or match.group(3)
        if hexa:
            return chr(min(int(hexa, 16), 0x10FFFF))
        return chr(int(match.group(4), 8)) if match.group(4) else match.group(5)

    # A template's substitutions are code, read where the walk reaches them: its own words are in its other parts,
    # and reading its whole text made templates nested in templates quadratic.
    parts = node.children if node.type == "template_string" else [node]
    raw = b"".join(b" " if part.type == "template_substitution" else part.text or b"" for part in parts)
    text = _STRING_ESCAPE.sub(decode, raw.decode("utf-8", "replace"))
    return re.findall(r"[a-z_$][\w$]*", text.lower())
