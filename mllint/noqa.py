"""Suppression comments: ``# noqa``, ``# noqa: ML001, ML002`` and ``# mllint: skip-file``."""

from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, FrozenSet, Optional

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_SKIP_FILE = re.compile(r"#\s*mllint:\s*skip-file\b")
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)

ALL = frozenset({"*"})


class Suppressions:
    def __init__(self, by_line: Dict[int, FrozenSet[str]], skip_file: bool):
        self.by_line = by_line
        self.skip_file = skip_file

    def suppresses(self, line: int, code: str) -> bool:
        codes = self.by_line.get(line)
        return bool(codes) and (codes is ALL or code in codes)


def _comments(source: str):
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # Fall back to a line scan for sources the tokenizer rejects.
        for number, text in enumerate(source.splitlines(), 1):
            if "#" in text:
                yield number, text[text.index("#"):]


def scan(source: str) -> Optional[Suppressions]:
    """Suppression comments of a file, or None when it has none (the common case)."""
    if "noqa" not in source and "mllint:" not in source:
        return None
    by_line: Dict[int, FrozenSet[str]] = {}
    skip_file = False
    for line, comment in _comments(source):
        if _SKIP_FILE.search(comment):
            skip_file = True
        match = _NOQA.search(comment)
        if match:
            codes = match.group("codes")
            by_line[line] = ALL if not codes else frozenset(c.upper() for c in _CODE.findall(codes))
    return Suppressions(by_line, skip_file)
