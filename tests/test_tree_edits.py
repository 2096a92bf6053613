"""The tree helpers that replace LibCST's visitors, local fix edits and statement-local
positions: each must give exactly what the whole-module LibCST operation gives."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import libcst as cst
import pytest

from mllint.findings import apply_edits, split_lines
from mllint.semantics.edits import local_edits, statement_positions, top_statement_lines
from mllint.semantics.model import _positions
from mllint.semantics.tree import SCOPE_NODES, NodeIndex, Parents, child_nodes, children, visit, walk

ROOT = Path(__file__).resolve().parent.parent

TRICKY = [
    # header comment, decorators with comments between them, a nested class, elif chains
    '#!/usr/bin/env python\n# header\n\nimport torch  # trailing\n\n\n@decorator(1)\n# between\n@other\n'
    'def f(a, *, b=2):\n    """doc"""\n    if a:\n        x = 1; y = 2\n    elif b:\n        pass\n    else:\n'
    '        for i in range(3):\n            # comment\n            x += i\n    return x\n\n\nclass C:\n'
    '    def m(self):\n        while True:\n            break\n        try:\n            pass\n'
    '        except Exception as e:\n            raise\n        finally:\n            pass\n',
    # tabs for indentation, no final newline
    "def g():\n\tif True:\n\t\treturn [1,\n\t\t\t2]\n\treturn 3",
    # CRLF line endings, one-line suites, a with statement, a lambda and comprehensions
    "import os\r\nif os: print(1)\r\nwith open('x') as h, open('y') as k:\r\n    data = [l for l in h if l]\r\n"
    "    f = lambda q: {q: q for q in data}\r\n",
    # line continuation and a multi-line string
    'x = 1 + \\\n    2\ns = """a\nb"""\nasync def h():\n    async with a as b:\n        await b\n',
]


def _sources():
    out = list(TRICKY)
    for path in sorted((ROOT / "fixtures").rglob("*.py"))[:30]:
        out.append(path.read_text(encoding="utf-8"))
    return out


SOURCES = _sources()


@pytest.mark.parametrize("source", SOURCES)
def test_children_in_libcst_order(source):
    module = cst.parse_module(source)
    stack = [module]
    while stack:
        node = stack.pop()
        expected = list(node.children)
        got = children(node)
        assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), type(node).__name__
        assert {id(n) for n in child_nodes(node)} == {id(n) for n in expected}
        stack.extend(expected)


@pytest.mark.parametrize("source", SOURCES)
def test_visit_calls_the_hooks_libcst_calls(source):
    module = cst.parse_module(source)

    class Recorder(cst.CSTVisitor):
        def __init__(self):
            super().__init__()
            self.seen = []

        def visit_Name(self, node):
            self.seen.append(("Name", id(node)))

        def visit_Call(self, node):
            self.seen.append(("Call", id(node)))
            return len(node.args) < 2  # skip the children of calls with two or more arguments

        def leave_Call(self, node):
            self.seen.append(("/Call", id(node)))

        def visit_FunctionDef(self, node):
            self.seen.append(("def", id(node)))

    ours, theirs = Recorder(), Recorder()
    visit(module, ours)
    module.visit(theirs)
    assert ours.seen == theirs.seen


@pytest.mark.parametrize("source", SOURCES)
def test_parents(source):
    from mllint.semantics.tree import _TRIVIA

    module = cst.parse_module(source)
    parents = Parents(module)
    count = 0
    stack = [module]
    while stack:
        node = stack.pop()
        if parents.get(node) is None and node is not module:
            continue  # under punctuation or whitespace: not mapped, nor its children
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            items = value if isinstance(value, (tuple, list)) else [value]
            for child in (c for c in items if isinstance(c, cst.CSTNode)):
                if _TRIVIA.match(field.name):
                    assert parents.get(child) is None
                else:
                    assert parents.get(child) is node
                    count += 1
                stack.append(child)
    assert parents.get(module) is None
    assert sum(1 for _ in parents.items()) == count
    names = [n for n in walk(module) if isinstance(n, cst.Name)]
    assert all(parents.get(n) is not None for n in names)  # every name is reachable


def _position_line(positions, node):
    return positions[node].start.line


@pytest.mark.parametrize("source", SOURCES)
def test_local_edits_equal_the_whole_module_rewrite(source):
    module = cst.parse_module(source)
    parents = Parents(module)
    positions = _positions(module)
    changed = 0
    for node in walk(module):
        if isinstance(node, cst.IndentedBlock):
            new = node.with_changes(body=[cst.parse_statement("inserted()\n")] + list(node.body))
        elif isinstance(node, cst.Call):
            new = node.with_changes(func=cst.Name("other"))
        elif isinstance(node, cst.FunctionDef):
            new = node.with_changes(decorators=list(node.decorators) + [cst.Decorator(cst.Name("added"))])
        else:
            continue
        edits = local_edits(module, split_lines(source), parents, lambda n: _position_line(positions, n), node, new)
        assert edits is not None, module.code_for_node(node)
        assert apply_edits(source, edits) == module.deep_replace(node, new).code
        changed += 1
    assert changed or "def" not in source


def test_local_edits_leave_the_module_itself_to_the_caller():
    module = cst.parse_module("x = 1\n")
    assert local_edits(module, ["x = 1\n"], Parents(module), lambda n: 1, module, module) is None


@pytest.mark.parametrize("source", SOURCES)
def test_statement_positions_equal_positions_of_the_module(source):
    module = cst.parse_module(source)
    full = _positions(module)
    parents = Parents(module)
    lines = top_statement_lines(module, source)
    assert lines is not None and len(lines) == len(module.body)
    for statement in module.body:
        nodes = list(walk(statement))
        deepest = [n for n in nodes if parents.get(n) is not None or n is statement][-1]  # not punctuation
        local = statement_positions(module, split_lines(source), parents, deepest, lines)
        assert local is not None
        for node in nodes:
            assert local[node] == full[node], module.code_for_node(node)[:60]
    for line in module.header:  # not in a statement: the caller renders the whole module
        assert statement_positions(module, split_lines(source), parents, line, lines) is None


@pytest.mark.parametrize("source", SOURCES[:4])
def test_replace_copies_only_the_path(source):
    from mllint.semantics.tree import replace

    module = cst.parse_module(source)
    parents = Parents(module)
    for node in walk(module):
        if not isinstance(node, (cst.Call, cst.Name, cst.IndentedBlock)):
            continue
        new = cst.Name("zz") if not isinstance(node, cst.IndentedBlock) else node.with_changes(body=[cst.parse_statement("pass\n")])
        fixed = replace(parents, node, new)
        assert fixed.code == module.deep_replace(node, new).code
        changed = [a is not b for a, b in zip(module.body, fixed.body)]
        assert sum(changed) == 1  # the statement holding the node; every other one is shared


@pytest.mark.parametrize("source", TRICKY)
def test_parse_without_validation_gives_libcsts_tree_and_validates_afterwards(source):
    from mllint.semantics.tree import parse_module

    parsed = parse_module(source)
    assert parsed.deep_equals(cst.parse_module(source)) and parsed.code == source
    with pytest.raises(cst.CSTValidationError):  # nodes built after the parse are checked again
        cst.Name("not a name")
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def (:\n")
    with pytest.raises(cst.CSTValidationError):  # also after a parse that failed
        cst.Name("1x")


def test_conditions_render_their_text_when_first_compared():
    from mllint.semantics import build_model
    from mllint.semantics.model import Cond

    source = "for b in loader:\n    if step  %  10 == 0 :\n        opt.step()\n    else:\n        pass\n"
    model = build_model(cst.parse_module(source), source, "c.py")
    conds = {c for effect in model.effects for c in effect.ctx.conds}
    assert conds and all(c.text == "step % 10 == 0" for c in conds)
    yes = [c for c in conds if c.branch == "if"]
    assert yes and yes[0] == Cond("step % 10 == 0", "if") and hash(yes[0]) == hash(Cond("step % 10 == 0", "if"))
    assert yes[0] != Cond("step % 10 == 0", "else")


_INDEXED = '''
import torch as T

@decorate(k=1)
class A(Base, metaclass=M):
    def f(self, x: int = g(1), *, y=lambda z: h(z)) -> T.Tensor:
        a = b if c(d) else e(f)
        for i in range(3):
            a += i
            def inner():
                return k(i)
        return a[1:2:3], [q(w) for w in x if p(w)]

try:
    r = s(t)
except (E, F) as err:
    u(err)
from .m import (n as o, v)
'''


def _walk_below(node, skip):
    for child in children(node):
        yield child
        if not (skip and isinstance(child, skip)):
            yield from _walk_below(child, skip)


def test_node_index_answers_what_a_walk_finds_in_source_order():
    module = cst.parse_module(_INDEXED)
    index = NodeIndex(module)
    every = list(walk(module))
    kinds_asked = [cst.Call, cst.Name, (cst.BaseSmallStatement, cst.For), cst.Return, cst.BaseExpression, cst.CSTNode]
    skips = [(), SCOPE_NODES, (cst.FunctionDef,), (cst.FunctionDef, cst.Lambda)]
    indexed = {id(n) for n in index.nodes(cst.CSTNode)} | {id(module)}
    for within in every:
        if id(within) not in indexed:
            continue  # punctuation and whitespace are not indexed
        for kinds in kinds_asked:
            for skip in skips:
                expected = [n for n in _walk_below(within, skip) if isinstance(n, kinds) and id(n) in indexed]
                assert index.nodes(kinds, within, skip=skip) == expected
                assert index.has(kinds, within, skip=skip) == bool(expected)
            assert index.nodes(kinds, within, nested=False) == index.nodes(kinds, within, skip=SCOPE_NODES)
    call = index.nodes(cst.Call)[0]
    assert index.enclosing(call, cst.ClassDef) is module.body[1]
    assert index.contains(module.body[1], call) and not index.contains(call, module.body[1])
    assert index.get(call) is Parents(module).get(call)


def test_node_index_walks_a_node_it_does_not_hold():
    module = cst.parse_module("x = f(1)\n")
    other = cst.parse_expression("g(h(2))")
    assert [n.func.value for n in NodeIndex(module).nodes(cst.Call, other)] == ["h"]
