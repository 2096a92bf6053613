"""Which names hold torch tensors, and which hold a tensor's size.

A small, conservative fact table over ``FileModel.assignments``: a name in a scope is a
*known tensor* when every binding of it in that scope is a tensor-valued expression (a
torch call that builds or computes a tensor, a method of a known tensor that returns a
tensor, arithmetic or indexing of known tensors, the output of a model known from its
construction), or it is a parameter annotated ``torch.Tensor`` or one the function calls a
torch-only method on (``x.size(0)``, ``x.numel()``, ``x.unsqueeze(1)``, ``x.detach()``). A name is a *size* when
every binding of it is ``len(t)``, ``t.size(k)``, ``t.shape[k]``, ``t.numel()`` of a known
tensor, or comes from unpacking ``t.shape`` / ``t.size()``. Anything else (lists, numpy
arrays, dicts, loop variables, parameters without annotation) is unknown, never a tensor.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics.model import MODULE_SCOPE, FileModel
from mllint.semantics.names import dotted

# torch functions whose result is one tensor
TENSOR_FUNCTIONS = frozenset(
    """zeros ones empty full rand randn randint randperm arange linspace logspace eye tensor as_tensor
    from_numpy zeros_like ones_like empty_like full_like rand_like randn_like randint_like cat stack
    hstack vstack concat concatenate exp log log1p expm1 sin cos tan tanh sigmoid sqrt rsqrt abs
    matmul mm bmm einsum softmax log_softmax where clone clamp clip pow square mul add sub div
    normal bernoulli multinomial cumsum cumprod flip roll tril triu outer sign floor ceil round
    FloatTensor LongTensor IntTensor DoubleTensor BoolTensor ByteTensor HalfTensor Tensor""".split()
)
# methods of a tensor that return a tensor of the same kind
TENSOR_METHODS = frozenset(
    """clone detach float double half long int bool to cuda cpu view reshape contiguous squeeze unsqueeze
    permute transpose t flatten exp log abs sqrt sin cos tanh sigmoid relu clamp pow square neg mul add
    sub div matmul mm expand expand_as repeat type_as view_as reshape_as flip cumsum softmax
    log_softmax new_zeros new_ones new_empty new_full new_tensor zero_ fill_ copy_ requires_grad_""".split()
)
_TENSOR_ANNOTATIONS = ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor")
# methods only a torch tensor has (numpy arrays, lists, DataFrames have none of them; numpy's
# ``size`` is an attribute, so ``x.size(0)`` is torch): a parameter the function calls one of these
# on is a tensor, like one annotated ``torch.Tensor``
_TORCH_ONLY_METHODS = frozenset(
    """numel nelement unsqueeze unsqueeze_ detach detach_ new_zeros new_ones new_empty new_full new_tensor
    masked_fill masked_fill_ requires_grad_ is_cuda dim""".split()
)


class TensorFacts:
    """Known tensors and sizes per scope (see the module docstring)."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self.bindings: Dict[Tuple[str, str], List[Optional[cst.BaseExpression]]] = {}
        self.unpacked: Dict[Tuple[str, str], List[cst.BaseExpression]] = {}  # name -> values it was unpacked from
        for targets, value, ctx in model.assignments:
            if len(targets) == 1:
                self.bindings.setdefault((ctx.scope, targets[0]), []).append(value)
            else:
                for name in targets:
                    self.bindings.setdefault((ctx.scope, name), []).append(None)
                    self.unpacked.setdefault((ctx.scope, name), []).append(value)
        for loop in model.loops:
            for name in loop.targets:
                self.bindings.setdefault((loop.scope, name), []).append(None)  # a loop variable: unknown
        self.tensor_params: Set[Tuple[str, str]] = set()  # annotated torch.Tensor, or used with a torch-only method
        params: Set[Tuple[str, str]] = set()
        for key, fn in model.functions.items():
            for param in (*fn.node.params.params, *fn.node.params.kwonly_params, *fn.node.params.posonly_params):
                params.add((key, param.name.value))
                ann = param.annotation
                if ann is not None and (model.imports.qualname(ann.annotation) or "") in _TENSOR_ANNOTATIONS:
                    self.tensor_params.add((key, param.name.value))
                self.bindings.setdefault((key, param.name.value), []).append(None)
        for call, ctx in model.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
                method = func.attr.value
                key = (ctx.scope, func.value.value)
                if key in params and (method in _TORCH_ONLY_METHODS or (method == "size" and len(call.args) == 1)):
                    self.tensor_params.add(key)
        self._tensor: Dict[Tuple[str, str], bool] = {}

    def _home(self, scope: str, name: str) -> Optional[str]:
        """The scope whose binding of ``name`` the code in ``scope`` sees (None: not bound here)."""
        current = scope
        while True:
            if (current, name) in self.bindings:
                return current
            if current == MODULE_SCOPE:
                return None
            current = current.rsplit(".", 1)[0] if "." in current else MODULE_SCOPE
            if current in self.model.classes:  # class bodies do not enclose their methods
                current = current.rsplit(".", 1)[0] if "." in current else MODULE_SCOPE

    # --- tensors -------------------------------------------------------------------------
    def is_tensor_name(self, scope: str, name: str) -> bool:
        home = self._home(scope, name)
        if home is None:
            return False
        key = (home, name)
        if key in self._tensor:
            return self._tensor[key]
        self._tensor[key] = False  # cycles: not proven
        if key in self.tensor_params and len(self.bindings[key]) == 1:
            result = True
        else:
            values = [v for v in self.bindings[key]]
            if key in self.tensor_params:
                values = values[1:] if values and values[0] is None else values
            result = bool(values) and all(v is not None and self.is_tensor(home, v) for v in values)
        self._tensor[key] = result
        return result

    def is_tensor(self, scope: str, node: cst.BaseExpression) -> bool:
        """Whether ``node`` evaluates to a torch tensor, as far as the file shows."""
        from mllint.semantics import roles as R

        if isinstance(node, cst.Name):
            return self.is_tensor_name(scope, node.value)
        if isinstance(node, cst.Call):
            qual = self.model.imports.qualname(node.func) or ""
            if qual.startswith("torch.") and "." not in qual[len("torch."):] and qual[len("torch."):] in TENSOR_FUNCTIONS:
                return True
            if qual.startswith("torch.nn.functional.") and qual.rsplit(".", 1)[-1] not in ("one_hot",):
                return True
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in TENSOR_METHODS:
                return self.is_tensor(scope, node.func.value)
            ref = dotted(node.func)
            if ref and "." not in ref and self.model.has_role(ref, R.MODEL, scope, by_name=False):
                return not self.model.instance_of.get(scope, ref)  # a local class may return anything
            return False
        if isinstance(node, cst.BinaryOperation):
            return self.is_tensor(scope, node.left) or self.is_tensor(scope, node.right)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            return self.is_tensor(scope, node.expression)
        if isinstance(node, cst.Subscript):
            return self.is_tensor(scope, node.value)
        return False

    # --- sizes ---------------------------------------------------------------------------
    def sized_tensor(self, scope: str, node: cst.BaseExpression) -> Optional[str]:
        """The known tensor whose size ``node`` is (``len(x)``, ``x.size(0)``, ``x.shape[0]``,
        ``x.numel()``, or a name bound only to such), else None."""
        if isinstance(node, cst.Name):
            home = self._home(scope, node.value)
            if home is None:
                return None
            key = (home, node.value)
            found = None
            for value in self.bindings[key]:
                if value is None:
                    sources = self.unpacked.get(key)
                    if not sources or len(sources) != len([v for v in self.bindings[key] if v is None]):
                        return None
                    continue
                found = self.sized_tensor(home, value)
                if found is None:
                    return None
            for value in self.unpacked.get(key, ()):
                base = self._shape_of(home, value)
                if base is None:
                    return None
                found = base
            return found
        if isinstance(node, cst.Call):
            qual = self.model.imports.qualname(node.func)
            if qual == "len" and len(node.args) == 1:
                return self._tensor_ref(scope, node.args[0].value)
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("size", "numel", "nelement"):
                if node.func.attr.value == "size" and len(node.args) != 1:
                    return None
                return self._tensor_ref(scope, node.func.value)
            return None
        if isinstance(node, cst.Subscript):
            return self._shape_of(scope, node.value)
        return None

    def _shape_of(self, scope: str, node: cst.BaseExpression) -> Optional[str]:
        """``x.shape`` / ``x.size()`` of a known tensor: its name."""
        if isinstance(node, cst.Attribute) and node.attr.value == "shape":
            return self._tensor_ref(scope, node.value)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "size" and not node.args:
            return self._tensor_ref(scope, node.func.value)
        return None

    def _tensor_ref(self, scope: str, node: cst.BaseExpression) -> Optional[str]:
        if isinstance(node, cst.Name) and self.is_tensor_name(scope, node.value):
            return node.value
        return None


def tensor_facts(model: FileModel) -> TensorFacts:
    facts = getattr(model, "_tensor_facts", None)
    if facts is None:
        facts = TensorFacts(model)
        model._tensor_facts = facts  # type: ignore[attr-defined]
    return facts
