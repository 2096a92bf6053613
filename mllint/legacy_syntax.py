"""Pre-3.7 code that uses ``async`` as a name: linted through a same-width renaming.

Before Python 3.7, ``async`` was an ordinary identifier outside ``async def``, so old
PyTorch code wrote ``x.cuda(async=True)`` (the argument was later renamed
``non_blocking``) or ``def to_gpu(batch, async=False)``. Today's parsers reject such a
file, and all mllint could say was ML000. When a file does not parse,
``rename_async_names`` tokenizes it and renames every ``async`` that is used as a name
(not followed by ``def``, ``for`` or ``with``) to a five-letter identifier that does not
occur anywhere in the file. Every line and column stays where it was, so findings on the
renamed text are the file's own; ``restore`` puts ``async`` back into the text of a
finding. The engine never offers a fix on such a file: a fix's text would carry the
renamed name into the user's code, and the fixed file would not parse either.

Only the standard library (``tokenize``) is used here.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from typing import List, Optional, Tuple

__all__ = ["Renamed", "rename_async_names"]

_KEYWORD = "async"
_ASYNC_STATEMENTS = {"def", "for", "with"}  # `async def/for/with`: the keyword itself
_SKIPPED = {tokenize.NL, tokenize.COMMENT}  # tokens between `async` and what it starts
# Same length as "async", valid identifiers, not keywords: the first one absent from the file.
_CANDIDATES = ("asyn_", "_sync", "a_ync", "as_nc", "asy_c", "asyn0", "asyn1", "asyn2")


@dataclass(frozen=True)
class Renamed:
    """The source with ``async`` names renamed to ``name`` (same lines, same columns)."""

    source: str
    name: str
    count: int  # how many names were renamed

    def restore(self, text: Optional[str]) -> Optional[str]:
        """`text` (a message) with the renamed name written as ``async`` again."""
        if not text or self.name not in text:
            return text
        return re.sub(rf"\b{self.name}\b", _KEYWORD, text)


def rename_async_names(source: str) -> Optional[Renamed]:
    """The source with each ``async`` used as a name renamed, or None when there is none
    or when no candidate name is free. Where the source stops tokenizing, the names
    before that point are renamed."""
    if _KEYWORD not in source:
        return None
    name = next((c for c in _CANDIDATES if c not in source), None)
    if name is None:
        return None
    tokens = []
    try:  # the tokens up to a tokenizer error (an unclosed bracket at the end) will do
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.ERRORTOKEN:  # an unterminated string...: no further
                break
            tokens.append(token)
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    spots: List[Tuple[int, int]] = []  # (line, column) of each `async` used as a name
    for index, token in enumerate(tokens):
        if token.type != tokenize.NAME or token.string != _KEYWORD:
            continue
        following = next((t for t in tokens[index + 1:] if t.type not in _SKIPPED), None)
        if following is not None and following.type == tokenize.NAME and following.string in _ASYNC_STATEMENTS:
            continue
        spots.append(token.start)
    if not spots:
        return None
    lines = io.StringIO(source).readlines()  # the lines as the tokenizer numbered them
    for line, column in spots:
        text = lines[line - 1]
        lines[line - 1] = text[:column] + name + text[column + len(_KEYWORD):]
    return Renamed("".join(lines), name, len(spots))


def legacy_async(source: str, path: str = "<unknown>"):
    """For a source CPython rejects: a ``legacy_syntax.Renamed`` stand-in with every
    ``async`` used as a name (pre-3.7 code: ``x.cuda(async=True)``) renamed to a name of the
    same width, when that makes it parse; else None (the file's ML000 stands)."""
    renamed = rename_async_names(source)
    if renamed is None or compile_error(renamed.source, path):
        return None
    return renamed


def compile_error(source: str, path: str) -> bool:
    """Whether CPython itself rejects the source (``engine.compile_error``)."""
    try:
        compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False
