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


class Status:
    """One status line on standard error for a long command (``mllint memory``): what it is doing
    now, with the seconds spent on it, rewritten in place once a second and erased at the end.

    Shown only when standard error is a terminal (and TERM is not dumb), so that nothing reaches a
    pipe or a file; `enabled` lets the caller turn it off (a machine format sent to a pipe). Unlike
    ``Progress`` it appears at once: each stage it names lasts seconds to minutes."""

    REFRESH = 1.0

    def __init__(self, prefix: str, enabled: bool = True, stream=None, clock=None):
        import threading
        import time

        self.prefix = prefix
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock or time.monotonic
        self.enabled = enabled and _is_terminal(self.stream) and os.environ.get("TERM") != "dumb"
        self.text = ""
        self.since = self.clock()
        self.shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        import threading

        with self._lock:
            self.text, self.since = text, self.clock()
            self._draw()
        if self._thread is None:
            self._thread = threading.Thread(target=self._tick, name="mllint-status", daemon=True)
            self._thread.start()

    def _tick(self) -> None:
        while not self._stop.wait(self.REFRESH):
            with self._lock:
                if self.shown:
                    self._draw()

    def _draw(self) -> None:
        import shutil

        seconds = int(self.clock() - self.since)
        line = f"{self.prefix}: {self.text}" + (f" ({seconds} s)" if seconds >= 1 else "")
        try:
            width = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            width = 0
        width = width or shutil.get_terminal_size((80, 24)).columns
        if len(line) >= width:  # a wrapped line could not be rewritten in place
            line = line[: max(1, width - 4)] + "..."
        try:
            self.stream.write(f"\r\x1b[2K{line}")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False
            return
        self.shown = True

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self.shown:
                try:
                    self.stream.write("\r\x1b[2K")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass
                self.shown = False

    def __enter__(self) -> "Status":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
