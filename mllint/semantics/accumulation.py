"""Losses accumulated across loop iterations (ML006): which accumulations keep a graph.

An *accumulation* is ``acc += v``, ``acc = acc + v`` or ``acc.append(v)`` inside a loop,
where ``acc`` is a name, an attribute (``self.total``) or a subscript (``logs["loss"]``).
It keeps a graph alive when ``v`` is a loss tensor of this iteration that carries one:
the name ``v`` refers to is backpropagated in the same loop (``loss.backward()``,
``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``, ``loss.div(n).backward()``),
or it was bound from a call of a local helper that backpropagates the name it returns
(``loss.backward(); return loss``), so it was computed with grad on, and no
``.detach()``/``.item()``/``float()`` rebinding sits in between. Anything
else (``loss.item()``, ``float(loss)``, a helper, ``loss.detach()``) is not matched.

The accumulator must outlive the iteration (not rebound unconditionally earlier in the same
loop body), and nothing in the function may backpropagate it or a value derived from it
(gradient accumulation ``loss_sum = loss_sum + loss; loss_sum.backward()``, REINFORCE lists
summed and backpropagated), nor hand it to a local helper that backpropagates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics.model import FileModel, Loop

_DETACHING = frozenset({"item", "detach", "tolist", "numpy", "data", "detach_"})
_NUMBER_FUNCS = frozenset({"float", "int", "round", "abs"})
# Tensor methods whose result keeps the graph of their receiver: backpropagating
# ``loss.div(n)`` backpropagates ``loss``. Scaling keeps the shape; reducing may not.
_SCALING_METHODS = frozenset({"div", "mul", "true_divide", "divide", "multiply", "float", "double", "to", "cuda",
                              "neg", "__truediv__", "__mul__"})
_REDUCING_METHODS = frozenset({"mean", "sum", "nanmean", "nansum"})
_GRAD_OFF = ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.set_grad_enabled",
             "torch.autograd.grad_mode.no_grad", "torch.enable_grad")


@dataclass
class Accumulation:
    loop: Loop
    statement: cst.BaseSmallStatement  # the AugAssign / Assign / Expr holding it
    target: cst.BaseExpression  # acc
    value: cst.BaseExpression  # what is added or appended (the whole expression)
    name: cst.Name  # the loss name inside value
    kind: str  # "+=", "+", "append"
    backward: cst.Call  # the backward call that proves a graph
    scalar: bool  # that backward needs a scalar (no gradient argument): `.item()` works


def _nodes(model: FileModel, kinds, node: cst.CSTNode) -> List[cst.CSTNode]:
    """The nodes of ``kinds`` under ``node`` in source order, not inside nested functions,
    classes or lambdas (the file's index: no walk)."""
    return model.index.nodes(kinds, node, nested=False)


def text(model: FileModel, node: cst.CSTNode) -> str:
    return "".join(model.code_of(node).split())


def _root(node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The container an accumulator lives in: ``logs`` for ``logs["loss"]``, else itself."""
    if isinstance(node, cst.Name):
        return node
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        return node
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        index = node.slice[0].slice.value
        if isinstance(index, (cst.SimpleString, cst.Name, cst.Attribute)) and _root(node.value) is not None:
            return _root(node.value)
    return None


def _loss_name(model: FileModel, value: cst.BaseExpression) -> Optional[cst.Name]:
    """The name of the accumulated loss: ``loss``, ``loss * x.size(0)``, ``w * loss``."""
    if isinstance(value, cst.Name):
        return value
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Multiply, cst.Divide)):
        if isinstance(value.left, cst.Name) and not _mentions(model, value.right, value.left.value):
            return value.left
        if isinstance(value.right, cst.Name) and isinstance(value.operator, cst.Multiply) and not _mentions(model, value.left, value.right.value):
            return value.right
    return None


def _mentions(model: FileModel, node: cst.CSTNode, name: str) -> bool:
    if isinstance(node, cst.Name):
        return node.value == name
    return any(child.value == name for child in _nodes(model, cst.Name, node))


def _backward_of(call: cst.Call, name: str) -> Optional[bool]:
    """Whether ``call`` backpropagates ``name``; the value says whether it needs a scalar."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "backward":
        receiver = func.value
        scalar = not any(a.keyword is None or a.keyword.value in ("gradient", "grad_tensors") for a in call.args)
        if isinstance(receiver, cst.Name) and receiver.value == name:
            return scalar
        # output["loss"].backward(), out.loss.backward(): the container holds the graph (no `.item()` on it)
        if isinstance(receiver, (cst.Subscript, cst.Attribute)) and isinstance(receiver.value, cst.Name) \
                and receiver.value.value == name:
            return False
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value == "scale":
            if receiver.args and isinstance(receiver.args[0].value, cst.Name) and receiver.args[0].value.value == name:
                return scalar
        if isinstance(receiver, cst.BinaryOperation) and isinstance(receiver.operator, (cst.Divide, cst.Multiply)):
            if isinstance(receiver.left, cst.Name) and receiver.left.value == name:
                return scalar
        # loss.div(n).backward(), loss.mean().backward(): a method that keeps the graph; a
        # reduction means the loss itself may not be a scalar (`.item()` could fail on it)
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) \
                and isinstance(receiver.func.value, cst.Name) and receiver.func.value.value == name:
            method = receiver.func.attr.value
            if method in _SCALING_METHODS:
                return scalar
            if method in _REDUCING_METHODS:
                return False
        # accelerator.backward(loss), torch.autograd.backward(loss)
        if call.args and call.args[0].keyword is None and isinstance(call.args[0].value, cst.Name):
            if call.args[0].value.value == name:
                return len(call.args) == 1
    return None


def _assigned_names(stmt: cst.CSTNode) -> List[Tuple[str, Optional[cst.BaseExpression]]]:
    """Names a small statement binds, with the value (None: not a plain binding)."""
    out: List[Tuple[str, Optional[cst.BaseExpression]]] = []

    def names(target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        if isinstance(target, cst.Name):
            out.append((target.value, value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                names(element.value, None)
        elif isinstance(target, cst.StarredElement):
            names(target.value, None)

    if isinstance(stmt, cst.Assign):
        for t in stmt.targets:
            names(t.target, stmt.value)
    elif isinstance(stmt, (cst.AnnAssign, cst.AugAssign)):
        names(stmt.target, stmt.value if isinstance(stmt, cst.AnnAssign) else None)
    elif isinstance(stmt, (cst.For,)):
        names(stmt.target, None)
    elif isinstance(stmt, cst.WithItem) and stmt.asname is not None:
        names(stmt.asname.name, None)
    return out


def detaching(value: Optional[cst.BaseExpression]) -> bool:
    """``x.detach()``, ``x.item()``, ``float(x)``, ``x.data``: a value without a graph."""
    if value is None:
        return False
    if isinstance(value, cst.Attribute) and value.attr.value == "data":
        return True
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in _DETACHING:
            return True
        if isinstance(func, cst.Name) and func.value in _NUMBER_FUNCS:
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in ("cpu", "to", "float", "mean", "sum", "squeeze", "clone"):
            return detaching(func.value) if isinstance(func.value, (cst.Call, cst.Attribute)) else False
    return False


def _grad_off_at(model: FileModel, node: cst.CSTNode) -> bool:
    parents = model.parents
    current = parents.get(node)
    while current is not None:
        if isinstance(current, cst.With):
            for item in current.items:
                expr = item.item.func if isinstance(item.item, cst.Call) else item.item
                qual = model.imports.qualname(expr) or ""
                if qual in ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad"):
                    return True
                if qual == "torch.set_grad_enabled" and isinstance(item.item, cst.Call) and item.item.args:
                    arg = item.item.args[0].value
                    if isinstance(arg, cst.Name) and arg.value == "False":
                        return True
        if isinstance(current, cst.FunctionDef):
            for dec in current.decorators:
                expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
                if (model.imports.qualname(expr) or "") in ("torch.no_grad", "torch.inference_mode"):
                    return True
            return False
        current = parents.get(current)
    return False


def _small_statements(model: FileModel, node: cst.CSTNode) -> List[cst.CSTNode]:
    """The small statements and ``for`` statements under ``node``, in source order, not in
    nested functions or classes (no statement is inside a lambda or an expression)."""
    return _nodes(model, (cst.BaseSmallStatement, cst.For), node)


def _own_statements(model: FileModel, loop: Loop) -> Set[int]:
    """Ids of the small statements of ``loop``'s body that are not in a loop nested in it."""
    index = model.index
    return {
        id(s) for s in _nodes(model, cst.BaseSmallStatement, loop.node.body)
        if index.enclosing(s, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef)) is loop.node
    }


def _match(model: FileModel, stmt: cst.CSTNode) -> Optional[Tuple[cst.BaseExpression, cst.BaseExpression, str]]:
    if isinstance(stmt, cst.AugAssign) and isinstance(stmt.operator, cst.AddAssign):
        return stmt.target, stmt.value, "+="
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, cst.BinaryOperation):
        op = stmt.value
        if isinstance(op.operator, cst.Add) and text(model, op.left) == text(model, stmt.targets[0].target):
            return stmt.targets[0].target, op.right, "+"
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Subscript):
        target = stmt.targets[0].target
        if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index) \
                and isinstance(target.slice[0].slice.value, cst.Name) and isinstance(stmt.value, cst.Name):
            return target, stmt.value, "store"  # log[step] = loss: one entry per iteration
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        call = stmt.value
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "append" and len(call.args) == 1:
            if call.args[0].keyword is None:
                return call.func.value, call.args[0].value, "append"
    return None


