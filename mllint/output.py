"""Where the report goes: standard output, ``--output-file``, or nowhere (``--silent``).

Errors and warnings always go to standard error. A report written to a file is never
coloured (a file is not a terminal, whatever FORCE_COLOR says); the file's folder is
created when missing, as Ruff does. With ``--silent`` (``-qq``) nothing is printed on
standard output, but a report asked for with ``--output-file`` is still written.
"""

from __future__ import annotations

import dataclasses
import os
import sys


def write_report(reporter, results, options, output_file=None, silent: bool = False) -> None:
    from mllint.config import ConfigError

    if output_file:
        options = dataclasses.replace(options, color=False)
        try:
            folder = os.path.dirname(os.path.abspath(output_file))
            os.makedirs(folder, exist_ok=True)
            with open(output_file, "w", encoding="utf-8", newline="") as handle:
                reporter(results, options, handle)
        except OSError as exc:
            raise ConfigError(f"cannot write --output-file `{output_file}`: {exc.strerror or exc}") from None
        return
    if silent:
        return
    reporter(results, options, sys.stdout)
    sys.stdout.flush()


def show_fixes_on_stderr(options) -> None:
    """--show-fixes with a machine format (json, sarif, github): the summary would corrupt
    the report, so it goes to standard error."""
    from mllint.report._common import fixes_summary

    for line in fixes_summary(options):
        if line:
            print(line, file=sys.stderr)
