"""What the configuration tells the semantic model about the code's environment.

Rules are queries on a `FileModel`; a few need facts that are not in the file itself but in
the project's settings (``torch-version`` in ``[tool.mllint]``: which defaults the code
runs with). `ModelOptions` carries them from the settings to ``build_model`` and on to the
rules as ``model.options``; it is part of the cache key through ``Settings.fingerprint``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class ModelOptions:
    torch_version: Optional[str] = None  # "2.6": the oldest PyTorch the code is run with
    # Build each fix's edits (--fix, --diff, --verify, JSON, SARIF, editors); off, a fix is
    # deferred: it says a fix exists and costs nothing (see FileModel.deferred_fix).
    fixes: bool = True
    # Not a model fact: whether the engine screens rules before parsing (mllint/screen.py;
    # ``--no-screen`` turns it off), carried here to the worker processes with the options.
    screen: bool = True

    @classmethod
    def from_settings(cls, settings) -> "ModelOptions":
        return cls(torch_version=getattr(settings, "torch_version", None))

    def torch_at_least(self, version: str) -> bool:
        """True when the configured ``torch-version`` is set and is `version` or newer."""
        have = _parse(self.torch_version)
        return have is not None and have >= (_parse(version) or (0,))


def _parse(version: Optional[str]) -> Optional[Tuple[int, ...]]:
    if not version:
        return None
    match = re.match(r"^\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


DEFAULT = ModelOptions()
