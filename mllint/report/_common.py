"""What every output format shares: options, ordering, rule metadata, source lines, colour.

Reporters know nothing about specific rules: whatever they say about a rule comes
from the Rule records in ``ReportOptions.rules`` (``registry.all_rules()`` by
default), and ML000, which is not a rule module, gets the built-in description here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, TextIO, Tuple

from mllint.findings import Applicability, Finding, Severity

from mllint.findings import PARSE_ERROR_CODE, PARSE_ERROR_NAME

PARSE_ERROR_SUMMARY = "The file could not be read or parsed as Python."
PARSE_ERROR_DOC = (
    "The file could not be read or parsed as Python.\n\n"
    "mllint reports ML000 instead of linting a file it cannot analyse: a syntax error "
    "(the message quotes the parser), a binary file, a file whose bytes do not match its "
    "encoding (PEP 263 coding cookie, UTF-8 by default), an unreadable file, a file "
    "too large to lint, a notebook (.ipynb) that is not valid JSON, not nbformat 4 or has no "
    "cells, or a notebook cell that does not parse (that cell is skipped, the others are "
    "linted). The rest of the run goes on.\n\n"
    "Fix the syntax error or the encoding, or exclude the file with `exclude` / "
    "`extend-exclude` in `[tool.mllint]`. ML000 is always on."
)


def _all_rules() -> dict:
    from mllint.registry import all_rules

    return all_rules()


@dataclass
class ReportOptions:
    """How to report.

    show_source: a code frame under each finding (text format).
    statistics: one row per code instead of one per finding (text and concise formats).
    fix_applied: how many problems a --fix run fixed ("Fixed N problems.").
    unsafe_hidden: how many findings carry an unsafe fix that --unsafe-fixes would apply.
    rules: code -> Rule, for names and documentation (SARIF rules, statistics).
    unsafe_fixes: --unsafe-fixes is on: unsafe fixes count as fixable ("[*]").
    color: True/False to force colour on or off; None = decide from the stream and
        the environment (see ``use_color``).
    """

    show_source: bool = False
    statistics: bool = False
    fix_applied: int = 0
    unsafe_hidden: int = 0
    rules: Optional[dict] = None  # code -> Rule; None: registry.all_rules(), imported when first needed
    unsafe_fixes: bool = False
    color: Optional[bool] = None
    verifications: Optional[dict] = None  # --verify: Finding.sort_key() -> Verification
    quiet: bool = False  # --quiet: findings only, no summary lines (text and concise)
    show_fixes: bool = False  # --show-fixes: list what --fix changed, per file and code (text and concise)
    fixed: List[Finding] = field(default_factory=list)  # the findings --fix fixed (for show_fixes)
    skipped: int = 0  # files not linted (over max-file-size): the summary says so, "All checks passed!" would not be true

    def verification(self, finding: Finding):
        if not self.verifications:
            return None
        return self.verifications.get(finding.sort_key())


# ---------------------------------------------------------------- findings


def all_findings(results) -> List[Tuple[object, Finding]]:
    """(FileResult, Finding) pairs over all results, sorted by path, line, column, code."""
    pairs = [(result, finding) for result in results for finding in result.findings]
    pairs.sort(key=lambda pair: pair[1].sort_key())
    return pairs


def is_fixable(finding: Finding, opts: ReportOptions) -> bool:
    """Would ``--fix`` (with the current --unsafe-fixes setting) fix this finding?"""
    if finding.fix is None:
        return False
    if finding.fix.applicability is Applicability.SAFE:
        return True
    return bool(opts.unsafe_fixes)


def plural(count: int, word: str, words: Optional[str] = None) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {words or word + 's'}"


def summary_lines(findings: List[Finding], opts: ReportOptions) -> List[str]:
    """The closing lines of the text and concise formats (Ruff's wording, adapted)."""
    if opts.quiet:
        return []
    lines = fixes_summary(opts) if opts.show_fixes else []
    if opts.fix_applied and not opts.show_fixes:  # --show-fixes' list already says how many
        lines.append(f"Fixed {plural(opts.fix_applied, 'problem')}.")
    if findings:
        fixable = sum(1 for f in findings if is_fixable(f, opts))
        text = f"Found {plural(len(findings), 'problem')}"
        if fixable:
            text += f" ({fixable} fixable with --fix)"
        lines.append(text + ".")
    else:
        lines.append("All checks passed!" if not opts.skipped else "No problems found in the files linted.")
    if opts.skipped:
        lines.append(f"{plural(opts.skipped, 'file')} not linted: over `max-file-size` (see the warning"
                     f"{'' if opts.skipped == 1 else 's'} above).")
    if opts.unsafe_hidden > 0:
        verb = "fix can" if opts.unsafe_hidden == 1 else "fixes can"
        lines.append(f"{opts.unsafe_hidden} hidden {verb} be enabled with the --unsafe-fixes option.")
    return lines


def fixes_summary(opts: ReportOptions) -> List[str]:
    """--show-fixes, as Ruff prints it: ``Fixed 3 problems:`` then, per file, one
    ``N × CODE (name)`` line per rule; ``No problems fixed.`` when --fix changed nothing."""
    if not opts.fixed:
        return ["No problems fixed."]
    per_file: Dict[str, Dict[Tuple[str, str], int]] = {}
    for finding in sorted(opts.fixed, key=lambda f: f.sort_key()):
        counts = per_file.setdefault(finding.path, {})
        counts[(finding.code, finding.name)] = counts.get((finding.code, finding.name), 0) + 1
    lines = [f"Fixed {plural(len(opts.fixed), 'problem')}:"]
    for path, counts in per_file.items():
        lines.append(f"- {path}:")
        for (code, name), count in sorted(counts.items()):
            lines.append(f"    {count} \u00d7 {code} ({name})")
    lines.append("")
    return lines


def statistics(findings: Iterable[Finding], opts: ReportOptions) -> List[Dict[str, object]]:
    """--statistics for the machine formats: one entry per code, most frequent first:
    ``{code, name, count, fixable_count}`` (fixable: what --fix, with the current
    --unsafe-fixes setting, would fix)."""
    rows = []
    for code, items in by_code(findings).items():
        rows.append({
            "code": code,
            "name": rule_info(code, opts, items[0]).name,
            "count": len(items),
            "fixable_count": sum(1 for f in items if is_fixable(f, opts)),
        })
    rows.sort(key=lambda row: (-row["count"], row["code"]))
    return rows


# ---------------------------------------------------------------- rules


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    summary: str  # one line
    doc: str  # the full user-facing documentation (Markdown-ish plain text)
    help_uri: Optional[str] = None
    tags: Tuple[str, ...] = ()


def _first_paragraph(doc: str) -> str:
    for block in re.split(r"\n\s*\n", doc.strip()):
        text = " ".join(line.strip() for line in block.splitlines()).strip()
        if text:
            return text
    return ""


def _module_tags(rule) -> Tuple[str, ...]:
    tags = getattr(rule, "tags", None)
    if tags is None:
        import sys

        module = sys.modules.get(getattr(rule, "module", "") or "")
        tags = getattr(module, "TAGS", ()) if module is not None else ()
    return tuple(str(t) for t in tags)


def rule_info(code: str, opts: ReportOptions, fallback: Optional[Finding] = None) -> RuleInfo:
    """What we can say about a code: from the rule record, built in for ML000, else the finding."""
    if code == PARSE_ERROR_CODE:
        return RuleInfo(code, PARSE_ERROR_NAME, PARSE_ERROR_SUMMARY, PARSE_ERROR_DOC)
    rule = (opts.rules if opts.rules is not None else _all_rules()).get(code)
    if rule is not None:
        doc = (getattr(rule, "doc", "") or "").strip()
        summary = _first_paragraph(doc) or getattr(rule, "message", "") or rule.name
        return RuleInfo(
            code=code,
            name=rule.name,
            summary=summary,
            doc=doc or summary,
            help_uri=getattr(rule, "url", None) or getattr(rule, "help_uri", None),
            tags=_module_tags(rule),
        )
    name = fallback.name if fallback is not None else code
    message = fallback.message if fallback is not None else code
    return RuleInfo(code, name, message, message)


# ---------------------------------------------------------------- source text

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> List[str]:
    """Lines as Python's tokenizer counts them (only \\n, \\r\\n, \\r end a line;
    unlike str.splitlines, form feeds and other separators stay inside the line)."""
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class SourceCache:
    """The text of each reported file, read at most once.

    FileResult.source is used when present. A cached result carries no source: then
    the file is read again from disk (the cache is keyed by the file's content, so the
    text on disk is the text that was linted) and decoded as the engine does. A file
    that cannot be read or decoded has no lines (no code frame; empty fingerprint text).
    """

    def __init__(self) -> None:
        self._lines: Dict[str, Optional[List[str]]] = {}
        self._notebooks: Dict[str, object] = {}  # path -> notebook.Notebook (None: unreadable)

    def lines(self, result) -> Optional[List[str]]:
        path = result.path
        if path not in self._lines:
            text = getattr(result, "source", None)
            if text is None:
                text = _read_text(path)
            self._lines[path] = split_lines(text) if text is not None else None
        return self._lines[path]

    def lines_for(self, result, finding: Finding) -> Optional[List[str]]:
        """The lines positions of `finding` refer to: the file's, or in a notebook its cell's."""
        if getattr(finding, "cell", None) is None:
            return self.lines(result)
        if result.path not in self._notebooks:
            from mllint.notebook import NotebookError, load

            text = getattr(result, "source", None)
            if text is None:
                text = _read_text(result.path)
            try:
                self._notebooks[result.path] = load(text) if text is not None else None
            except NotebookError:
                self._notebooks[result.path] = None
        notebook = self._notebooks[result.path]
        return notebook.cell_lines(finding.cell) if notebook is not None else None

    def line_for(self, result, finding: Finding) -> str:
        """The text of the line `finding` is reported on (in its cell, for a notebook)."""
        lines = self.lines_for(result, finding)
        if not lines or finding.line < 1 or finding.line > len(lines):
            return ""
        return lines[finding.line - 1]

    def line(self, result, number: int) -> str:
        lines = self.lines(result)
        if not lines or number < 1 or number > len(lines):
            return ""
        return lines[number - 1]


def _read_text(path: str) -> Optional[str]:
    from mllint.sources import MAX_FILE_BYTES, UnreadableFile, decode_file

    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError):
        return None
    if len(data) > MAX_FILE_BYTES:
        return None
    try:
        return decode_file(path, data).text
    except UnreadableFile:
        return None


