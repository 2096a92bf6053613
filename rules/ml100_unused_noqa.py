"""A ``# noqa`` directive names an mllint rule that suppressed nothing on its line.

Why it matters
    A ``# noqa: ML001`` outlives the bug it was written for: the loop gets its
    ``zero_grad()``, or the code moves, and the comment stays. It then hides the next
    real finding of that rule on that line, and readers take it as a sign that the line
    is known to be wrong. Like Ruff's RUF100, this rule finds such leftovers (off by
    default; enable it with ``--extend-select ML100``).

    It is decided after suppression, from what the enabled rules reported: a code is
    unused when the rule it names is enabled for the file and reported nothing on the
    line (or on the lines the directive covers: the lines of a multi-line string or of
    a backslash continuation that ends on its line). A code of an mllint rule that does
    not exist is always unused, and so is a code named twice.

When the code is fine
    - a bare ``# noqa`` (it may serve flake8 or Ruff) is never reported;
    - codes of other tools (``E501``, ``F401``, ``TOR102``) are left alone;
    - codes of mllint rules that are not enabled for the file (by ``select``,
      ``ignore`` or ``per-file-ignores``) are left alone: another configuration may
      enable them;
    - ``ML100`` itself, and ``ML000`` (files that cannot be parsed are always reported,
      never suppressed), are never reported;
    - nothing is reported for a file that does not parse (its rules did not run);
    - ``# noqa: ML100`` on the line keeps a directive as it is.

How to fix
    Remove the unused codes; ``--fix`` does it (a safe fix): it keeps the other codes,
    and removes the whole directive when nothing is left, keeping other tools' codes and
    any comment text before or after the directive.
"""

from __future__ import annotations

from typing import Iterable, List, Optional

from mllint.findings import PARSE_ERROR_CODE, Applicability, Edit, Example, Finding, Fix, Severity, split_lines

CODE = "ML100"
NAME = "unused-noqa"
MESSAGE = "unused `noqa` directive: a named rule suppressed nothing on this line"
TRIGGERS = ("noqa", "NOQA", "NoQA", "Noqa")
DEFAULT_ENABLED = False
FRAMEWORK = None  # about noqa directives: any file
FIX = "safe"

def check(model) -> Iterable[Finding]:
    """Nothing to do on the model: the engine calls ``check_noqa`` after suppression."""
    return ()


def check_noqa(path: str, source: str, suppressions, used, enabled, known) -> List[Finding]:
    """ML100 findings of one file.

    ``suppressions``: the file's ``noqa.Suppressions``; ``used``: {(directive line, code)}
    of the codes that suppressed a finding; ``enabled``: the codes of the rules that ran;
    ``known``: every rule's code (the engine, which holds the catalogue, passes it: a rule
    module imports nothing above it).
    """
    known = set(known) | {PARSE_ERROR_CODE}
    lines = split_lines(source)
    findings = []
    for line, directive in sorted(suppressions.directives.items()):
        if directive.bare:
            continue
        kept, unused, unknown, duplicate = [], [], [], []
        seen = set()
        for raw in directive.codes:
            code = raw.upper()
            if code in seen:
                duplicate.append(raw)
                continue
            seen.add(code)
            if not code.startswith("ML") or code in (CODE, PARSE_ERROR_CODE):
                kept.append(raw)
            elif code not in known:
                unknown.append(raw)
            elif code in enabled and (line, code) not in used:
                unused.append(raw)
            else:
                kept.append(raw)
        if not (unused or unknown or duplicate):
            continue
        parts = [f"{label}: {', '.join(codes)}" for label, codes in
                 (("unused", unused), ("unknown", unknown), ("duplicate", duplicate)) if codes]
        text = lines[line - 1].rstrip("\r\n") if line <= len(lines) else ""
        edit = _removal(directive, kept, text, line, len(lines))
        findings.append(Finding(
            path=path,
            line=line,
            column=directive.column,
            end_line=line,
            end_column=directive.end_column,
            code=CODE,
            name=NAME,
            message=f"unused `noqa` directive ({'; '.join(parts)})",
            detail=_detail(unused, unknown, duplicate, kept),
            severity=Severity.WARNING,
            fix=Fix(Applicability.SAFE, (edit,), "remove unused noqa codes") if edit else None,
        ))
    return findings


def _detail(unused, unknown, duplicate, kept) -> str:
    """Why each code is reported, and what the fix leaves (the message only lists the codes)."""
    why = []
    if unused:
        why.append(f"no {', '.join(unused)} finding is reported on this line, so the code suppresses nothing")
    if unknown:
        why.append(f"{', '.join(unknown)} names no mllint rule (see `mllint rules`)")
    if duplicate:
        why.append(f"{', '.join(duplicate)} is named more than once")
    rest = f"the fix keeps {', '.join(kept)}" if kept else "the fix removes the directive"
    return "; ".join(why) + f"; {rest}."


