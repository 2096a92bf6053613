"""Loop caps for ``--verify``: the sandbox copy of a flagged file gets the hand-written loops that
drive its flagged code capped at ``--steps`` iterations, so that a tutorial's
``for epoch in range(200):`` or ``while True:`` ends after a few passes, as a ``DataLoader`` does.

Capped: ``for`` and ``while`` statements (not comprehensions, not ``async for``) whose body holds a
flagged line, or calls a function of the same file that holds one, directly or through other
functions of the file (matched by name: ``train(...)``, ``self.train_epoch(...)``), and training
loops: loops whose body calls ``backward`` or a function of the file that does (a training loop
that runs before a flagged evaluation would otherwise run all its steps). Other loops (building
layers, reading a config) run as written.

Each capped ``for`` iterates ``__mllint_loop__(<iterable>, <lines>)`` and each capped ``while``
tests ``(<condition>) and __mllint_while__(<line>, <lines>)``; the harness installs both names as
builtins. ``lines`` are the flagged lines the loop runs, in its body or through the functions it
calls: the harness lets the loop run on until they have run (an evaluation every 200 steps), and
caps a training loop that runs none (``()``) from its first iteration. The rewrite is inline, so every line keeps its number: the
line maps between the original and a fixed variant, the watched lines and the user's tracebacks
stay true.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

LOOP = "__mllint_loop__"
WHILE = "__mllint_while__"


def _called_names(node: cst.CSTNode) -> Set[str]:
    """Names of the functions `node` calls: `f(...)` gives f, `obj.f(...)` gives f."""
    names: Set[str] = set()

    class Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            func = call.func
            if isinstance(func, cst.Name):
                names.add(func.value)
            elif isinstance(func, cst.Attribute):
                names.add(func.attr.value)

    node.visit(Calls())
    return names


class _Scan(cst.CSTVisitor):
    """Functions of the file: their line spans and the names they call."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        self.functions: List[Tuple[str, int, int, Set[str]]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        span = self.get_metadata(PositionProvider, node)
        self.functions.append((node.name.value, span.start.line, span.end.line, _called_names(node.body)))


TRAINING_CALLS = frozenset({"backward"})


def _callers(functions, reach: Set[str]) -> Set[str]:
    """`reach` with the names of the functions that call one of them, transitively."""
    reach = set(reach)
    changed = True
    while changed:
        changed = False
        for name, _, _, calls in functions:
            if name not in reach and calls & reach:
                reach.add(name)
                changed = True
    return reach


def _held_lines(functions, lines: Set[int]) -> Dict[str, Set[int]]:
    """Per function name, the flagged lines it runs: those inside it, and those of the functions it
    calls, transitively."""
    held: Dict[str, Set[int]] = {}
    for name, start, end, _ in functions:
        held.setdefault(name, set()).update(line for line in lines if start <= line <= end)
    changed = True
    while changed:
        changed = False
        for name, _, _, calls in functions:
            for callee in calls & held.keys():
                if not held[callee] <= held[name]:
                    held[name] |= held[callee]
                    changed = True
    return held


def _parenthesized(expression: cst.BaseExpression) -> cst.BaseExpression:
    return expression.with_changes(lpar=[cst.LeftParen(), *expression.lpar],
                                   rpar=[*expression.rpar, cst.RightParen()])


class _Cap(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, lines: Set[int], held: Dict[str, Set[int]], training: Set[str]) -> None:
        super().__init__()
        self.lines = lines
        self.held = held
        self.training = training
        self.capped: List[int] = []
        self._drives: Dict[cst.CSTNode, Tuple[Optional[Set[int]], int]] = {}

    def _note(self, node) -> None:
        """The flagged lines the loop runs (a set, empty for a training loop that runs none), or
        None for a loop that neither runs flagged code nor trains."""
        span = self.get_metadata(PositionProvider, node)
        calls = _called_names(node.body)
        driven = {line for line in self.lines if span.start.line <= line <= span.end.line}
        for name in calls & self.held.keys():
            driven |= self.held[name]
        drives: Optional[Set[int]] = driven if driven or calls & self.training else None
        self._drives[node] = (drives, span.start.line)

    @staticmethod
    def _lines(drives: Set[int]) -> cst.Tuple:
        return cst.Tuple([cst.Element(cst.Integer(str(line))) for line in sorted(drives)])

    def visit_For(self, node: cst.For) -> None:
        self._note(node)

    def visit_While(self, node: cst.While) -> None:
        self._note(node)

    def leave_For(self, original: cst.For, updated: cst.For) -> cst.For:
        drives, line = self._drives.pop(original)
        if drives is None or original.asynchronous is not None:
            return updated
        iterable = updated.iter
        if isinstance(iterable, cst.Tuple) and not iterable.lpar:
            iterable = _parenthesized(iterable)  # `for x in a, b:` iterates a tuple
        self.capped.append(line)
        return updated.with_changes(iter=cst.Call(func=cst.Name(LOOP), args=[
            cst.Arg(iterable), cst.Arg(self._lines(drives))]))

    def leave_While(self, original: cst.While, updated: cst.While) -> cst.While:
        drives, line = self._drives.pop(original)
        if drives is None:
            return updated
        self.capped.append(line)
        test = cst.BooleanOperation(
            left=_parenthesized(updated.test), operator=cst.And(),
            right=cst.Call(func=cst.Name(WHILE), args=[cst.Arg(cst.Integer(str(line))), cst.Arg(self._lines(drives))]))
        return updated.with_changes(test=test)


def cap_loops(source: str, lines: Iterable[int]) -> Tuple[str, List[int]]:
    """`source` with the loops that drive `lines` capped, and the lines of those loops. A source that
    does not parse is returned unchanged (the run reports the syntax error)."""
    wanted = set(lines)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return source, []
    wrapper = MetadataWrapper(module)
    scan = _Scan()
    wrapper.visit(scan)
    transformer = _Cap(wanted, _held_lines(scan.functions, wanted), _callers(scan.functions, set(TRAINING_CALLS)))
    capped = wrapper.visit(transformer).code
    return capped, sorted(transformer.capped)
