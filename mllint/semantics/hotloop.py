"""Facts about the hot path of training: which loops run a training step on every
iteration, which names hold tensors there, and whether the file targets an accelerator.

Used by ML007 (host sync in the hot loop) and ML008 (DataLoader feeding CUDA training).
Everything here is a query on the FileModel; nothing is cached on it.
"""

from __future__ import annotations

import re
from typing import Iterator, List, Optional, Set

import libcst as cst

from mllint.semantics import roles as R
from mllint.semantics.model import BACKWARD, CALL, MODULE_SCOPE, STEP, FileModel, Loop, conds_within, counts_iterations
from mllint.semantics.names import dotted
from mllint.semantics.tree import visit as tree_visit

_DEVICE_WORDS = re.compile(r"cuda|device|\bdev\b|gpu|rank", re.IGNORECASE)


def training_loops(model: FileModel) -> List[Loop]:
    """Loops that run ``backward()`` (or an optimizer step) in their own body on every
    iteration, directly or through a local helper: the hot loops of training. An epoch loop
    around a batch loop is not one (its backward sits in the nested loop)."""
    out = []
    for loop in sorted(model.loops, key=lambda l: l.order):
        if loop.trip_count is not None and loop.trip_count <= 1:
            continue
        effects = model.loop_effects(loop)
        if any(e.kind in (BACKWARD, STEP) and e.depth == 0 for e in effects):
            out.append(loop)
    return out


def targets_device(model: FileModel) -> bool:
    """Whether the file moves anything to an accelerator: a ``.cuda()`` call, a ``.to(...)``
    whose argument names a device (``device``, ``"cuda"``, ``args.gpu``, ``rank``), a
    ``device=`` keyword naming one, or an accelerate/Fabric ``prepare``. On code that only
    ever runs on the CPU there is no device to synchronise with."""
    for call, _ctx in model.calls:
        func = call.func
        if isinstance(func, cst.Attribute):
            attr = func.attr.value
            if attr == "cuda":
                return True
            if attr == "to" and call.args and _DEVICE_WORDS.search(model.code_of(call.args[0].value)):
                return True
            if attr in ("prepare", "setup") and any(w in model.code_of(func.value).lower() for w in ("accelerat", "fabric")):
                return True
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "device" and "cuda" in model.code_of(arg.value).lower():
                return True
    return False


def _root(expr: cst.BaseExpression) -> Optional[str]:
    """The name an expression is computed from along its receiver chain:
    ``loss`` for ``loss.detach().mean()``, ``outputs`` for ``outputs[0].argmax(1)``."""
    while True:
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute):
                expr = expr.func.value
                continue
            return None
        if isinstance(expr, cst.Subscript):
            expr = expr.value
            continue
        if isinstance(expr, cst.Attribute):
            name = dotted(expr)
            if name is not None:
                return name
            expr = expr.value
            continue
        if isinstance(expr, cst.Name):
            return expr.value
        return None


