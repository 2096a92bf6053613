"""What a rule reports: findings, their fixes, and how safe a fix is.

Positions are 1-based lines and 1-based columns (as Ruff prints them); an end
position points just past the last character. Edits use the same positions.

In a notebook (``.ipynb``) a finding carries ``cell`` (1-based index among all the
notebook's cells) and its positions are relative to that cell; ``json_line`` is the
line of the raw ``.ipynb`` file that holds the reported source line (what GitHub and
SARIF consumers can annotate). Both are None for a ``.py`` file.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Sequence, Tuple


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"


class Applicability(str, enum.Enum):
    SAFE = "safe"  # applied by --fix
    UNSAFE = "unsafe"  # applied by --unsafe-fixes, shown by --diff


@dataclass(frozen=True)
class Edit:
    """Replace the text between two positions with `content` (empty range = insertion)."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_dict(self) -> Dict[str, Any]:
        return {
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "content": self.content,
        }


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    edits: Tuple[Edit, ...]
    description: str = ""
    # A fix that exists but whose edits were not built (nothing asked for them: a text
    # report without --fix/--diff). It marks the finding fixable; the fixer re-lints to build it.
    deferred: bool = False

    def to_dict(self) -> Dict[str, Any]:
        return {
            "applicability": self.applicability.value,
            "message": self.description or None,
            "edits": [e.to_dict() for e in self.edits],
            **({"deferred": True} if self.deferred else {}),
        }


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    message: str
    severity: Severity = Severity.ERROR
    fix: Optional[Fix] = field(default=None, compare=False)
    # The rest of the explanation for this case (where the data came from, how to fix it
    # here): the message stays one line; JSON, SARIF and --show-source carry the detail.
    detail: Optional[str] = field(default=None, compare=False)
    cell: Optional[int] = None  # notebooks: the cell (1-based among all cells)
    json_line: Optional[int] = None  # notebooks: the line in the raw .ipynb JSON text
    # What the finding rests on, where a rule tells: "structure" (where the data comes from, a
    # mode switch, a weights load, what the callers do) or "name" (only the spelling of a
    # function, loader or variable says the code evaluates). None: the rule does not tell.
    basis: Optional[str] = field(default=None, compare=False)

    @property
    def fixable(self) -> bool:
        return self.fix is not None and self.fix.applicability is Applicability.SAFE

    def sort_key(self) -> Tuple[str, int, int, int, str]:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "detail": self.detail,
            "severity": self.severity.value,
            "fix": self.fix.to_dict() if self.fix else None,
            "cell": self.cell,
            "json_line": self.json_line,
            "basis": self.basis,
        }


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str):
    """Lines with their endings, breaking only at \n, \r\n and \r (as Python's tokenizer
    and LibCST do; str.splitlines also breaks at form feeds and other separators)."""
    return _LINE.findall(text)


def apply_edits(source: str, edits) -> str:
    """Apply non-overlapping edits to `source` (positions refer to the original text)."""
    lines = split_lines(source)
    starts = [0]
    for text in lines:
        starts.append(starts[-1] + len(text))

    def offset(line: int, column: int) -> int:
        if line - 1 >= len(lines):
            return len(source)
        return starts[line - 1] + column - 1

    out = source
    for edit in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        start = offset(edit.line, edit.column)
        end = offset(edit.end_line, edit.end_column)
        out = out[:start] + edit.content + out[end:]
    return out


def edits_overlap(a, b) -> bool:
    for x in a:
        for y in b:
            if (x.line, x.column) < (y.end_line, y.end_column) and (y.line, y.column) < (
                x.end_line,
                x.end_column,
            ):
                return True
            if (x.line, x.column) == (y.line, y.column):
                return True
    return False


def map_offset(offset: int, spans: Sequence[Tuple[int, int, str]], *, boundary: bool = False) -> int:
    """Where an offset of the old text lands in the new text (inside a replaced range: its start).

    An insertion exactly at the offset moves the old text right. With ``boundary`` (a cell
    boundary of a notebook) an insertion exactly there goes to the cell that starts there
    (the boundary stays before it), and a replacement ending there to the cell before."""
    delta = 0
    for start, end, content in spans:
        if offset > end or (offset == end and (not boundary or start < end)):
            delta += len(content) - (end - start)
        elif offset >= start:
            return start + delta
        else:
            break
    return offset + delta


# ML000 is not a rule module: the engine reports it for files it cannot read or parse. Defined
# here, at the bottom, so that reading files and notebooks needs nothing from the rule catalogue.
PARSE_ERROR_CODE = "ML000"
PARSE_ERROR_NAME = "syntax-error"


@dataclass(frozen=True)
class Example:
    """A rule's VALID or INVALID source snippet; INVALID ones may carry the expected fixed
    source. Here, below the rules, so that a rule module imports nothing above it."""

    code: str
    fixed: Optional[str] = None
    unsafe_fixed: Optional[str] = None
