"""The default, human format (Ruff's layout).

    train.py:12:9: ML001 [*] Gradients accumulate across steps: ...
    notebook.ipynb:cell 7:line 3:col 5: ML005 ...   (a notebook: the position in the cell)

``[*]`` marks a finding that ``--fix`` fixes. With ``show_source`` a code frame
follows each finding (ending with ``= note:`` and the finding's detail, if any, and
``= help:`` and the fix's description): two lines of context either side, line numbers, and carets
under the reported columns (on every line of a finding that spans lines). Tabs
expand to 4 columns, wide characters take two, and control or invisible format
characters show as U+FFFD so that they cannot scramble the terminal. The source
comes from FileResult.source; a cached result has none, so the file is read again
(see ``SourceCache``); a file that cannot be read gets no frame. In a notebook the
frame shows the lines of the finding's cell.

Then a blank line and the summary: ``Found 3 problems (2 fixable with --fix).``,
``Found 1 problem.`` or ``All checks passed!`` (preceded by ``Fixed N problems.``
after a --fix run, followed by the hidden unsafe fixes line when there are any).

With ``statistics`` the per-finding listing becomes one row per code: count, code,
``[*]`` when fixable, name; most frequent first. ``quiet`` leaves out the summary
(and the blank line before it); ``show_fixes`` puts what --fix changed before it.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from typing import List, Optional, TextIO, Tuple

from mllint.findings import Finding

from ._common import (
    ReportOptions,
    SourceCache,
    Style,
    all_findings,
    by_code,
    is_fixable,
    rule_info,
    summary_lines,
    use_color,
)

TAB_SIZE = 4
CONTEXT = 2  # lines of context above and below
MAX_SPAN_LINES = 6  # longer spans show their first and last lines around "..."
NOTE_WIDTH = 100  # the finding's detail under a code frame is wrapped to this width


def report(results, opts: ReportOptions, out: TextIO) -> None:
    style = Style(use_color(out, opts))
    pairs = all_findings(results)
    findings = [finding for _, finding in pairs]
    if opts.statistics:
        rows = statistics_rows(findings, opts, style)
        for row in rows:
            out.write(row + "\n")
        if rows and not opts.quiet:
            out.write("\n")
    elif opts.show_source:
        sources = SourceCache()
        for result, finding in pairs:
            out.write(finding_line(finding, opts, style, fix_marker=True) + "\n")
            for row in verification_lines(finding, opts, style):
                out.write(row + "\n")
            for row in code_frame(sources.lines_for(result, finding), finding, style):
                out.write(row + "\n")
            out.write("\n")
    else:
        for finding in findings:
            out.write(finding_line(finding, opts, style, fix_marker=True) + "\n")
            for row in verification_lines(finding, opts, style):
                out.write(row + "\n")
        if findings and not opts.quiet:
            out.write("\n")
    for line in summary_lines(findings, opts):
        out.write(line + "\n")


def finding_line(finding: Finding, opts: ReportOptions, style: Style, *, fix_marker: bool) -> str:
    colon = style(":", "cyan")
    cell = "" if finding.cell is None else f"cell {finding.cell}" + colon + "line "  # notebooks
    col = "" if finding.cell is None else "col "
    location = (
        style(finding.path, "bold") + colon + cell + str(finding.line) + colon + col + str(finding.column) + colon
    )
    marker = ""
    if fix_marker and is_fixable(finding, opts):
        marker = style("[*]", "cyan") + " "
    return f"{location} {style(finding.code, 'bold_red')} {marker}{finding.message}"


_VERDICT_STYLE = {"confirmed": "bold_red", "not-confirmed": "yellow", "could-not-run": "yellow",
                  "not-verifiable": "cyan"}


def verification_lines(finding: Finding, opts: ReportOptions, style: Style) -> List[str]:
    """Under a finding, with --verify: the verdict, then its supporting measurements."""
    verification = opts.verification(finding)
    if verification is None:
        return []
    head, _, rest = verification.summary.partition(":")
    rows = [f"  {style('verify', 'bold')}: {style(head, _VERDICT_STYLE.get(verification.verdict, 'bold'))}"
            + (f":{rest}" if rest else "")]
    rows.extend(f"    - {detail}" for detail in verification.details)
    return rows


def statistics_rows(findings: List[Finding], opts: ReportOptions, style: Style) -> List[str]:
    groups = by_code(findings)
    rows: List[Tuple[int, str, bool, str]] = []
    for code, items in groups.items():
        fixable = any(is_fixable(f, opts) for f in items)
        rows.append((len(items), code, fixable, rule_info(code, opts, items[0]).name))
    rows.sort(key=lambda row: (-row[0], row[1]))
    if not rows:
        return []
    count_width = max(len(str(row[0])) for row in rows)
    code_width = max(len(row[1]) for row in rows)
    any_fixable = any(row[2] for row in rows)
    out = []
    for count, code, fixable, name in rows:
        marker = ""
        if any_fixable:
            marker = (style("[*]", "cyan") if fixable else "[ ]") + " "
        out.append(f"{count:>{count_width}}  {style(code.ljust(code_width), 'bold_red')}  {marker}{name}")
    return out


# ---------------------------------------------------------------- code frames


def _char_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def render_line(text: str) -> Tuple[str, List[int]]:
    """The line as displayed, and the display column (0-based) where each character
    starts; the list has one extra entry for the position just past the end."""
    shown: List[str] = []
    starts: List[int] = []
    width = 0
    for char in text:
        starts.append(width)
        if char == "\t":
            step = TAB_SIZE - width % TAB_SIZE
            shown.append(" " * step)
            width += step
            continue
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            char = "\ufffd"
        shown.append(char)
        width += _char_width(char)
    starts.append(width)
    return "".join(shown), starts


def _span_on_line(lines: List[str], number: int, finding: Finding, start: int, end: int) -> Optional[Tuple[int, int]]:
    """The 0-based [from, to) character range underlined on line `number`, or None."""
    text = lines[number - 1]
    if number == start:
        first = finding.column - 1
    else:
        first = len(text) - len(text.lstrip(" \t\f"))
    if number == end:
        last = finding.end_column - 1 if end > start or finding.end_column > finding.column else first
    else:
        last = len(text.rstrip())
    first = max(0, min(first, len(text)))
    last = max(0, min(last, len(text)))
    if number != start and number != end and first >= last:
        return None  # a blank line inside a long span
    return first, max(last, first)


def code_frame(lines: Optional[List[str]], finding: Finding, style: Style) -> List[str]:
    """The code frame under a finding, or [] when the source is unknown."""
    if lines is None:
        return []
    lines = list(lines) or [""]
    start = max(1, finding.line)
    end = max(start, finding.end_line)
    if start > len(lines):  # e.g. a syntax error at the end of the file
        lines.extend([""] * (start - len(lines)))
    end = min(end, len(lines))
    first = max(1, start - CONTEXT)
    last = min(len(lines), end + CONTEXT)
    shown = list(range(first, last + 1))
    elided_after = None
    if end - start + 1 > MAX_SPAN_LINES:
        keep_head = start + MAX_SPAN_LINES // 2 - 1
        keep_tail = end - (MAX_SPAN_LINES - MAX_SPAN_LINES // 2) + 1
        shown = [n for n in shown if n <= keep_head or n >= keep_tail]
        elided_after = keep_head
    width = len(str(shown[-1]))
    gutter = style("|", "bold_blue")
    blank = " " * width
    rows = [f"{blank} {gutter}"]
    for number in shown:
        text, starts = render_line(lines[number - 1])
        rows.append(f"{style(str(number).rjust(width), 'bold_blue')} {gutter} {text}".rstrip())
        if start <= number <= end:
            span = _span_on_line(lines, number, finding, start, end)
            if span is not None:
                lo, hi = starts[span[0]], starts[span[1]]
                carets = "^" * max(1, hi - lo)
                label = f" {finding.code}" if number == end else ""
                rows.append(f"{blank} {gutter} {' ' * lo}{style(carets + label, 'bold_red')}")
        if number == elided_after:
            rows.append(f"{style('.' * max(3, width), 'bold_blue')}")
    rows.append(f"{blank} {gutter}")
    if finding.detail:  # wrapped to NOTE_WIDTH, continuation lines aligned after "note: "
        import textwrap

        indent = " " * (width + len(" = note: "))
        wrapped = textwrap.wrap(finding.detail, NOTE_WIDTH - len(indent), break_on_hyphens=False) or [""]
        rows.append(f"{blank} {style('=', 'bold_blue')} note: {wrapped[0]}")
        rows.extend(indent + line for line in wrapped[1:])
    if finding.fix is not None and finding.fix.description:
        kind = "" if finding.fix.applicability.value == "safe" else " (unsafe)"
        rows.append(f"{blank} {style('=', 'bold_blue')} help{kind}: {finding.fix.description}")
    return rows


def report_full(results, opts: ReportOptions, out: TextIO) -> None:
    """``full`` (Ruff's default spelling): the text format with each finding's code frame."""
    report(results, dataclasses.replace(opts, show_source=True), out)