def _scope_node(model: FileModel, loop: Loop) -> cst.CSTNode:
    fn = model.functions.get(loop.scope)
    return fn.node if fn is not None else model.module


def _backprop_functions(model: FileModel) -> Set[str]:
    """Local functions (by short name) that run a backward pass (a whole-file fact: computed once)."""
    return model.memo(_backprop_functions, _find_backprop_functions)


def _find_backprop_functions(model: FileModel) -> Set[str]:
    out: Set[str] = set()
    for key, fn in model.functions.items():
        for node in _nodes(model, cst.Call, fn.node):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "backward":
                out.add(key.rsplit(".", 1)[-1])
                break
            if (model.imports.qualname(node.func) or "").endswith("autograd.grad"):
                out.add(key.rsplit(".", 1)[-1])
                break
    return out


def derived(model: FileModel, scope: cst.CSTNode, acc_text: str, root_name: Optional[str]) -> Set[str]:
    """Texts of names whose value is computed from the accumulator (to a fixpoint)."""
    seeds = {acc_text}
    if root_name:
        seeds.add(root_name)
    changed = True
    stmts = _nodes(model, (cst.Assign, cst.AnnAssign, cst.AugAssign), scope)
    while changed:
        changed = False
        for stmt in stmts:
            value = getattr(stmt, "value", None)
            if value is None or not any(_mentions_text(model, value, s) for s in seeds):
                continue
            for name, _ in _assigned_names(stmt):
                if name not in seeds:
                    seeds.add(name)
                    changed = True
    return seeds


