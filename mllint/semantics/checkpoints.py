"""What a file says about the checkpoints it loads with ``torch.load`` (ML010).

Two facts beyond the call itself:

- *the code relies on the weights-only default*: the load runs inside
  ``with torch.serialization.safe_globals([...])`` or the file allow-lists classes with
  ``torch.serialization.add_safe_globals([...])``. Both only mean something to the weights-only
  unpickler, which ``torch.load`` uses by default from PyTorch 2.6: the author targets that
  default, as a declared ``torch>=2.6`` would say.
- *an in-memory round trip*: the file argument is a name bound in the same function only to an
  empty ``io.BytesIO()`` that the same function fills with ``torch.save``. Nothing read comes
  from outside the process (a test that pickles a whole object and loads it back).
  ``io.BytesIO(data)`` with bytes from elsewhere (a download, another rank) is not one.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from mllint.semantics.model import Context, FileModel
from mllint.semantics.names import call_argument

SAFE_GLOBALS_CONTEXTS = frozenset({"torch.serialization.safe_globals"})
ADD_SAFE_GLOBALS = frozenset({"torch.serialization.add_safe_globals"})
BYTES_IO = frozenset({"io.BytesIO"})
TORCH_SAVES = frozenset({"torch.save", "torch.serialization.save"})


def allow_lists_globals(model: FileModel) -> bool:
    """The file calls ``add_safe_globals``: every load in it targets the weights-only default."""
    return any(model.imports.qualname(call.func) in ADD_SAFE_GLOBALS for call, _ in model.calls)


def in_safe_globals_block(model: FileModel, ctx: Context) -> bool:
    """The load sits in a ``with torch.serialization.safe_globals([...])`` block."""
    return any(
        isinstance(item.item, cst.Call) and model.imports.qualname(item.item.func) in SAFE_GLOBALS_CONTEXTS
        for with_node in ctx.withs
        for item in with_node.items
    )


def is_in_memory_round_trip(model: FileModel, call: cst.Call, ctx: Context) -> bool:
    """``torch.load(buf)`` of an empty ``io.BytesIO()`` the same function wrote with ``torch.save``."""
    source = call_argument(call, 0, "f")  # torch.load(f, ...)
    if not isinstance(source, cst.Name):
        return False
    name = source.value
    bindings = [value for targets, value, where in model.assignments if where.scope == ctx.scope and name in targets]
    if not bindings or name in model.iteration_vars:
        return False
    for value in bindings:
        if not (isinstance(value, cst.Call) and not value.args and model.imports.qualname(value.func) in BYTES_IO):
            return False
    return any(
        where.scope == ctx.scope
        and model.imports.qualname(save.func) in TORCH_SAVES
        and _names(call_argument(save, 1, "f"), name)  # torch.save(obj, f)
        for save, where in model.calls
    )


def _names(node: Optional[cst.BaseExpression], name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name
