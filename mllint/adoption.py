"""Adopting mllint in an existing project: ``--add-noqa``, and warnings about ``# noqa``
codes that name no mllint rule. (``--baseline`` lives in ``mllint/baseline.py``.)

``--add-noqa`` works as Ruff's: every current finding gets ``# noqa: CODE`` on its line
(``add_noqa_to_source`` computes the new text from the source and its findings; nothing
else in here decides what the text becomes). Several codes on one line make one directive,
sorted; an existing ``# noqa: X`` gets the new codes added after its own; a bare ``# noqa``
already covers everything. A finding on a line that cannot carry a comment (its end lies
inside a multi-line string, or it ends with a backslash) is marked on the line where that
string or continuation ends, which is the line ``noqa.py`` looks at for it. A notebook's
code cells are marked as one program and written back cell by cell
(``add_noqa_to_notebook``, on ``mllint/notebook.py``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Callable, Dict, Iterable, List, Sequence, Set, Tuple

from mllint import noqa
from mllint.findings import Finding, split_lines
from mllint.findings import PARSE_ERROR_CODE

Warn = Callable[[str], None]

_ML_IN_NOQA = re.compile(r"noqa\s*:[^\r\n]*ML", re.IGNORECASE)


def noqa_insertions(source: str, findings: Iterable[Finding]) -> List[Tuple[int, int, str]]:
    """The text edits that mark `findings` with ``# noqa``: (start, end, new text) offsets
    into `source`, in order, each at a line's end (a new directive also replaces the line's