def _mentions_text(model: FileModel, node: cst.CSTNode, target: str) -> bool:
    if "." not in target and "[" not in target:
        return _mentions(model, node, target)
    if text(model, node) == target:
        return True
    return any(text(model, n) == target for n in _nodes(model, (cst.Attribute, cst.Subscript), node))


def backpropagated(model: FileModel, scope: cst.CSTNode, names: Set[str]) -> bool:
    """Whether a backward pass (or a local helper that runs one, or autograd.grad) in
    ``scope`` reads any of ``names``."""
    helpers = _backprop_functions(model)
    for node in _nodes(model, cst.Call, scope):
        func = node.func
        qual = model.imports.qualname(func) or ""
        is_backward = (isinstance(func, cst.Attribute) and func.attr.value == "backward") or qual.endswith("autograd.grad")
        short = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        if not is_backward and short not in helpers:
            continue
        if any(_mentions_text(model, node, n) for n in names):
            return True
    return False


def _terms(expr: cst.BaseExpression) -> Iterator[str]:
    """Names that are arithmetic operands of ``expr`` (``a + 0.1 * b`` gives a, b), not call arguments."""
    if isinstance(expr, cst.Name):
        yield expr.value
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        yield from _terms(expr.left)
        yield from _terms(expr.right)
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Multiply, cst.Divide)):
        # a loss scaled by a number (`0.1 * kl`, `ce / 2`); never a weight or a count (`loss * num_tokens`)
        if isinstance(expr.right, (cst.Integer, cst.Float)):
            yield from _terms(expr.left)
        elif isinstance(expr.left, (cst.Integer, cst.Float)) and isinstance(expr.operator, cst.Multiply):
            yield from _terms(expr.right)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        yield from _terms(expr.expression)


