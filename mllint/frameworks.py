"""Which deep-learning framework a file (or a notebook's program) is written for, by its imports.

Most rules are about PyTorch: a Keras model called as ``model(x)`` in a notebook is not a
torch forward pass that keeps activations, and a JAX training loop has no ``zero_grad``
to miss. ``framework_of`` reads a file's imports (the screen's ``Facts``, built from
CPython's ``ast``; nothing here imports torch or LibCST) and answers one of:

- ``TORCH``: the file imports torch or a library built on it (torchvision, Lightning,
  accelerate, timm...), or Hugging Face ``transformers`` along with one of those;
- ``OTHER``: it imports TensorFlow, Keras, JAX or Flax (or kin: Haiku, Optax, Equinox,
  Trax), or uses ``transformers``' TensorFlow/Flax classes (``TFAutoModel``,
  ``FlaxBertModel``), and nothing torch-related;
- ``UNKNOWN``: neither; a file without any framework import (a helper module of a
  project, a script that imports only the project's own modules) or with
  ``transformers`` alone (its model classes are torch ones unless their names say TF or
  Flax; a tokenizer is neither).

The engine leaves out the torch rules (``Rule.framework == "torch"``) only for ``OTHER``;
a file that is ``UNKNOWN`` is linted as it always was (a project model may tell more).
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

__all__ = ["TORCH", "OTHER", "UNKNOWN", "framework_of", "framework_of_imports", "framework_of_source"]

TORCH = "torch"
OTHER = "other-framework"
UNKNOWN = "unknown"

# Top-level modules that mean PyTorch code (any module named torch* counts too:
# torchvision, torchaudio, torch_geometric, torchmetrics, torch_xla...).
TORCH_MODULES = frozenset({
    "lightning", "pytorch_lightning", "lightning_fabric", "accelerate", "timm", "deepspeed", "peft",
    "fairscale", "apex", "ignite", "fastai", "skorch", "detectron2", "pyro", "gpytorch", "opacus",
    "ultralytics", "segmentation_models_pytorch", "functorch", "xformers", "bitsandbytes", "trl",
})
# Top-level modules of the other frameworks.
OTHER_MODULES = frozenset({
    "tensorflow", "keras", "tf_keras", "jax", "jaxlib", "flax", "haiku", "optax", "equinox", "trax",
})
AMBIGUOUS_MODULES = frozenset({"transformers"})  # torch, TensorFlow and Flax classes side by side
# transformers' TensorFlow and Flax classes: TFAutoModel, TFBertForSequenceClassification, FlaxT5Model...
_HF_OTHER_CLASS = re.compile(r"^(?:TF|Flax)[A-Z]")


def _top(name: str) -> str:
    return name.split(".", 1)[0]


def framework_of_imports(imports: Iterable[str], used: Iterable[str] = ()) -> str:
    """TORCH, OTHER or UNKNOWN from the qualified names a file imports (``tensorflow.keras``,
    ``torch.nn``, ``transformers.TFAutoModel``) and, optionally, the qualified names it uses
    (``transformers.TFBertModel.from_pretrained`` through ``import transformers``).
    Relative imports (the project's own modules) say nothing."""
    tops = {_top(name) for name in imports if name and not name.startswith(".")}
    hf_other = False
    if tops & AMBIGUOUS_MODULES:  # only names the file imports or reaches through an import
        for name in list(imports) + list(used):
            parts = name.split(".")
            if parts[0] in AMBIGUOUS_MODULES and len(parts) > 1 and _HF_OTHER_CLASS.match(parts[1]):
                hf_other = True
                break
    if any(top.startswith("torch") or top in TORCH_MODULES for top in tops):
        return TORCH
    if tops & OTHER_MODULES or hf_other:
        return OTHER
    return UNKNOWN


def framework_of(facts) -> str:
    """TORCH, OTHER or UNKNOWN for a file from its ``screen.Facts``."""
    return framework_of_imports(facts.imports, facts.call_quals)


def framework_of_source(source: str, path: str = "<unknown>") -> Optional[str]:
    """``framework_of`` for Python source text; None when CPython cannot parse it."""
    from mllint import screen

    try:
        tree = screen.parse(source, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return framework_of(screen.facts_of(tree))
