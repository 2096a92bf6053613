"""What the configuration tells the semantic model about the code's environment.

Rules are queries on a `FileModel`; a few need facts that are not in the file itself but in
the project's settings (``torch-version`` in ``[tool.mllint]``: which defaults the code
runs with). `ModelOptions` carries them from the settings to ``build_model`` and on to the
rules as ``model.options``; it is part of the cache key through ``Settings.fingerprint``.
"""

from __future__ import annotations

import os
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
    # The project the file belongs to, as (root, cache dir, path relative to the root): the
    # per-file model asks it about names defined in other files (mllint/project/). None: the
    # file is judged alone (stdin, a file outside any project).
    project: Optional[Tuple[str, Optional[str], str]] = None

    @classmethod
    def from_settings(cls, settings) -> "ModelOptions":
        return cls(torch_version=getattr(settings, "torch_version", None))

    @classmethod
    def for_file(cls, settings, path: Optional[str], discovery=None, use_cache: bool = True) -> "ModelOptions":
        """The options of file `path` under its own `settings`, with its project (read with
        `discovery`, a ``config.Resolver``, or `settings`; facts cached in the settings' cache
        directory when `use_cache`). A path that is not an existing file has no project."""
        key = None
        if path and os.path.isfile(path):
            from mllint.project import key_for

            cache_dir = getattr(settings, "cache_dir", None) if use_cache else None
            key = key_for(path, discovery if discovery is not None else settings,
                          str(cache_dir) if cache_dir is not None else None)
        return cls(torch_version=getattr(settings, "torch_version", None), project=key)

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