trailing blanks) or at the end of an existing directive's codes. ML000 (a file that cannot be parsed)
    is never marked; lines already covered are left alone."""
    wanted: Dict[int, Set[str]] = defaultdict(set)
    relevant = [f for f in findings if f.code != PARSE_ERROR_CODE]
    if not relevant:
        return []
    mapping = noqa.line_map(source)
    for finding in relevant:
        wanted[noqa.noqa_line(mapping, finding.line)].add(finding.code.upper())
    existing = noqa.scan(source)
    directives = existing.directives if existing is not None else {}
    lines = split_lines(source)
    starts = [0]
    for text in lines:
        starts.append(starts[-1] + len(text))
    spans: List[Tuple[int, int, str]] = []
    for line in sorted(wanted):
        if not 1 <= line <= len(lines):
            continue
        body = lines[line - 1].rstrip("\r\n")
        directive = directives.get(line)
        if directive is not None:
            if directive.bare:
                continue  # `# noqa` already suppresses everything on the line
            missing = sorted(wanted[line] - set(directive.upper_codes))
            if not missing:
                continue
            at = starts[line - 1] + directive.codes_end_column - 1
            spans.append((at, at, ", " + ", ".join(missing)))
        else:
            code_end = starts[line - 1] + len(body.rstrip(" \t"))
            spans.append((code_end, starts[line - 1] + len(body), "  # noqa: " + ", ".join(sorted(wanted[line]))))
    return spans


def _apply(source: str, spans: Sequence[Tuple[int, int, str]]) -> str:
    out, last = [], 0
    for start, end, content in spans:
        out.append(source[last:start])
        out.append(content)
        last = end
    out.append(source[last:])
    return "".join(out)


def add_noqa_to_source(source: str, findings: Iterable[Finding]) -> Tuple[str, int]:
    """(the source with every finding marked by ``# noqa``, how many lines got a new or
    extended directive)."""
    spans = noqa_insertions(source, findings)
    return _apply(source, spans), len(spans)


def add_noqa_to_notebook(text: str, path: str, rules) -> Tuple[str, int]:
    """Where notebooks plug in: the notebook's code cells are linted as one program (as
    ``engine.lint_text`` does), marked as a Python source would be, and only the changed
    cells' sources are written back into the JSON text (``Notebook.rewrite``, which keeps
    outputs, metadata and formatting). A notebook that cannot be read is left alone."""
    from mllint import engine, notebook

    try:
        nb = notebook.load(text)
    except notebook.NotebookError:
        return text, 0
    if not nb.program.strip():
        return text, 0
    spans = noqa_insertions(nb.program, engine.lint_source(nb.program, path, rules))
    if not spans:
        return text, 0
    guard = notebook.FixGuard(nb)
    # What the notebook writer cannot write back (a cell indented as a whole, IPython syntax)
    # is left unmarked; the check in add_noqa_to_file names those findings.
    spans = [span for span in spans if guard.check([span]) is None]
    if not spans:
        return text, 0
    guard.applied(spans)
    return nb.rewrite(_apply(nb.program, spans), guard.cell_starts, guard.mask_starts), len(spans)


def add_noqa_to_file(result, rules, warn: Warn) -> int:
    """Mark the findings of one linted file (an ``engine.FileResult``) and write it back
    atomically in its own encoding and line endings; returns the directives added."""
    from mllint import engine, notebook
    from mllint.fixing import write_atomic

    if result.source is None:
        return 0
    if notebook.is_notebook(result.path):
        try:
            new, added = add_noqa_to_notebook(result.source, result.path, rules)
        except notebook.NotebookError as exc:
            warn(f"{result.path}: cannot add noqa directives to this notebook: {exc}")
            return 0
    else:
        new, added = add_noqa_to_source(result.source, result.findings)
    if not added:
        return 0
    # Check the result as the user will see it: it still parses, and nothing marked is left.
    after = engine.lint_text(new, result.path, rules).findings
    if any(f.code == PARSE_ERROR_CODE for f in after) and not any(
        f.code == PARSE_ERROR_CODE for f in result.findings
    ):
        warn(f"{result.path}: adding noqa directives would break the file; skipped")
        return 0
    for finding in after:
        if finding.code != PARSE_ERROR_CODE:
            warn(f"{_where(finding)}: {finding.code} could not be marked with # noqa")
    try:
        write_atomic(result.path, new, result.encoding)
    except (OSError, UnicodeError) as exc:
        warn(f"{result.path}: cannot write: {getattr(exc, 'strerror', None) or exc}")
        return 0
    return added


def _where(finding: Finding) -> str:
    cell = getattr(finding, "cell", None)
    return f"{finding.path}:{f'cell {cell}:line ' if cell is not None else ''}{finding.line}:{finding.column}"


def add_noqa(results, settings, warn: Warn) -> int:
    """``--add-noqa`` over the linted files; returns the number of directives added."""
    from mllint.registry import rules_for

    total = 0
    for result in results:
        if any(f.code != PARSE_ERROR_CODE for f in result.findings):
            total += add_noqa_to_file(result, rules_for(settings.codes_for(result.path)), warn)
    return total


# --- unknown codes -----------------------------------------------------------------------


def unknown_noqa_codes(source: str, known: Set[str]) -> List[Tuple[int, List[str]]]:
    """(line, [codes]) for each ``# noqa`` that names ML codes not in `known`. Codes of other
    tools (E501, F401, TOR102) are not ours to judge."""
    if not _ML_IN_NOQA.search(source):  # the common case, cheap: no ML code in any noqa
        return []
    suppressions = noqa.scan(source)
    if suppressions is None:
        return []
    out = []
    for line, directive in sorted(suppressions.directives.items()):
        unknown = []
        for code in directive.upper_codes:
            if code.startswith("ML") and code not in known and code not in unknown:
                unknown.append(code)
        if unknown:
            out.append((line, unknown))
    return out


def warn_unknown_noqa(results, warn: Warn) -> None:
    """One warning per file and line: ``path:line: # noqa names unknown rule code ML999``
    (``path:cell N:line L:`` in a notebook)."""
    from mllint.registry import catalogue

    known = set(catalogue()) | {PARSE_ERROR_CODE}
    for result in results:
        if result.source is None or not _ML_IN_NOQA.search(result.source):
            continue
        source, nb = result.source, None
        from mllint import notebook

        if notebook.is_notebook(result.path):
            try:
                nb = notebook.load(result.source)
            except notebook.NotebookError:
                continue
            source = nb.program
        for line, codes in unknown_noqa_codes(source, known):
            where = f"{result.path}:{line}"
            located = nb.locate(line) if nb is not None else None
            if located is not None:
                where = f"{result.path}:cell {located[0].number}:line {located[1]}"
            noun = "code" if len(codes) == 1 else "codes"
            warn(f"{where}: # noqa names unknown rule {noun} {', '.join(codes)}")
