"""The semantic model of one file (see model.py); ``build_model`` is the entry point."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mllint.semantics.model import FileModel


def __getattr__(name):
    # FileModel is imported on first use: ``mllint.semantics.options`` is needed on every
    # run, the model (and LibCST with it) only when a file is parsed.
    if name == "FileModel":
        from mllint.semantics.model import FileModel

        return FileModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_model(module, source: str, path: str, options=None) -> "FileModel":
    """The model of one file; `options` (a `ModelOptions`) carries what the settings say
    about the environment (``torch-version``), as ``model.options``."""
    from mllint.project import view_from_key
    from mllint.semantics import builder, summaries
    from mllint.semantics.options import DEFAULT

    options = options if options is not None else DEFAULT
    model = builder.build(module, source, path, view_from_key(options.project))
    model.options = options
    model.index_effects()
    model.summaries = summaries.compute(model)
    return model


__all__ = ["FileModel", "build_model"]