def _operands(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The leaves of arithmetic and comparisons (``(pred == y).float()`` -> ``pred``, ``y``)."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        inner = expr.func.value
        if isinstance(inner, (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)):
            yield from _operands(inner)
            return
    if isinstance(expr, cst.BinaryOperation):
        yield from _operands(expr.left)
        yield from _operands(expr.right)
    elif isinstance(expr, cst.Comparison):
        yield from _operands(expr.left)
        for target in expr.comparisons:
            yield from _operands(target.comparator)
    elif isinstance(expr, cst.UnaryOperation):
        yield from _operands(expr.expression)
    else:
        yield expr


def _produces_tensor(model: FileModel, value: cst.BaseExpression, scope: str, known: Set[str]) -> bool:
    """Whether ``value`` is a tensor a training step computes: a call of a model or a loss
    function (``model(x)``, ``criterion(out, y)``, ``F.cross_entropy(...)``), or anything
    computed from one through methods, indexing and arithmetic."""
    for leaf in _operands(value):
        if _read_on_host(leaf):
            continue  # loss.item(), out.cpu().numpy(): a Python number or host data now
        base = _base(leaf)
        if isinstance(base, cst.Call) and _callee_is_net(model, base, scope):
            return True
        root = _root(leaf)
        if root is not None and (root in known or root.split(".")[0] in known):
            return True
    return False


_HOST_READS = frozenset({"item", "tolist", "numpy", "cpu"})


def _read_on_host(expr: cst.BaseExpression) -> bool:
    """Whether a receiver chain passes through a host read (``loss.item()``, ``x.cpu()``)."""
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value in _HOST_READS:
                return True
            expr = expr.func.value
        elif isinstance(expr, (cst.Subscript, cst.Attribute)):
            expr = expr.value
        else:
            return False


def _base(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The start of a receiver chain: ``model(x)`` in ``model(x).logits.argmax(1)``, the
    name in ``loss.detach()``; a method call's receiver is followed, a plain call is not."""
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if dotted(expr.func) is not None and _root(expr.func.value) is not None:
                # obj.method(...): a method of a name, or a dotted callee (self.model(x))
                return expr
            expr = expr.func.value
        elif isinstance(expr, (cst.Subscript,)):
            expr = expr.value
        elif isinstance(expr, cst.Attribute) and dotted(expr) is None:
            expr = expr.value
        else:
            return expr


def _callee_is_net(model: FileModel, call: cst.Call, scope: str) -> bool:
    ref = dotted(call.func)
    if ref is None:
        return False
    qual = model.imports.qualname(call.func) or ""
    if qual.startswith("torch.nn.functional.") and ("loss" in qual or "entropy" in qual or qual.endswith("_loss")):
        return True
    if ref.endswith(".forward"):
        ref = ref[: -len(".forward")]
    return any(model.has_role(ref, role, scope, by_name=False) for role in (R.MODEL, R.CRITERION)) or (
        model.has_role(ref, R.MODEL, scope) or model.has_role(ref, R.CRITERION, scope)
    )


def tensor_names(model: FileModel, scope: str) -> Set[str]:
    """Names of ``scope`` that hold tensors of the training step: losses (``.backward()``
    is called on them) and model or loss-function outputs, and names computed from them."""
    known: Set[str] = set()
    for effect in model.effects_in(scope):
        if effect.kind == BACKWARD and isinstance(effect.node, cst.Call) and isinstance(effect.node.func, cst.Attribute):
            receiver = effect.node.func.value  # loss.backward(), scaler.scale(loss).backward()
            for node in _names(receiver):
                known.add(node)
        elif effect.kind == BACKWARD and isinstance(effect.node, cst.Call) and effect.node.args:
            known.update(_names(effect.node.args[0].value))  # accelerator.backward(loss)
    known = {n for n in known if n not in ("self", "cls") and not model.has_role(n, R.SCALER, scope) and not model.has_role(n, R.ACCELERATOR, scope)}
    assigned = [(targets, value) for targets, value, ctx in model.assignments_in(scope)]
    changed = True
    while changed:
        changed = False
        for targets, value in assigned:
            if all(t in known for t in targets):
                continue
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(targets):
                continue  # a, b = x, y: judged element by element below
            if _produces_tensor(model, value, scope, known):
                for t in targets:
                    if t not in known and "[" not in t:
                        known.add(t)
                        changed = True
    return known


def _names(expr: cst.BaseExpression) -> Set[str]:
    found: Set[str] = set()

    class Finder(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            name = dotted(node)
            if name is not None:
                found.add(name.split(".")[0])
                return False
            return True

        def visit_Call(self, node: cst.Call) -> bool:
            for arg in node.args:
                tree_visit(arg.value, self)
            if isinstance(node.func, cst.Attribute):
                tree_visit(node.func.value, self)
            return False

    tree_visit(expr, Finder())
    return found


def is_tensor(model: FileModel, expr: cst.BaseExpression, scope: str, known: Set[str]) -> bool:
    return _produces_tensor(model, expr, scope, known)


def every_iteration(model: FileModel, loop: Loop, ctx) -> bool:
    """Code directly in ``loop``'s body (not in a nested loop, a lambda or a comprehension's
    own loop) that runs on every iteration: under no condition inside the loop, or only
    under conditions the loop never changes (``if args.loss == "r1":`` holds on every
    iteration or on none). A condition that counts iterations (``if step % 10 == 0``),
    tests anything the loop changes (``if not torch.isfinite(loss)``), or an ``except``
    handler runs some iterations only."""
    if ctx.loop is not loop:
        return False
    conds = conds_within(ctx.conds, loop)
    if not conds:
        return True
    from mllint.semantics.invariance import analysis

    facts = analysis(model).facts(loop)
    for cond in conds:
        if cond.branch == "except" or cond.node is None or counts_iterations(cond, loop.targets):
            return False
        if not facts.invariant(cond.node):
            return False
    return True


# --- DataLoaders -----------------------------------------------------------------------------


def cuda_derived(model: FileModel, expr: cst.BaseExpression, scope: str) -> bool:
    """Whether a ``.to(expr)`` argument names a CUDA device: a string with ``cuda``, an
    expression mentioning it (``torch.device("cuda" if ... else "cpu")``), or a name (or
    attribute, ``self.device``) assigned somewhere in the file from one."""
    text = model.code_of(expr)
    if "cuda" in text.lower():
        return True
    name = dotted(expr)
    if name is None:
        return False
    last = name.rsplit(".", 1)[-1]
    for targets, value, _ctx in model.assignments:
        if any(t == name or t.rsplit(".", 1)[-1] == last for t in targets):
            if "cuda" in model.code_of(value).lower():
                return True
    # argparse: parser.add_argument("--device", default="cuda")
    for call, _ctx in model.calls:
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument" and call.args:
            first = call.args[0].value
            if isinstance(first, cst.SimpleString) and first.evaluated_value.lstrip("-").replace("-", "_") == last:
                if any(a.keyword is not None and a.keyword.value == "default" and "cuda" in model.code_of(a.value).lower() for a in call.args):
                    return True
    return False


def moves_to_cuda(model: FileModel, loop: Loop) -> Optional[cst.Call]:
    """The first call in ``loop`` (at any depth) that moves data to CUDA: ``x.cuda()``,
    ``x.to("cuda")``, ``x.to(device)`` with a CUDA ``device``."""
    for call, ctx in model.calls:
        if ctx.scope != loop.scope or not loop.encloses(ctx.loop):
            continue
        func = call.func
        if not isinstance(func, cst.Attribute):
            continue
        if func.attr.value == "cuda":
            return call
        if func.attr.value == "to" and call.args:
            arg = call.args[0].value
            if call.args[0].keyword is not None and call.args[0].keyword.value != "device":
                continue
            if cuda_derived(model, arg, loop.scope):
                return call
    return None


def loops_over(model: FileModel, name: str, scope: str, depth: int = 0) -> List[Loop]:
    """Loops that iterate the object ``name`` of ``scope`` holds: loops of ``scope`` over
    it, and loops of local functions it is passed to, over the parameter it lands in."""
    names = {name}
    for targets, value, ctx in model.assignments:  # pbar = tqdm(enumerate(loader)); it = iter(loader)
        if ctx.scope == scope and len(targets) == 1 and _wraps(value, name):
            names.add(targets[0])
    found = [loop for loop in model.loops if loop.scope == scope and loop.iter_ref in names]
    if scope == MODULE_SCOPE:  # a module-level loader read by a function (def train(): for x in train_loader)
        found += [
            loop for loop in model.loops
            if loop.scope != scope and loop.iter_ref == name and name not in model.locals.get(loop.scope, set())
        ]
    if depth >= 2:
        return found
    for effect in model.effects_in(scope):
        if effect.kind != CALL or not effect.args or not effect.callee:
            continue
        for param, arg in effect.args.items():
            if arg == name:
                found.extend(loops_over(model, param, effect.callee, depth + 1))
    return found


_WRAPPERS = frozenset({"tqdm", "enumerate", "iter", "trange", "track"})


def _wraps(value: cst.BaseExpression, name: str) -> bool:
    """``tqdm(enumerate(loader), ...)``: a progress bar or counter around the object ``name``."""
    while isinstance(value, cst.Call):
        callee = dotted(value.func) or ""
        if callee.rsplit(".", 1)[-1] not in _WRAPPERS or not value.args:
            return False
        value = value.args[0].value
    return dotted(value) == name