# ---------------------------------------------------------------- colour


def use_color(out: TextIO, opts: ReportOptions) -> bool:
    """Colour when asked (opts.color), else: never if NO_COLOR is set (non-empty);
    always if FORCE_COLOR or CLICOLOR_FORCE is set (non-empty, not "0"); otherwise
    only on a terminal."""
    if opts.color is not None:
        return bool(opts.color)
    if os.environ.get("NO_COLOR", ""):
        return False
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE"):
        force = os.environ.get(name, "")
        if force and force != "0":
            return True
    isatty = getattr(out, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # closed or detached stream
        return False


class Style:
    """ANSI styling that degrades to plain text."""

    CODES = {
        "bold": "1",
        "dim": "2",
        "red": "31",
        "green": "32",
        "yellow": "33",
        "blue": "34",
        "cyan": "36",
        "bold_red": "1;31",
        "bold_blue": "1;34",
    }

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, style: str) -> str:
        if not self.enabled or not text:
            return text
        return f"\x1b[{self.CODES[style]}m{text}\x1b[0m"


def severity_level(finding: Finding) -> str:
    return "warning" if finding.severity is Severity.WARNING else "error"


def by_code(findings: Iterable[Finding]) -> Dict[str, List[Finding]]:
    groups: Dict[str, List[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.code, []).append(finding)
    return groups
