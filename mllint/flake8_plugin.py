"""mllint as a flake8 plugin: ``flake8 --select ML`` reports mllint's findings.

Registered under the ``flake8.extension`` entry point with the code prefix ``ML`` (as
TorchFix registers ``TOR``). flake8 hands over the file's ``lines`` and ``filename``;
mllint lints that text with its own engine.

Which rules run: the ones mllint itself would run on that file, i.e. the nearest
``[tool.mllint]`` configuration (``select``, ``ignore``, ``per-file-ignores``) or
mllint's default selection when there is none. flake8's ``--select``,
``--ignore``/``--extend-ignore`` and ``# noqa`` then filter what is shown, so
``flake8`` and ``mllint`` agree on a file unless flake8 is told to hide more. A rule
that is off by default is enabled in ``[tool.mllint]`` (``extend-select``), not with
flake8's ``--select``.

This module is imported only by flake8; it never imports flake8 itself.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Dict, Iterator, Sequence, Tuple

from mllint import __version__

_SETTINGS: Dict[str, object] = {}  # directory -> Settings (or the ConfigError message)


def _settings_for(path: str):
    from mllint.config import ConfigError, load_settings

    directory = os.path.dirname(os.path.abspath(path))
    if directory not in _SETTINGS:
        try:
            _SETTINGS[directory] = load_settings([path])
        except ConfigError as exc:
            _SETTINGS[directory] = str(exc)
    return _SETTINGS[directory]


class MLLintChecker:
    name = "mllint"
    version = __version__

    def __init__(self, tree, lines: Sequence[str], filename: str):
        # `tree` is unused (mllint parses with LibCST), but flake8 classifies a plugin
        # that asks for it as a whole-file checker, which is what this is.
        self.lines = lines
        self.filename = filename

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        from mllint.engine import lint_source
        from mllint.registry import rules_for

        path = self.filename
        if not path or path in ("-", "stdin"):  # flake8 - : settings of the working directory
            path = os.path.join(os.getcwd(), "stdin.py")
        settings = _settings_for(path)
        if isinstance(settings, str):
            yield 1, 0, f"ML000 mllint configuration error: {settings}", type(self)
            return
        rules = rules_for(settings.codes_for(path))
        from mllint.semantics.options import ModelOptions

        options = dataclasses.replace(ModelOptions.for_file(settings.settings_for(path), path, settings), fixes=False)  # flake8 shows no fixes
        for finding in lint_source("".join(self.lines), self.filename, rules, options):
            yield finding.line, max(finding.column - 1, 0), f"{finding.code} {finding.message}", type(self)
