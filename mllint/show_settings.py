"""``mllint --show-settings FILE``: the settings one file is linted with, in a readable form."""

from __future__ import annotations

import os

from mllint.config import DEFAULT_EXCLUDE, ConfigError, Resolver


def render(resolver: Resolver, path: str) -> str:
    """The resolved settings of `path` (a file, or a directory for the files directly in it)."""
    if not os.path.exists(path):
        raise ConfigError(f"--show-settings: path does not exist: {path}")
    if os.path.isdir(path):
        settings = resolver.settings_for_dir(path)
        rules = settings.codes_for(os.path.join(path, "__init__.py"))
    else:
        settings = resolver.settings_for(path)
        rules = settings.codes_for(path)
    if settings.config_path is not None:
        config = str(settings.config_path)
    elif resolver.cli.isolated:
        config = "none (--isolated)"
    else:
        config = "none (defaults)"
    ignored = sorted(settings.select - rules)

    def patterns(values) -> str:
        if tuple(values) == DEFAULT_EXCLUDE:
            return "(defaults) " + ", ".join(values)
        return ", ".join(values) if values else "(none)"

    per_file = [f"{pattern} = {', '.join(sorted(codes))}" for pattern, codes in settings.per_file_ignores]
    rows = [
        ("file", path),
        ("config file", config),
        ("project root", str(settings.root)),
        ("enabled rules", ", ".join(sorted(rules))),
        ("ignored here", ", ".join(ignored) + " (per-file-ignores)" if ignored else "(none)"),
        ("exclude", patterns(settings.exclude)),
        ("extend-exclude", patterns(settings.extend_exclude)),
        ("per-file-ignores", "; ".join(per_file) if per_file else "(none)"),
        ("cache dir", str(settings.cache_dir)),
        ("torch-version", _torch_version(settings)),
        ("notebooks", "linted" if settings.notebooks else "left out (notebooks = false)"),
        ("max-file-size", _size(settings.max_file_size)),
    ]
    width = max(len(name) for name, _ in rows)
    return "".join(f"{name + ':':<{width + 1}} {value}\n" for name, value in rows)


def _torch_version(settings) -> str:
    if not settings.torch_version:
        return "(not set, and no requirement on torch declared in the project root)"
    source = getattr(settings, "torch_version_source", None)
    return f"{settings.torch_version} (inferred from {source})" if source else settings.torch_version


def _size(size: int) -> str:
    from mllint.engine import format_size

    return format_size(size) + (f" ({size} bytes)" if size >= 1024 else "")
