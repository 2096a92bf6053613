"""Walking LibCST trees without LibCST's visitors.

``node.children`` and ``module.visit(visitor)`` go through ``_visit_and_replace_children``,
which constructs (and validates) a new copy of every node it passes, even for a visitor
that changes nothing: on a 3,500-line file a walk cost a second. Here children are read
straight from each node's dataclass fields. `children` keeps LibCST's order (the order
of the source): the order of a node class's fields in the source is learnt once, from
LibCST itself, per class and per set of fields present. `Parents` maps each node of a
tree to its parent.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from typing import Dict, Iterator, List, Optional, Tuple

import libcst as cst

_IS_NODE: Dict[type, bool] = {}


def _no_validation(self) -> None:
    """Stands in for ``CSTNode.__post_init__`` while the parser builds a tree."""


def parse_module(source: str) -> cst.Module:
    """``cst.parse_module(source)`` without validating each node as it is built.

    Every node's ``__post_init__`` checks its own fields (``_validate``); the parser only
    builds valid trees, so for a parse this is pure cost: 1.6 s of 6.5 s parsing timm's
    sources (LibCST's own comment there: "avoid validating the tree when parsing a file").
    Nodes built later (a fix) are validated as always: the hook is put back before this
    returns. No node class of LibCST overrides ``__post_init__``; if one ever does, that
    class simply keeps validating."""
    node_class = cst.CSTNode
    validate = node_class.__dict__.get("__post_init__")
    if validate is None:  # not the LibCST this was written against: parse as it parses
        return cst.parse_module(source)
    node_class.__post_init__ = _no_validation
    try:
        return cst.parse_module(source)
    finally:
        node_class.__post_init__ = validate

# Fields holding only punctuation and whitespace (parentheses, commas, blank and comment
# lines): nothing asks for their nodes' parents, and they are most of a tree's nodes.
# (builder.py skips these and a few more when it builds the model.)
TRIVIA_FIELDS = (
    r"whitespace_\w*|lpar|rpar|comma|semicolon|colon|dot|equal|star|leading_lines|lines_after_decorators|"
    r"header|footer|newline|trailing_whitespace|empty_lines|first_line|last_line|lbracket|rbracket|lbrace|rbrace"
)
_TRIVIA = re.compile(f"^({TRIVIA_FIELDS})$")
_ALL: Dict[type, "operator.attrgetter"] = {}
_SUBSTANTIVE: Dict[type, "operator.attrgetter"] = {}


def _getter(kind: type, cache: Dict[type, "operator.attrgetter"], trivia: bool) -> "operator.attrgetter":
    """A getter of the node class's dataclass field values, as a tuple (in declaration
    order; without `_TRIVIA` fields unless `trivia`). With fields, ``__class__`` is added
    last so that attrgetter returns a tuple even for one field."""
    getter = cache.get(kind)
    if getter is None:
        names = [f.name for f in dataclasses.fields(kind) if trivia or not _TRIVIA.match(f.name)]
        getter = cache[kind] = operator.attrgetter(*names, "__class__") if names else (lambda node: ())
    return getter


def _fields(node: cst.CSTNode) -> tuple:
    """The values of the node's dataclass fields (a tuple, in declaration order)."""
    return _getter(type(node), _ALL, True)(node)


def _substantive_fields(node: cst.CSTNode) -> tuple:
    """`_fields` without the punctuation and whitespace ones."""
    return _getter(type(node), _SUBSTANTIVE, False)(node)


def _is_node(value) -> bool:
    kind = type(value)
    known = _IS_NODE.get(kind)
    if known is None:
        known = _IS_NODE[kind] = isinstance(value, cst.CSTNode)
    return known


def _nodes_in(values: tuple) -> Iterator[cst.CSTNode]:
    """The nodes among field values (a field may hold a node or a sequence of them)."""
    for value in values:
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                if _is_node(item):
                    yield item
        elif _is_node(value):
            yield value


def child_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node's children, read from its fields (not in source order: see `children`)."""
    return _nodes_in(_fields(node))


