"""Which names a JavaScript parse tree binds, and where: enough scope resolution for the gate's rules.

`watercolour.sketch` asks one question of it: does this identifier refer to something the sketch itself
declared (a helper named `circle`), or to a global (p5's `circle`)? Scopes are blocks, functions, loops and
catch clauses and class expressions; `var` is kept to its block rather than hoisted to its function, which can
only make a name look undeclared (and so be checked) more often, never less.
"""

from __future__ import annotations

import re

from tree_sitter import Node


SCOPES = frozenset(
    "program statement_block function_declaration function_expression generator_function_declaration "
    "arrow_function method_definition for_statement for_in_statement catch_clause class".split()
)
FUNCTIONS = frozenset({"function_expression", "arrow_function", "generator_function"})
DECLARATIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "class_declaration", "variable_declarator"}
)

# Scope node id -> names bound directly in that scope.
Declarations = dict[int, set[str]]


# JavaScript lets an identifier spell any letter as an escape: `\u0065val` is `eval`, `f\u{65}tch` is `fetch`.
_ESCAPE = re.compile(r"\\u\{([0-9a-fA-F]{1,6})\}|\\u([0-9a-fA-F]{4})")


def node_text(node: Node | None) -> str:
    """A node's source text with unicode escapes decoded, so names compare as the engine sees them."""
    text = node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""
    return (
        _ESCAPE.sub(lambda m: chr(min(int(m.group(1) or m.group(2), 16), 0x10FFFF)), text) if "\\u" in text else text
    )


def descendants(root: Node, types: set[str]) -> list[Node]:
    """Every node under `root` (itself included) of one of `types`; iterative, as hostile code nests deep."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type in types:
            out.append(node)
    return out


def declarations(root: Node) -> Declarations:
    """The names each scope binds directly: declarations, parameters, a named function expression's own name."""
    declared: Declarations = {}

    def bind(scope: Node | None, pattern: Node | None) -> None:
        if scope is not None and pattern is not None:
            declared.setdefault(scope.id, set()).update(_bound_names(pattern))

    for node in descendants(root, set(SCOPES | DECLARATIONS)):
        if node.type in DECLARATIONS:
            bind(_scope_of(node.parent), node.child_by_field_name("name"))
        if node.type in FUNCTIONS | {"function_declaration", "method_definition"}:
            bind(node, node.child_by_field_name("parameters") or node.child_by_field_name("parameter"))
        if node.type in ("function_expression", "catch_clause", "class"):
            bind(node, node.child_by_field_name("name") or node.child_by_field_name("parameter"))
        if node.type == "for_in_statement" and node.child_by_field_name("kind") is not None:
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
        else:
            stack.extend(node.named_children)
    return names


def _scope_of(node: Node | None) -> Node | None:
    while node is not None and node.type not in SCOPES:
        node = node.parent
    return node


def is_declared(node: Node, declared: Declarations) -> bool:
    """Whether the identifier `node` refers to a binding of the sketch's own rather than a global."""
    name, scope = node_text(node), node.parent
    while scope is not None:
        if name in declared.get(scope.id, ()):
            return True
        scope = scope.parent
    return False