def _removal(directive, kept, text: str, line: int, line_count: int) -> Optional[Edit]:
    """The edit that keeps only `kept` of the directive's codes (or removes the directive)."""
    if kept:
        return Edit(line, directive.codes_column, line, directive.codes_end_column, ", ".join(kept))
    start, end = directive.column - 1, directive.end_column - 1  # 0-based, within `text`
    before = text[directive.comment_column - 1:start]
    after = text[end:]
    if before.strip():
        # `# reason  # noqa: ML001 ...`: drop the directive and the blanks before it.
        cut = len(text[:start].rstrip())
        return Edit(line, cut + 1, line, end + 1, "")
    rest = after.lstrip()
    if rest.startswith("#"):  # `# noqa: ML001  # other comment`
        return Edit(line, start + 1, line, end + len(after) - len(rest) + 1, "")
    if rest:  # `# noqa: ML001 because ...`: the explanation stays a comment
        return Edit(line, start + 1, line, end + len(after) - len(rest) + 1, "# ")
    code = text[:directive.comment_column - 1]
    if code.strip():
        cut = len(code.rstrip())
        return Edit(line, cut + 1, line, len(text) + 1, "")
    # A line holding nothing but the directive: remove the line.
    if line < line_count:
        return Edit(line, 1, line + 1, 1, "")
    return Edit(line, 1, line, len(text) + 1, "")


def _ex(code: str, fixed: Optional[str] = None) -> Example:
    return Example(code, fixed)


_LOOP = """
import torch
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = ((model(x) - y) ** 2).mean()
    loss.backward(){comment}
    optimizer.step()
"""


def _loop(comment: str) -> str:
    return _LOOP.format(comment=comment)


# The examples are linted with every rule enabled (as under --select ALL); see
# tests/test_rule_examples.py.
VALID = [
    # the directive suppresses the ML001 finding reported on its line
    _loop("  # noqa: ML001"),
    # another tool's code next to the used one
    _loop("  # noqa: E501, ML001"),
    # a bare noqa is never reported
    "x = compute()  # noqa\n",
    # codes of other tools are left alone
    "import os  # noqa: F401\n",
    "print(1)  # noqa: E501, TOR102\n",
    # ML100 itself is never reported, and it keeps the directive as it is
    "x = 1  # noqa: ML001, ML100\n",
    # ML000 is never reported
    "x = 1  # noqa: ML000\n",
    # lowercase, no space after the colon
    _loop("  # noqa:ml001"),
    # a finding on a backslash-continued line is covered by the directive where it ends
    """
import torch
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = ((model(x) - y) ** 2).mean()
    loss.backward() \\
        ; optimizer.step()  # noqa: ML001
""",
    # not a directive: the word is in a string
    'print("# noqa: ML001")\n',
    # a file that does not parse: nothing is known about its findings
    "def broken(:\n    pass  # noqa: ML001\n",
]

INVALID = [
    # nothing on this line is an ML001 finding: the whole directive goes
    _ex("x = 1  # noqa: ML001\n", "x = 1\n"),
    # the used code stays, the unused one goes
    _ex(_loop("  # noqa: ML001, ML002"), _loop("  # noqa: ML001")),
    # other tools' codes stay
    _ex("import os  # noqa: F401, ML003\n", "import os  # noqa: F401\n"),
    _ex("import os  # noqa: ML003,F401\n", "import os  # noqa: F401\n"),
    # an unknown mllint code is always unused
    _ex("x = 1  # noqa: ML999\n", "x = 1\n"),
    # a code named twice
    _ex(_loop("  # noqa: ML001, ML001"), _loop("  # noqa: ML001")),
    # comment text after the directive stays a comment
    _ex("x = 1  # noqa: ML004 kept for the old loader\n", "x = 1  # kept for the old loader\n"),
    # a comment before the directive stays
    _ex("x = 1  # the reason  # noqa: ML004\n", "x = 1  # the reason\n"),
    # a comment after the directive stays
    _ex("x = 1  # noqa: ML004  # see #12\n", "x = 1  # see #12\n"),
    # a line holding only a directive is removed
    _ex("x = 1\n# noqa: ML002\ny = 2\n", "x = 1\ny = 2\n"),
    # lowercase codes are codes too
    _ex("x = 1  # NOQA:ml005\n", "x = 1\n"),
]
