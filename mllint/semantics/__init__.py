"""The semantic model of one file (see model.py); ``build_model`` is the entry point."""

from mllint.semantics.model import FileModel


def build_model(module, source: str, path: str) -> FileModel:
    from mllint.semantics import builder, summaries

    model = builder.build(module, source, path)
    model.index_effects()
    model.summaries = summaries.compute(model)
    return model


__all__ = ["FileModel", "build_model"]
