"""Small facts of CPython's ``ast`` that the screen (mllint/screen.py) and the semantic model
(its statement positions, its evaluation words) both read. At the bottom of the house: it
imports nothing of mllint."""

from __future__ import annotations

import ast
from typing import List, Optional

# Strings that name an evaluation split when passed to a function that picks its data by
# them (``get_batch("val")``; ``Phases.eval_split_call``).
EVAL_SPLITS = frozenset("val valid validation test eval evaluation holdout heldout".split())


def statement_starts(tree: ast.Module) -> List[int]:
    """The line where each top-level statement of `tree` starts its own code (a decorated
    definition: its first decorator); the model places its positions with them."""
    starts = []
    for node in tree.body:
        decorators = getattr(node, "decorator_list", None)
        starts.append(decorators[0].lineno if decorators else node.lineno)
    return starts


def dotted(node) -> Optional[str]:
    """``a.b.c`` for a Name or an Attribute chain over one, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None
