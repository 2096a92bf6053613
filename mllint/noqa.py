"""Suppression comments: ``# noqa``, ``# noqa: ML001, ML002``, ``# mllint: skip-file`` and, for
the whole file, ``# mllint: noqa`` or ``# mllint: noqa: ML001, ML002`` (as Ruff's ``# ruff: noqa``).

A ``# noqa`` comment suppresses findings reported on its own line. A line that cannot
carry a comment, because its end lies inside a multi-line string or it ends with a
backslash continuation, is covered by the directive on the first line after it that can
(the line where that string or continuation ends), as in Ruff; ``--add-noqa`` puts its
directives there (``noqa_line``).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_SKIP_FILE = re.compile(r"#\s*mllint:\s*skip-file\b")
# a comment that is a file-level directive as a whole: ``# mllint: noqa`` or ``# mllint: noqa: ML001``
_FILE_NOQA = re.compile(r"^#\s*mllint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?\s*$",
                        re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)

_WORD = re.compile("noqa", re.IGNORECASE)

ALL = frozenset({"*"})


@dataclass(frozen=True)
class Directive:
    """One ``# noqa`` comment: where it is and what it names.

    ``column``/``end_column`` (1-based, end exclusive) span the directive itself (``# noqa``
    or ``# noqa: A1, B2``) within the line; ``comment_column`` is where the whole comment
    starts and ``comment`` is its text; ``codes`` are the codes as written, in order
    (empty for a bare ``# noqa``); ``codes_column``/``codes_end_column`` span the list.
    """

    line: int
    column: int
    end_column: int
    comment_column: int
    comment: str
    codes: Tuple[str, ...]
    codes_column: int = 0
    codes_end_column: int = 0

    @property
    def bare(self) -> bool:
        return not self.codes

    @property
    def upper_codes(self) -> Tuple[str, ...]:
        return tuple(code.upper() for code in self.codes)


def parse_directive(comment: str, line: int, comment_column: int) -> Optional[Directive]:
    """The ``# noqa`` directive in one comment (starting at `comment_column`), if any."""
    match = _NOQA.search(comment)
    if not match:
        return None
    codes_text = match.group("codes")
    base = comment_column + match.start()
    if not codes_text:
        return Directive(line, base, comment_column + match.end(), comment_column, comment, ())
    return Directive(
        line,
        base,
        comment_column + match.end(),
        comment_column,
        comment,
        tuple(_CODE.findall(codes_text)),
        comment_column + match.start("codes"),
        comment_column + match.end("codes"),
    )


class Suppressions:
    def __init__(
        self,
        by_line: Dict[int, FrozenSet[str]],
        skip_file: bool,
        directives: Optional[Dict[int, Directive]] = None,
        line_map: Optional[Dict[int, int]] = None,
        file_codes: FrozenSet[str] = frozenset(),
    ):
        self.by_line = by_line
        self.skip_file = skip_file
        self.directives = directives or {}
        self.line_map = line_map or {}
        self.file_codes = file_codes  # what ``# mllint: noqa`` suppresses in the whole file (ALL: every code)

    def directive_line(self, line: int) -> int:
        """The line whose ``# noqa`` covers findings reported on `line`."""
        return self.line_map.get(line, line)

    def file_suppresses(self, code: str) -> bool:
        """Whether ``# mllint: noqa`` suppresses `code` in the whole file."""
        return self.file_codes is ALL or code in self.file_codes

    def suppresses(self, line: int, code: str) -> bool:
        if self.file_suppresses(code):
            return True
        codes = self.by_line.get(self.directive_line(line))
        return bool(codes) and (codes is ALL or code in codes)

    def apply(self, findings: Iterable) -> Tuple[list, Set[Tuple[int, str]]]:
        """(the findings not suppressed, {(directive line, code)} of the codes that suppressed one)."""
        kept = []
        used: Set[Tuple[int, str]] = set()
        for finding in findings:
            target = self.directive_line(finding.line)
            if self.file_suppresses(finding.code):
                continue  # the file-level directive (not a line's: ML100 does not judge it)
            if self.suppresses(finding.line, finding.code):
                used.add((target, finding.code))
            else:
                kept.append(finding)
        return kept, used


_BACKSLASH_EOL = re.compile(r"\\(?=\r\n|\n|\r)")
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def _tokens(source: str):
    """One pass of the tokenizer: ([(line, column (1-based), text) of each comment],
    {line: the line of its noqa directive} for the lines that cannot carry their own).
    Raises what the tokenizer raises for sources it rejects."""
    comments = []
    blocked: Set[int] = set()  # lines whose end lies inside a string, or ends with a backslash
    commented: Set[int] = set()
    fstring_starts: List[int] = []
    comment, string = tokenize.COMMENT, tokenize.STRING
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        kind = tok.type
        if kind == comment:
            comments.append((tok.start[0], tok.start[1] + 1, tok.string))
            commented.add(tok.start[0])
        elif kind == string:
            if tok.end[0] > tok.start[0]:
                blocked.update(range(tok.start[0], tok.end[0]))
        elif kind == _FSTRING_START:
            fstring_starts.append(tok.start[0])
        elif kind == _FSTRING_END and fstring_starts:
            blocked.update(range(fstring_starts.pop(), tok.end[0]))
    if "\\" in source:
        line, position = 1, 0
        for match in _BACKSLASH_EOL.finditer(source):
            line += source.count("\n", position, match.start())
            position = match.start()
            if line not in blocked and line not in commented:
                blocked.add(line)
    mapping: Dict[int, int] = {}
    for line in sorted(blocked, reverse=True):
        mapping[line] = mapping.get(line + 1, line + 1)
    return comments, mapping


def line_map(source: str) -> Dict[int, int]:
    """{line: the line of its noqa directive} for the lines that cannot carry their own."""
    try:
        return _tokens(source)[1]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return {}


def noqa_line(mapping: Dict[int, int], line: int) -> int:
    return mapping.get(line, line)


def _comments(source: str):
    """(line, column (1-based), comment text) of each comment, and the noqa line map."""
    try:
        return _tokens(source)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # Fall back to a line scan for sources the tokenizer rejects.
        comments = []
        for number, text in enumerate(source.splitlines(), 1):
            if "#" in text:
                comments.append((number, text.index("#") + 1, text[text.index("#"):]))
        return comments, {}


def scan(source: str) -> Optional[Suppressions]:
    """Suppression comments of a file, or None when it has none (the common case)."""
    if "mllint:" not in source and not _WORD.search(source):
        return None
    by_line: Dict[int, FrozenSet[str]] = {}
    directives: Dict[int, Directive] = {}
    skip_file = False
    file_codes: FrozenSet[str] = frozenset()
    comments, mapping = _comments(source)
    for line, column, comment in comments:
        if _SKIP_FILE.search(comment):
            skip_file = True
        whole = _FILE_NOQA.match(comment.strip())
        if whole is not None:
            codes = whole.group("codes")
            if not codes or file_codes is ALL:
                file_codes = ALL
            else:
                file_codes = file_codes | frozenset(code.upper() for code in _CODE.findall(codes))
            continue
        directive = parse_directive(comment, line, column)
        if directive is not None:
            directives[line] = directive
            by_line[line] = ALL if directive.bare else frozenset(directive.upper_codes)
    if not directives and not skip_file and not file_codes:
        return Suppressions({}, False)
    return Suppressions(by_line, skip_file, directives, mapping if directives else {}, file_codes)
