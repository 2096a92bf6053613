"""Linting standard input, as Ruff does, for editors and formatters.

    mllint - --stdin-filename src/train.py          lint stdin as if it were src/train.py
    mllint --fix --stdin-filename src/train.py      fixed source on stdout, what remains on stderr
    mllint --diff --stdin-filename src/train.py     what --fix would change, as a diff on stdout

The text is linted with the settings of the named path (its rule selection and its
per-file-ignores), and findings carry that path (``-`` when no name is given). Bytes are
decoded as a file's are (``engine.decode_file``: BOM, coding cookie; a ``.ipynb`` name
means notebook JSON, linted and fixed cell by cell) and the fixed source is encoded back
the same way. Nothing is ever written to a file.

``lint_text`` and ``fix_text`` below are the one place that decides how a text is
linted or fixed for a path; everything else here is reading, reporting and exit codes.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import List, Optional, Sequence, Tuple

import click

from mllint import engine
from mllint.engine import FileResult
from mllint.fixing import FixOutcome, settle_fixable

EXIT_CLEAN, EXIT_FINDINGS = 0, 1
DASH = "-"


def stdin_path(paths: Sequence[str], stdin_filename: Optional[str]) -> Optional[str]:
    """The display path when this run reads standard input, else None.

    Raises click.UsageError for `-` or --stdin-filename mixed with other paths."""
    dashes = sum(1 for p in paths if p == DASH)
    if stdin_filename is None and not dashes:
        return None
    others = [p for p in paths if p != DASH]
    if others:
        if dashes:
            raise click.UsageError(f"`-` (standard input) cannot be combined with other paths (got `{others[0]}`)")
        raise click.UsageError(
            f"--stdin-filename names standard input and cannot be combined with paths (got `{others[0]}`)"
        )
    if dashes > 1:
        raise click.UsageError("`-` (standard input) can be given only once")
    if stdin_filename is not None and not stdin_filename.strip():
        raise click.BadParameter("must name a file, e.g. --stdin-filename src/train.py", param_hint="--stdin-filename")
    return stdin_filename if stdin_filename is not None else DASH


# --- the single dispatch point: "lint / fix this text as PATH" ------------------------------
# engine.lint_text / fixing.fix_text dispatch on the path: a `.ipynb` path is a notebook
# (its JSON text), anything else Python source.


def lint_text(text: str, path: str, rules, encoding: str = "utf-8", options=None) -> FileResult:
    """Findings of `text` linted as the file `path`."""
    result = engine.lint_text(text, path, rules, options)
    result.encoding = encoding
    return result


def fix_text(text: str, path: str, rules, unsafe: bool, encoding: Optional[str] = None,
             options=None) -> Tuple[str, FixOutcome]:
    """(fixed text, outcome) of applying the applicable fixes to `text` as the file `path`."""
    from mllint import fixing

    return fixing.fix_text(text, path, rules, unsafe, encoding=encoding, options=options)


# --- the command -----------------------------------------------------------------------------


def _read(path: str) -> Tuple[bytes, Optional[engine.Decoded], Optional[str]]:
    """(bytes, decoded text or None, error or None) of standard input, decoded as the file `path`."""
    stream = getattr(sys.stdin, "buffer", None)
    data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
    if len(data) > engine.MAX_FILE_BYTES:
        return data, None, f"input larger than {engine.format_size(engine.MAX_FILE_BYTES)}; skipped"
    try:
        return data, engine.decode_file(path, data), None
    except engine.UnreadableFile as exc:
        return data, None, str(exc)


def _warn(message: str) -> None:
    click.echo(f"mllint: warning: {message}", err=True)


def run(
    path: str,
    settings,
    *,
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    output_format: str,
    show_source: bool,
    statistics: bool,
    exit_zero: bool,
) -> int:
    """Lint (or fix, or diff) standard input as `path`; returns the exit status."""
    from mllint.registry import rules_for
    from mllint.report import REPORTERS, ReportOptions

    from mllint.semantics.options import ModelOptions

    codes = settings.settings_for_dir(os.getcwd()).select if path == DASH else settings.codes_for(path)
    rules = rules_for(codes)
    own = settings.settings_for_dir(os.getcwd()) if path == DASH else settings.settings_for(path)
    model_options = ModelOptions.from_settings(own) if path == DASH else ModelOptions.for_file(own, path, settings)
    data, decoded, error = _read(path)

    fixed = 0
    skipped = None
    if decoded is not None and not engine.is_notebook(path):
        skipped = engine.too_large(len(data), own.max_file_size, "standard input")
    if decoded is None:
        result = FileResult(path, [engine.file_error(path, error or "cannot read standard input")])
        new_bytes = data
        old_text = new_text = None
    elif skipped:
        _warn(f"{path}: {skipped}")
        result = FileResult(path, [], decoded.text, decoded.encoding, skipped=skipped)
        new_bytes = data
        old_text = new_text = decoded.text
    elif fix or diff:
        old_text = decoded.text
        new_text, outcome = fix_text(old_text, path, rules, unsafe=unsafe_fixes or diff, encoding=decoded.encoding,
                                       options=model_options)
        for finding, reason in outcome.rejected:
            cell = f"cell {finding.cell}:line " if getattr(finding, "cell", None) is not None else ""  # a notebook
            _warn(f"{finding.path}:{cell}{finding.line}:{finding.column}: {finding.code} fix not applied: {reason}")
        fixed = len(outcome.fixed)
        result = FileResult(path, sorted(outcome.remaining, key=lambda f: f.sort_key()), new_text, decoded.encoding)
        new_bytes = data if new_text == old_text else new_text.encode(decoded.encoding)
    else:  # the fixes built, as settle_fixable (only what --fix fixes is marked fixable) runs them
        result = lint_text(decoded.text, path, rules, decoded.encoding, dataclasses.replace(model_options, fixes=True))
        result = settle_fixable(result, rules, model_options)
        new_bytes = data
        old_text = new_text = decoded.text

    if diff:
        return _diff(path, old_text, new_text, fixed, exit_zero)

    options = ReportOptions(
        show_source=show_source,
        statistics=statistics,
        fix_applied=fixed,
        unsafe_hidden=0 if unsafe_fixes else _unsafe_count(result.findings),
        unsafe_fixes=unsafe_fixes,
        skipped=1 if result.skipped else 0,
    )
    if fix:
        # The source always goes to stdout, changed or not, so a formatter can pipe through.
        out = sys.stdout.buffer
        out.write(new_bytes)
        out.flush()
        REPORTERS[output_format]([result], options, sys.stderr)
        sys.stderr.flush()
    else:
        REPORTERS[output_format]([result], options, sys.stdout)
        sys.stdout.flush()
    return EXIT_FINDINGS if result.findings and not exit_zero else EXIT_CLEAN


def _diff(path: str, old: Optional[str], new: Optional[str], fixed: int, exit_zero: bool) -> int:
    from mllint.fixing import unified_diff

    if old is None or new is None or old == new:
        click.echo("No fixes available.", err=True)
        return EXIT_CLEAN
    click.echo(unified_diff(path, old, new), nl=False)
    click.echo(f"Would fix {fixed} {'problem' if fixed == 1 else 'problems'}.", err=True)
    return EXIT_CLEAN if exit_zero else EXIT_FINDINGS


def _unsafe_count(findings: List) -> int:
    from mllint.findings import Applicability

    return sum(1 for f in findings if f.fix is not None and f.fix.applicability is Applicability.UNSAFE)