class Parents:
    """Each node's parent in one tree, computed once on first use. Nodes of punctuation and
    whitespace fields (`_TRIVIA`: parentheses, commas, blank lines) are left out: their
    parent is None here."""

    def __init__(self, root: cst.CSTNode):
        self.root = root
        self._map: Optional[Dict[int, Tuple[cst.CSTNode, cst.CSTNode]]] = None  # id(child) -> (child, parent)

    def _built(self) -> Dict[int, Tuple[cst.CSTNode, cst.CSTNode]]:
        if self._map is None:
            found: Dict[int, Tuple[cst.CSTNode, cst.CSTNode]] = {}
            stack = [self.root]
            while stack:
                node = stack.pop()
                for child in _nodes_in(_substantive_fields(node)):
                    found[id(child)] = (child, node)
                    stack.append(child)
            self._map = found
        return self._map

    def get(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        pair = self._built().get(id(node))
        return pair[1] if pair is not None else None

    def items(self) -> Iterator[Tuple[cst.CSTNode, cst.CSTNode]]:
        """(node, parent) for every node but the root, in no particular order."""
        return iter(self._built().values())

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.get(node)
        while current is not None:
            yield current
            current = self.get(current)


_ORDER: Dict[Tuple[type, Tuple[bool, ...]], Tuple[int, ...]] = {}


def _holds_nodes(value) -> bool:
    kind = type(value)
    if kind is tuple or kind is list:
        return any(_is_node(item) for item in value)
    return _is_node(value)


def children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """``node.children`` (the children in source order), without copying the node."""
    values = _fields(node)
    key = (type(node), tuple(map(_holds_nodes, values)))
    order = _ORDER.get(key)
    if order is None:
        order = _ORDER[key] = _learn_order(node, values)
    out: List[cst.CSTNode] = []
    for index in order:
        value = values[index]
        kind = type(value)
        if kind is tuple or kind is list:
            out.extend(item for item in value if _is_node(item))
        else:
            out.append(value)
    return out


def _learn_order(node: cst.CSTNode, values) -> Tuple[int, ...]:
    """The field indexes of ``node`` in the order LibCST lists its children (once per shape)."""
    order: List[int] = []
    for child in node.children:
        for index, value in enumerate(values):
            if value is child or (type(value) in (tuple, list) and any(item is child for item in value)):
                if index not in order:
                    order.append(index)
                break
    return tuple(order)


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node under it, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


def _hooks(visitor_type: type, node_type: type) -> tuple:
    hooks = []
    for prefix in ("visit_", "leave_"):
        name = prefix + node_type.__name__
        method = getattr(visitor_type, name, None)
        hooks.append(None if method is None or method is getattr(cst.CSTVisitor, name, None) else method)
    return tuple(hooks)


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a visitor of ``visit_<Type>`` / ``leave_<Type>`` methods
    (``visit_<Type>`` returning False skips the children, as in LibCST), without copying
    the tree. Other hooks (``on_visit``, ``visit_<Type>_<field>``) are not called.

    The hooks found are cached for this walk only: visitors are often classes defined in a
    function, closing over its model; a cache that outlived the walk would keep them alive."""
    _visit(node, visitor, type(visitor), {})


def _visit(node: cst.CSTNode, visitor: cst.CSTVisitor, visitor_type: type, cache: Dict[type, tuple]) -> None:
    kind = type(node)
    hooks = cache.get(kind)
    if hooks is None:
        hooks = cache[kind] = _hooks(visitor_type, kind)
    enter, leave = hooks
    if enter is None or enter(visitor, node) is not False:
        for child in children(node):
            _visit(child, visitor, visitor_type, cache)
    if leave is not None:
        leave(visitor, node)


def replace(parents: Parents, old: cst.CSTNode, new: cst.CSTNode, within: Optional[cst.CSTNode] = None) -> cst.CSTNode:
    """The root of ``parents``' tree (or ``within``, an ancestor of ``old``) with ``old``
    replaced by ``new``: only the nodes on the path from ``old`` up are copied
    (``deep_replace`` copies every node); every other node is shared with the original
    tree, so an unchanged statement of the result *is* the original statement."""
    top = parents.root if within is None else within
    if old is top:
        return new
    child, replacement = old, new
    for ancestor in parents.ancestors(old):
        changes = {}
        for field in dataclasses.fields(ancestor):
            value = getattr(ancestor, field.name)
            if value is child:
                changes[field.name] = replacement
                break
            if type(value) in (tuple, list) and any(item is child for item in value):
                changes[field.name] = type(value)(replacement if item is child else item for item in value)
                break
        else:
            raise ValueError("node not found in its parent")
        child, replacement = ancestor, ancestor.with_changes(**changes)
        if child is top:
            return replacement
    raise ValueError("node not under the given root")