def _bindings(ordered: List[cst.CSTNode], position: Dict[int, int], name: str) -> List[int]:
    """Where ``name`` is rebound, or a part of it is replaced (``output["loss"] = ...detach()``)."""
    out = [position[id(s)] for s in ordered for n, _ in _assigned_names(s) if n == name]
    for s in ordered:
        if isinstance(s, cst.Assign):
            for t in s.targets:
                if isinstance(t.target, (cst.Subscript, cst.Attribute)) and isinstance(t.target.value, cst.Name) \
                        and t.target.value.value == name:
                    out.append(position[id(s)])
    return out


def _graph_proof(model: FileModel, ordered, position, body, name: str, here: int, depth: int) -> Optional[Tuple[cst.Call, bool]]:
    """A backward call in the loop that backpropagates ``name`` as it is at position
    ``here`` (no rebinding of it in between), directly or as a term of a loss that is
    backpropagated (``loss = ce + 0.1 * kl; loss.backward()`` proves ``ce`` and ``kl``)."""
    bindings = _bindings(ordered, position, name)
    parents = model.parents
    for node in _nodes(model, cst.Call, body):
        is_bw = _backward_of(node, name)
        if is_bw is None:
            continue
        stmt_of = node
        while stmt_of is not None and id(stmt_of) not in position:
            stmt_of = parents.get(stmt_of)
        if stmt_of is None:
            continue
        where = position[id(stmt_of)]
        low, high = min(where, here), max(where, here)
        if any(low < b < high for b in bindings):
            continue
        return node, is_bw
    if depth >= 3:
        return None
    for stmt in ordered:
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name):
            target, value = stmt.targets[0].target.value, stmt.value
        elif isinstance(stmt, cst.AugAssign) and isinstance(stmt.target, cst.Name) and isinstance(stmt.operator, (cst.AddAssign, cst.SubtractAssign)):
            target, value = stmt.target.value, stmt.value
        else:
            continue
        if target == name or name not in set(_terms(value)):
            continue
        where = position[id(stmt)]
        low, high = min(where, here), max(where, here)
        if any(low < b < high for b in bindings):
            continue
        found = _graph_proof(model, ordered, position, body, target, where, depth + 1)
        if found is not None:
            return found
    return None


def _local_callee(model: FileModel, call: cst.Call, scope: str):
    """The function of this file ``call`` runs: ``f(...)`` or ``self.f(...)``."""
    func = call.func
    if isinstance(func, cst.Name) and func.value in model.functions:
        return model.functions[func.value]
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        cls_scope = model.class_scope_of(scope) if scope != "<module>" else None
        if cls_scope is not None:
            key = model.method_key(cls_scope.rsplit(".", 1)[-1], func.attr.value)
            if key is not None:
                return model.functions.get(key)
    return None


