"""Import aliases and dotted names.

A light table of our own: ``import torch as T`` maps ``T`` to ``torch``; ``from torch
import no_grad`` maps ``no_grad`` to ``torch.no_grad``; ``import torch.nn.functional as
F`` maps ``F`` to ``torch.nn.functional``. Much cheaper than LibCST's
QualifiedNameProvider, and deterministic.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import libcst as cst


def dotted(node: Optional[cst.BaseExpression]) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def ref_of(node: Optional[cst.BaseExpression]) -> Optional[str]:
    """A stable text for an object reference: dotted names, ``x[0]``-style subscripts
    of them, and calls that return the same object (``model.to(device)``)."""
    name = dotted(node)
    if name is not None:
        return name
    if isinstance(node, cst.Subscript):
        base = ref_of(node.value)
        if base is not None and len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, (cst.Integer, cst.SimpleString, cst.Name)):
                key = index.value.value
                return f"{base}[{key}]"
    return None


def call_argument(call: cst.Call, position: int, keyword: str) -> Optional[cst.BaseExpression]:
    """The argument a call passes for a parameter: by its keyword, else the positional one at
    ``position`` (None when absent or behind a ``*args``)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) > position and not any(a.star for a in positional[: position + 1]):
        return positional[position].value
    return None


def target_names(target: cst.BaseExpression, name_of=ref_of) -> List[str]:
    """The names an assignment target binds, through tuple/list unpacking and starred
    elements (``a, (b, *c) = ...``), each as ``name_of`` spells it (None: skipped)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        out: List[str] = []
        for element in target.elements:
            out.extend(target_names(element.value, name_of))
        return out
    if isinstance(target, cst.StarredElement):
        return target_names(target.value, name_of)
    name = name_of(target)
    return [name] if name else []


def after_docstring(body) -> int:
    """Index of the first statement after a leading docstring in a block's or module's
    body (0 when there is none): where a fix inserts statements at the top."""
    if body and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr):
        if isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            return 1
    return 0


def _module_name(node) -> str:
    # ImportFrom.module / Import names are Attribute/Name chains.
    return dotted(node) or ""


class ImportTable:
    """Local name -> fully qualified dotted name, from every import in the file."""

    def __init__(self) -> None:
        self.aliases: Dict[str, str] = {}

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = full
            else:
                top = full.split(".")[0]
                self.aliases[top] = top

    def add_import_from(self, node: cst.ImportFrom) -> None:
        if node.relative:
            base = "." * len(node.relative) + (_module_name(node.module) if node.module else "")
        else:
            base = _module_name(node.module) if node.module else ""
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _module_name(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{base}.{name}" if base else name

    def qualify(self, name: Optional[str]) -> Optional[str]:
        """Qualified form of a dotted local name (``T.no_grad`` -> ``torch.no_grad``)."""
        if not name:
            return name
        head, _, rest = name.partition(".")
        full = self.aliases.get(head)
        if full is None:
            return name
        return f"{full}.{rest}" if rest else full

    def qualname(self, node: Optional[cst.BaseExpression]) -> Optional[str]:
        return self.qualify(dotted(node))

    def imports_module(self, prefix: str) -> bool:
        return any(v == prefix or v.startswith(prefix + ".") for v in self.aliases.values())


def shorten(text: str, limit: int = 30) -> str:
    """Code quoted in a one-line message: whitespace collapsed, cut to `limit` characters
    with ``...`` (the full text is in the code frame and in the finding's detail)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
