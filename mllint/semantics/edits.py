"""Fixes as local edits: render only the statement that changes, not the whole module.

A rule describes its fix as a LibCST change (``old`` node -> ``new`` node). Replacing
``old`` in the whole module, rendering the module and diffing it against the file costs
time in proportion to the file, for every finding: a 3,500-line file with a few findings
took seconds, a file with a hundred findings minutes. Here the change is applied to the
smallest statement that holds ``old`` and sits directly in a body (a module's or an
indented block's): that statement is rendered with the indentation of the blocks around
it, before and after the change, and the two renderings are diffed line by line. The
rendering of the original statement is compared with the file's own lines before
anything is trusted; when they differ (or ``old`` is the module itself), the caller
falls back to the whole-module edit.
"""

from __future__ import annotations

import difflib
from typing import Callable, List, Optional, Sequence, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState

from mllint.findings import Edit, split_lines
from mllint.pyast import statement_starts
from mllint.semantics.tree import Parents, replace


def _in_body(node: cst.CSTNode, parent: Optional[cst.CSTNode]) -> bool:
    return isinstance(node, cst.BaseStatement) and isinstance(parent, (cst.Module, cst.IndentedBlock)) and any(
        item is node for item in parent.body
    )


def local_edits(
    module: cst.Module,
    lines: List[str],
    parents: Parents,
    line_of: Callable[[cst.CSTNode], int],
    old: cst.CSTNode,
    new: cst.CSTNode,
) -> Optional[List[Edit]]:
    """Whole-line edits of the source (its ``lines``, as findings.split_lines gives them)
    that replace ``old`` by ``new``, computed on the statement holding ``old``; None when
    that cannot be done here (use the module).

    ``line_of(node)`` is the 1-based line where a statement's own code starts."""
    if old is module:
        return None
    statement: Optional[cst.CSTNode] = old
    parent = parents.get(old)
    while statement is not None and not _in_body(statement, parent):
        statement, parent = parent, parents.get(parent) if parent is not None else None
    if statement is None or parent is None:
        return None
    indents: List[str] = []
    for block in parents.ancestors(statement):
        if isinstance(block, cst.IndentedBlock):
            indents.append(module.default_indent if block.indent is None else block.indent)
    indents.reverse()
    replaced = replace(parents, old, new, within=statement)
    if not isinstance(replaced, cst.BaseStatement):
        return None
    before = _render(module, indents, statement)
    after = _render(module, indents, replaced)
    found = _first_line(lines, split_lines(before), line_of(statement))
    if found is None:
        return None
    first, at_end_without_newline = found
    if at_end_without_newline:  # the module leaves out the newline its last statement ends with
        before, after = _without_final_newline(before), _without_final_newline(after)
    a, b = split_lines(before), split_lines(after)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            edits.append(Edit(first + i1, 1, first + i2, 1, "".join(b[j1:j2])))
    return edits


def _render(module: cst.Module, indents: Sequence[str], node: cst.CSTNode) -> str:
    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.indent_tokens.extend(indents)
    node._codegen(state)
    return "".join(state.tokens)


def _without_final_newline(text: str) -> str:
    for newline in ("\r\n", "\n", "\r"):
        if text.endswith(newline):
            return text[: -len(newline)]
    return text


def _first_line(lines: List[str], rendered: List[str], code_line: int) -> Optional[Tuple[int, bool]]:
    """The 1-based line of ``lines`` where ``rendered`` (a statement with its leading
    blank lines, comments and decorators) starts, ending at or after ``code_line``; and
    whether it is the file's last statement, whose final newline the file does not have."""
    if not rendered:
        return None
    for first in range(min(code_line, len(lines)), 0, -1):
        if first + len(rendered) - 1 < code_line:
            break
        if lines[first - 1 : first - 1 + len(rendered)] == rendered:
            return first, False
    # the last line of the file may lack the newline the rendering ends with
    for first in range(min(code_line, len(lines)), 0, -1):
        if first + len(rendered) - 1 < code_line:
            break
        window = lines[first - 1 : first - 1 + len(rendered)]
        if (len(window) == len(rendered) and first - 1 + len(rendered) == len(lines) and window[:-1] == rendered[:-1]
                and _without_final_newline(rendered[-1]) == window[-1] != rendered[-1]):
            return first, True
    return None


# --- positions of one top-level statement ----------------------------------------------------


def top_statement_lines(module: cst.Module, source: str, starts: Optional[List[int]] = None) -> Optional[List[int]]:
    """For each statement of ``module.body``, the line where its own code starts, from
    CPython's parser (`starts`: `screen.statement_starts` of its parse, when the caller
    has parsed it already); None when the two trees do not line up (then positions come
    from rendering the whole module)."""
    if starts is None:
        import ast

        try:
            starts = statement_starts(ast.parse(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    lines: List[int] = []
    index = 0
    for statement in module.body:
        if index >= len(starts):
            return None
        lines.append(starts[index])
        index += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return lines if index == len(starts) else None


def statement_positions(module: cst.Module, lines: List[str], parents: Parents, node: cst.CSTNode, code_lines: List[int]):
    """The positions (PositionProvider's CodeRanges) of every node of the top-level
    statement holding ``node``, by rendering that statement alone from the line where it
    starts; None when it cannot be placed."""
    top, parent = node, parents.get(node)
    while parent is not None and parent is not module:
        top, parent = parent, parents.get(parent)
    if parent is None:
        return None
    index = next((i for i, item in enumerate(module.body) if item is top), None)
    if index is None or index >= len(code_lines):
        return None
    found = _first_line(lines, split_lines(_render(module, (), top)), code_lines[index])
    if found is None:
        return None
    return rendered_positions(module, top, found[0])


def rendered_positions(module: cst.Module, node: cst.CSTNode, first_line: int = 1):
    """PositionProvider's ranges of ``node`` and everything in it, from one rendering of
    ``node`` (a top-level statement, or the module) starting at ``first_line``; without
    MetadataWrapper, whose resolve also walks the whole tree with a visitor."""
    from libcst.metadata import PositionProvider
    from libcst.metadata.position_provider import PositionProvidingCodegenState

    provider = PositionProvider()
    state = PositionProvidingCodegenState(
        default_indent=module.default_indent, default_newline=module.default_newline, provider=provider
    )
    state.line = first_line
    node._codegen(state)
    return provider._computed