def _returned_after_backward(model: FileModel, value: Optional[cst.BaseExpression], scope: str) -> Optional[Tuple[cst.Call, bool]]:
    """``value`` calls a local helper whose every ``return`` hands back one name, the loss it
    backpropagated (``loss.backward(); ...; return loss``) with no rebinding in between: the
    backward call, and whether it needs a scalar."""
    if not isinstance(value, cst.Call):
        return None
    fn = _local_callee(model, value, scope)
    if fn is None:
        return None
    returns = _nodes(model, cst.Return, fn.node.body)
    if not returns or any(not isinstance(r.value, cst.Name) for r in returns):
        return None
    names = {r.value.value for r in returns}
    if len(names) != 1:
        return None
    name = names.pop()
    if _nodes(model, (cst.Yield, cst.For, cst.While), fn.node.body):
        return None  # a generator, or a loop: which iteration's loss is returned is not followed
    ordered = _small_statements(model, fn.node.body)
    found = None
    for index, stmt in enumerate(ordered):
        for node in _nodes(model, cst.Call, stmt) if not isinstance(stmt, cst.For) else ():
            if found is None:
                scalar = _backward_of(node, name)
                if scalar is not None:
                    found = (index, node, scalar)
        if found is not None and index > found[0] and any(n == name for n, _v in _assigned_names(stmt)):
            return None  # rebound after the backward (``loss = loss.detach()``)
    if found is None or _grad_off_at(model, found[1]):
        return None
    if _nodes(model, cst.If, fn.node.body) and len(returns) > 1:
        return None  # several exits: one may return before the backward
    return found[1], found[2]


def accumulations(model: FileModel) -> List[Accumulation]:
    found: List[Accumulation] = []
    for loop in model.loops:
        body = loop.node.body
        ordered = _small_statements(model, body)
        position = {id(s): i for i, s in enumerate(ordered)}
        own = _own_statements(model, loop)
        for stmt in ordered:
            if id(stmt) not in own:
                continue
            matched = _match(model, stmt)
            if matched is None:
                continue
            target, value, kind = matched
            name = _loss_name(model, value)
            root = _root(target)
            if name is None or root is None:
                continue
            here = position[id(stmt)]
            if kind == "store":
                key = target.slice[0].slice.value.value
                if key not in loop.targets and not any(key == n for s in ordered for n, _ in _assigned_names(s)) \
                        and not any(isinstance(s, cst.AugAssign) and isinstance(s.target, cst.Name) and s.target.value == key for s in ordered):
                    continue  # the same key on every iteration: overwritten, not accumulated
            # the loss name: bound in this loop, and backpropagated here with no rebinding in between
            bindings = [(position[id(s)], v) for s in ordered for n, v in _assigned_names(s) if n == name.value]
            if loop.targets and name.value in loop.targets:
                bindings.append((-1, None))
            if not bindings:
                continue
            before = [b for b in bindings if b[0] < here]
            if before and detaching(before[-1][1]):
                continue
            proof = _graph_proof(model, ordered, position, body, name.value, here, 0)
            if proof is None and before:
                # ``loss = train_step(batch)``: a local helper that backpropagates what it returns
                proof = _returned_after_backward(model, before[-1][1], loop.scope)
            if proof is None:
                continue
            backward, scalar = proof
            if backward is None:
                continue
            # the accumulator outlives the iteration: not rebound unconditionally before, in this body
            acc_text = text(model, target)
            root_text = text(model, root)
            reset = False
            for s in body.body if isinstance(body, cst.IndentedBlock) else ():
                if isinstance(s, cst.SimpleStatementLine):
                    for small in s.body:
                        if position.get(id(small), here) >= here:
                            continue
                        if isinstance(small, (cst.Assign, cst.AnnAssign)):
                            targets = small.targets if isinstance(small, cst.Assign) else [small]
                            for t in targets:
                                if text(model, t.target) in (acc_text, root_text):
                                    reset = True
            if reset:
                continue
            if _grad_off_at(model, stmt):
                continue
            scope = _scope_node(model, loop)
            root_name = root.value if isinstance(root, cst.Name) else None
            names = derived(model, scope, acc_text, root_name)
            if backpropagated(model, scope, names):
                continue
            if isinstance(root, cst.Attribute) and backpropagated(model, model.module, {root_text}):
                continue
            found.append(Accumulation(loop, stmt, target, value, name, kind, backward, scalar))
    return found
