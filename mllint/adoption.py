"""Adopting mllint in an existing project: ``--add-noqa``, and warnings about ``# noqa``
codes that name no mllint rule. (``--baseline`` lives in ``mllint/baseline.py``.)

``--add-noqa`` works as Ruff's: every current finding gets ``# noqa: CODE`` on its line
(``add_noqa_to_source`` computes the new text from the source and its findings; nothing
else in here decides what the text becomes). Several codes on one line make one directive,
sorted; an existing ``# noqa: X`` gets the new codes added after its own; a bare ``# noqa``
already covers everything. A finding on a line that cannot carry a comment (its end lies
inside a multi-line string, or it ends with a backslash) is marked on the line where that
string or continuation ends, which is the line ``noqa.py`` looks at for it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Callable, Dict, Iterable, List, Sequence, Set, Tuple

from mllint import noqa
from mllint.findings import Finding, split_lines
from mllint.registry import PARSE_ERROR_CODE

Warn = Callable[[str], None]

_ML_IN_NOQA = re.compile(r"noqa\s*:[^\r\n]*ML", re.IGNORECASE)


def add_noqa_to_source(source: str, findings: Iterable[Finding]) -> Tuple[str, int]:
    """(the source with every finding marked by ``# noqa``, how many lines got a new or
    extended directive). ML000 (a file that cannot be parsed) is never marked."""
    wanted: Dict[int, Set[str]] = defaultdict(set)
    relevant = [f for f in findings if f.code != PARSE_ERROR_CODE]
    if not relevant:
        return source, 0
    mapping = noqa.line_map(source)
    for finding in relevant:
        wanted[noqa.noqa_line(mapping, finding.line)].add(finding.code.upper())
    existing = noqa.scan(source)
    directives = existing.directives if existing is not None else {}
    lines = split_lines(source)
    added = 0
    for line in sorted(wanted):
        if not 1 <= line <= len(lines):
            continue
        raw = lines[line - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body):]
        directive = directives.get(line)
        if directive is not None:
            if directive.bare:
                continue  # `# noqa` already suppresses everything on the line
            missing = sorted(wanted[line] - set(directive.upper_codes))
            if not missing:
                continue
            at = directive.codes_end_column - 1
            body = body[:at] + ", " + ", ".join(missing) + body[at:]
        else:
            body = body.rstrip(" \t") + "  # noqa: " + ", ".join(sorted(wanted[line]))
        lines[line - 1] = body + ending
        added += 1
    return "".join(lines), added


def add_noqa_to_notebook(path: str, findings: Sequence[Finding], warn: Warn) -> int:
    """Where notebooks plug in: their cells' sources would be marked through the notebook
    writer of the notebook support. Until that exists, a notebook is skipped with a warning."""
    if any(f.code != PARSE_ERROR_CODE for f in findings):
        warn(f"{path}: --add-noqa does not mark notebooks yet; skipped")
    return 0


def add_noqa_to_file(result, rules, warn: Warn) -> int:
    """Mark the findings of one linted file (an ``engine.FileResult``) and write it back
    atomically in its own encoding and line endings; returns the directives added."""
    from mllint import engine
    from mllint.fixing import write_atomic

    if result.path.endswith(".ipynb"):
        return add_noqa_to_notebook(result.path, result.findings, warn)
    if result.source is None:
        return 0
    new, added = add_noqa_to_source(result.source, result.findings)
    if not added:
        return 0
    # Check the result as the user will see it: it still parses, and nothing marked is left.
    after = engine.lint_source(new, result.path, rules)
    if any(f.code == PARSE_ERROR_CODE for f in after) and not any(
        f.code == PARSE_ERROR_CODE for f in result.findings
    ):
        warn(f"{result.path}: adding noqa directives would break the file; skipped")
        return 0
    for finding in after:
        if finding.code != PARSE_ERROR_CODE:
            warn(f"{finding.path}:{finding.line}:{finding.column}: {finding.code} could not be marked with # noqa")
    try:
        write_atomic(result.path, new, result.encoding)
    except (OSError, UnicodeError) as exc:
        warn(f"{result.path}: cannot write: {getattr(exc, 'strerror', None) or exc}")
        return 0
    return added


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
    """One warning per file and line: ``path:line: # noqa names unknown rule code ML999``."""
    from mllint.registry import all_rules

    known = set(all_rules()) | {PARSE_ERROR_CODE}
    for result in results:
        if result.source is None:
            continue
        for line, codes in unknown_noqa_codes(result.source, known):
            noun = "code" if len(codes) == 1 else "codes"
            warn(f"{result.path}:{line}: # noqa names unknown rule {noun} {', '.join(codes)}")
