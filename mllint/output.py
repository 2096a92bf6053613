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


class Progress:
    """``files done/total`` on standard error while a run lasts, for people at a terminal.

    Shown only when standard error is a terminal and the run has lasted more than DELAY
    seconds; one line rewritten in place (at most every REFRESH seconds) and erased at the
    end, so that nothing of it stays in the terminal nor reaches a pipe or a file."""

    DELAY = 1.5
    REFRESH = 0.1

    def __init__(self, enabled: bool = True, stream=None, clock=None):
        import time

        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock or time.monotonic
        self.enabled = enabled and _is_terminal(self.stream) and os.environ.get("TERM") != "dumb"
        self.start = self.clock()
        self.last = 0.0
        self.shown = False

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self.start < self.DELAY or (now - self.last < self.REFRESH and done < total):
            return
        self.last = now
        self.stream.write(f"\r\x1b[2Kmllint: {done}/{total} files")
        self.stream.flush()
        self.shown = True

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.shown = False


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
