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

import bisect
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


# Node classes whose contents are a scope of their own: `NodeIndex.nodes(..., nested=False)`
# stops at them (it lists them, not what is inside).
SCOPE_NODES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_SOURCE_ORDER: Dict[type, "operator.attrgetter"] = {}


def _source_getter(kind: type) -> "operator.attrgetter":
    """A getter of the node class's substantive field values (`_substantive_fields`'s fields)
    in the order of the source, which is the order LibCST's ``_visit_and_replace_children``
    visits them (an ``Arg``'s keyword before its value, a function's decorators before its
    name): that method names each field it visits as a string constant, in its visiting
    order. Fields it never visits (strings such as ``Name.value``) come last."""
    getter = _SOURCE_ORDER.get(kind)
    if getter is None:
        names = [f.name for f in dataclasses.fields(kind) if not _TRIVIA.match(f.name)]
        ordered: List[str] = []

        def scan(code) -> None:
            for const in code.co_consts:
                if type(const) is str and const in names and const not in ordered:
                    ordered.append(const)
                elif hasattr(const, "co_consts"):
                    scan(const)

        method = getattr(kind, "_visit_and_replace_children", None)
        if method is not None and hasattr(method, "__code__"):
            scan(method.__code__)
        ordered += [name for name in names if name not in ordered]
        getter = _SOURCE_ORDER[kind] = operator.attrgetter(*ordered, "__class__") if ordered else (lambda node: ())
    return getter


class NodeIndex(Parents):
    """One walk over a tree, in source order, that every question about where nodes are is
    answered from: each node's parent (the `Parents` interface), and, by position in the
    walk, the nodes of a type under a node (`nodes`, `has`), whether one node is under
    another (`contains`) and the nearest enclosing node of a type (`enclosing`). Built on
    first use. Like `Parents`, nodes of punctuation and whitespace fields are left out.

    A node's descendants are the positions after it up to its `_stop`; the nodes of each
    class are kept as sorted positions, so a query is two bisections and a slice."""

    def __init__(self, root: cst.CSTNode):
        super().__init__(root)
        self._order: List[cst.CSTNode] = []  # the nodes in source order (a preorder walk)
        self._position: Dict[int, int] = {}  # id(node) -> its index in _order
        self._stop: List[int] = []  # position just past the node's last descendant
        self._scope: List[int] = []  # position of the innermost SCOPE_NODES strictly above (-1: none)
        self._by_class: Dict[type, List[int]] = {}
        self._kinds: Dict[object, List[int]] = {}  # kinds asked for -> their positions, merged

    def _built(self) -> Dict[int, Tuple[cst.CSTNode, cst.CSTNode]]:
        if self._map is None:
            self._build()
        return self._map  # type: ignore[return-value]

    def _build(self) -> None:
        found: Dict[int, Tuple[cst.CSTNode, cst.CSTNode]] = {}
        order, position, stop, scope, by_class = self._order, self._position, self._stop, self._scope, self._by_class
        scopes = SCOPE_NODES
        getters = _SOURCE_ORDER
        stack: list = [(self.root, None, -1)]
        pop, push = stack.pop, stack.append
        while stack:
            item = pop()
            if type(item) is int:
                stop[item] = len(order)
                continue
            node, parent, outer = item
            here = len(order)
            order.append(node)
            position[id(node)] = here
            stop.append(0)
            scope.append(outer)
            kind = type(node)
            positions = by_class.get(kind)
            if positions is None:
                positions = by_class[kind] = []
            positions.append(here)
            if parent is not None:
                found[id(node)] = (node, parent)
            push(here)
            inner = here if kind in scopes else outer
            getter = getters.get(kind)
            if getter is None:
                getter = _source_getter(kind)
            kids = list(_nodes_in(getter(node)))
            for child in reversed(kids):
                push((child, node, inner))
        self._map = found

    def _at(self, node: cst.CSTNode) -> Optional[int]:
        self._built()
        here = self._position.get(id(node))
        if here is None or self._order[here] is not node:
            return None
        return here

    def _positions_of(self, kinds) -> List[int]:
        found = self._kinds.get(kinds)
        if found is None:
            lists = [positions for kind, positions in self._by_class.items() if issubclass(kind, kinds)]
            found = lists[0] if len(lists) == 1 else sorted(p for positions in lists for p in positions)
            self._kinds[kinds] = found
        return found

    def nodes(self, kinds, within: Optional[cst.CSTNode] = None, *, nested: bool = True,
              skip: tuple = ()) -> List[cst.CSTNode]:
        """The nodes that are instances of ``kinds`` (a class or a tuple of classes) strictly
        under ``within`` (the root when None), in source order. With ``nested=False``, not
        the nodes inside a function, class or lambda under ``within`` (that function, class
        or lambda itself is listed when it is of ``kinds``); ``skip``, a tuple of classes,
        leaves out the nodes inside those instead (``skip=(cst.FunctionDef,)``: not inside
        nested functions, but inside nested classes and lambdas). A node outside the tree
        is walked."""
        if within is None:
            within = self.root
        if not nested:
            skip = SCOPE_NODES
        here = self._at(within)
        if here is None:
            return [n for n in _walk_below(within, skip) if isinstance(n, kinds)]
        positions = self._positions_of(kinds)
        low = bisect.bisect_right(positions, here)
        high = bisect.bisect_left(positions, self._stop[here], low)
        order = self._order
        if not skip:
            return [order[p] for p in positions[low:high]]
        if skip == SCOPE_NODES:
            own = here if type(within) in SCOPE_NODES else self._scope[here]
            scope = self._scope
            return [order[p] for p in positions[low:high] if scope[p] == own]
        return [order[p] for p in positions[low:high] if not self._inside(order[p], within, skip)]

    def _inside(self, node: cst.CSTNode, within: cst.CSTNode, skip: tuple) -> bool:
        """Whether an instance of ``skip`` sits between ``within`` and ``node`` (both excluded)."""
        current = self.get(node)
        while current is not None and current is not within:
            if isinstance(current, skip):
                return True
            current = self.get(current)
        return False

    def has(self, kinds, within: Optional[cst.CSTNode] = None, *, nested: bool = True, skip: tuple = ()) -> bool:
        """Whether `nodes` would list any."""
        if within is None:
            within = self.root
        here = self._at(within)
        if here is None or not nested or skip:
            return bool(self.nodes(kinds, within, nested=nested, skip=skip))
        positions = self._positions_of(kinds)
        low = bisect.bisect_right(positions, here)
        return low < len(positions) and positions[low] < self._stop[here]

    def contains(self, outer: cst.CSTNode, node: cst.CSTNode) -> bool:
        """Whether ``node`` is ``outer`` or under it."""
        top, here = self._at(outer), self._at(node)
        if top is None or here is None:
            return node is outer or any(n is node for n in _walk_below(outer, ()))
        return top <= here < self._stop[top]

    def enclosing(self, node: cst.CSTNode, kinds) -> Optional[cst.CSTNode]:
        """The nearest node above ``node`` that is an instance of ``kinds`` (None: none)."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, kinds):
                return ancestor
        return None


def _walk_below(node: cst.CSTNode, skip: tuple) -> Iterator[cst.CSTNode]:
    """The nodes under ``node`` in source order (`NodeIndex.nodes` for a node it does not
    hold), not entering instances of ``skip``."""
    for child in children(node):
        yield child
        if not (skip and isinstance(child, skip)):
            yield from _walk_below(child, skip)


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
