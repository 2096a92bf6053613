"""A tensor built from the same arguments on every batch: build it once, before the loop.

Why it matters
    ``torch.ones(seq_len, seq_len, device=device)``, ``torch.tensor(class_weights)`` or
    ``torch.arange(n)`` inside a loop over batches allocates and fills the same tensor
    again on every iteration, although nothing it is built from changes in the loop.
    ``torch.tensor(...)`` of Python data onto a GPU is also a host-to-device copy from
    pageable memory, which the CPU waits for on every batch. Built once before the
    loop, it costs nothing per batch. No error is raised; the loop just does work it
    does not need (fixtures/ml004: 25 constant tensors built per epoch of 8 batches
    against 4; with tensors that small the CPU time is the same within noise, the cost
    grows with the size of the tensors and the number of batches).

When the code is fine
    - the shape or the values depend on the batch (``torch.zeros(x.size(0))``, anything
      derived from the loop variable or from names assigned in the loop), or on a call
      whose result may change (``torch.zeros(get_size())``);
    - random tensors (``torch.rand``/``randn``/``randint``/``randperm``/``normal``);
    - tensors changed in place in the loop (accumulators: ``acc += ...``,
      ``acc.add_(...)``, ``acc[i] = ...``, ``out=acc``, any ``*_`` method, a helper
      that changes its argument), and tensors that require grad;
    - tensors that outlive the iteration (appended to a list, stored on an object, also
      through a repeated list ``[t] * n``, returned or yielded): each iteration needs its own;
    - allocations in ``__init__``, inside comprehensions or lambdas, in ``except``
      handlers, or under a condition that may hold on some iterations only
      (``if step % 100 == 0:``, ``if not losses:``);
    - empty placeholders (``torch.zeros(0)``, ``torch.tensor([])``), and one-element
      tensors built on the CPU and left there (``torch.tensor(1.0)``, ``torch.zeros(())``,
      ``torch.LongTensor([[sos]])``): they cost what the Python number costs, and a 0-d
      CPU tensor joins CUDA arithmetic without a copy (one built with ``device=`` or moved
      by ``.to(device)``/``.cuda()`` in the same expression is a host-to-device copy on
      every batch, and is reported);
    - a seed repeated at once to a size that changes in the loop
      (``torch.tensor([h, w]).repeat(bsz, 1)``): the repeat allocates on every batch anyway;
    - loops that are not over batches (over layers, epochs, hyper-parameters, the items
      of one batch, the timesteps of a sampler or of autoregressive generation, the steps
      of a beam search), loops that stop after their first batch, and loops in unit tests
      (a few fixed steps or a toy loader, run once to check behaviour).
    A start value rebound in the loop (``h = torch.zeros(...)`` then ``h = cell(x, h)``,
    ``reg = torch.tensor(0., device=device)`` then ``reg = reg + p.norm()``) is reported:
    the rebinding builds new tensors and leaves the start value alone, so it can be built
    once.

How to fix
    Build the tensor once, before the loop, and use it in the loop. ``--fix`` moves an
    unconditional ``name = torch.ones(...)`` statement to just before the loop (out of
    nested batch loops too); when the name is bound elsewhere as well, or the
    allocation sits inside an expression (``criterion(out, torch.zeros(3))``), it builds
    the tensor before the loop under a new name (``h_init``, ``weight``, ``zeros_3``)
    and uses that name in the loop. The fix is only offered when the tensor is provably
    the same on every iteration and never changed in place, and the allocation runs on
    every iteration (not under an ``if``, not in a ``try`` with handlers, not under
    ``with torch.device(...)``).
"""

from __future__ import annotations

import builtins
import keyword
import re
from typing import Iterable, List, Optional, Set, Tuple

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics.invariance import NEW_METHODS, TENSOR_CONSTRUCTORS, Analysis, LoopFacts, analysis
from mllint.semantics.model import FileModel, Loop, counts_iterations
from mllint.semantics.names import dotted, shorten
from mllint.semantics.tree import children as tree_children

CODE = "ML004"
NAME = "per-batch-tensor-allocation"
MESSAGE = "a tensor is built from the same arguments on every batch: build it once before the loop"
TRIGGERS = (
    "zeros(", "ones(", "full(", "empty(", "eye(", "arange(", "range(", "linspace(", "logspace(", "tensor(",
    "Tensor(", "_window(", "_indices(",
)
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = "safe"


def SCREEN(facts) -> bool:
    # Sound: a finding is a call written in a loop's body (``ctx.loop``; not in a nested def)
    # whose callee is a torch tensor constructor by its qualified name (aliases resolved as
    # ImportTable does) or an ``x.new_*`` method.
    return not facts.loop_call_quals.isdisjoint(TENSOR_CONSTRUCTORS) or not facts.loop_attr_calls.isdisjoint(NEW_METHODS)

_SHORT = {
    "zeros": "zeros", "ones": "ones", "full": "filled", "empty": "buffer", "eye": "eye", "arange": "arange",
    "range": "arange", "linspace": "linspace", "logspace": "logspace", "tril_indices": "tril_indices",
    "triu_indices": "triu_indices", "new_zeros": "zeros", "new_ones": "ones", "new_full": "filled",
    "new_empty": "buffer",
}


# --- finding the allocations ----------------------------------------------------------------


def _constructor(model: FileModel, call: cst.Call) -> Optional[str]:
    """The short name of the tensor constructor ``call`` calls (``zeros``), else None."""
    qual = model.imports.qualname(call.func) or ""
    if qual in TENSOR_CONSTRUCTORS:
        return qual.rsplit(".", 1)[-1]
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in NEW_METHODS:
        return call.func.attr.value
    return None


def _allocation_invariant(facts: LoopFacts, call: cst.Call, kind: str) -> bool:
    if not call.args:
        return False  # torch.Tensor(): an empty placeholder
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "requires_grad" and not (
            isinstance(arg.value, cst.Name) and arg.value.value == "False"
        ):
            return False  # a leaf that collects gradients: each iteration needs its own
        if arg.keyword is not None and arg.keyword.value == "out":
            return False
    if _empty(call, kind):
        return False  # torch.zeros(0), torch.tensor([]): an empty placeholder, no storage to allocate
    if kind == "as_tensor":
        data = call.args[0].value
        if not isinstance(data, (cst.List, cst.Tuple, cst.Integer, cst.Float)):
            return False  # as_tensor(t) of a tensor already there allocates nothing
    if isinstance(call.func, cst.Attribute) and kind in NEW_METHODS and not facts.invariant(call.func.value):
        return False
    if not facts.pure_call(call):
        return False
    if facts.changes_defaults:
        return False  # torch.set_default_dtype(...) in the loop: what torch.zeros(3) builds may change
    return all(facts.invariant(arg.value) for arg in call.args)


_SHAPED = frozenset({"zeros", "ones", "empty", "full", "new_zeros", "new_ones", "new_empty", "new_full"})


def _empty(call: cst.Call, kind: str) -> bool:
    """An empty placeholder: a literal 0 among the sizes (``torch.zeros(0)``,
    ``torch.empty((0, 3))``, ``torch.Tensor(0)``) or empty data (``torch.tensor([])``)."""
    positional = [a.value for a in call.args if a.keyword is None or a.keyword.value in ("size", "data")]
    if not positional:
        return False
    first = positional[0]
    if kind in ("tensor", "as_tensor", "new_tensor") or kind.endswith("Tensor") and isinstance(first, (cst.List, cst.Tuple)):
        return isinstance(first, (cst.List, cst.Tuple)) and not first.elements  # data, not sizes
    if kind not in _SHAPED and not kind.endswith("Tensor"):
        return False
    sizes = [e.value for e in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else positional
    return any(isinstance(s, cst.Integer) and s.value == "0" for s in sizes)


def _one_element(data: cst.BaseExpression) -> bool:
    """Python data that makes a tensor of one element: a number (``1.0``, ``-1``, ``True``,
    ``float(x)``), or a list or tuple holding exactly one such (``[[sos]]``: one element
    whatever its value)."""
    if isinstance(data, (cst.Integer, cst.Float, cst.Imaginary)):
        return True
    if isinstance(data, cst.UnaryOperation):
        return isinstance(data.expression, (cst.Integer, cst.Float, cst.Imaginary))
    if isinstance(data, cst.Name):
        return data.value in ("True", "False")
    if isinstance(data, cst.Call) and isinstance(data.func, cst.Name) and data.func.value in ("float", "int", "bool"):
        return True
    if isinstance(data, (cst.List, cst.Tuple)) and len(data.elements) == 1:
        only = data.elements[0]
        return not isinstance(only, cst.StarredElement) and (
            _one_element(only.value) or isinstance(only.value, (cst.Name, cst.Attribute, cst.Subscript))
        )
    return False


def _one_element_sizes(sizes: List[cst.BaseExpression]) -> bool:
    """Sizes of a tensor with one element: none (``()``: a 0-d tensor) or all the literal 1."""
    if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
        sizes = [e.value for e in sizes[0].elements]
    return all(isinstance(s, cst.Integer) and s.value == "1" for s in sizes)


def _cpu_scalar(an: Analysis, call: cst.Call, kind: str, expr: cst.BaseExpression) -> bool:
    """A one-element tensor built on the CPU and left there (``torch.tensor(1.0)``,
    ``torch.zeros(())``, ``torch.LongTensor([[sos]])``): it costs what the Python number it
    wraps costs, and a 0-d CPU tensor joins CUDA arithmetic without a copy. One that
    names a device, or that the hoisted expression moves (``.to(device)``, ``.cuda()``),
    is a host-to-device copy on every batch and is not excused."""
    qual = an.model.imports.qualname(call.func) or ""
    if kind in NEW_METHODS or qual.startswith("torch.cuda."):
        return False  # x.new_zeros(1): on x's device
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            if not (isinstance(arg.value, cst.Name) and arg.value.value == "None") and not (
                isinstance(arg.value, cst.SimpleString) and arg.value.evaluated_value == "cpu"
            ):
                return False
    node: cst.CSTNode = call
    while node is not expr:  # the transformations hoisted with it
        parent = an.parents.get(node)
        if parent is None:
            return False
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in ("to", "cuda", "pin_memory"):
            return False
        node = parent
    positional = [a.value for a in call.args if a.keyword is None]
    data = next((a.value for a in call.args if a.keyword is not None and a.keyword.value in ("data", "size")), None)
    if kind in ("tensor", "as_tensor", "scalar_tensor"):
        first = positional[0] if positional else data
        return first is not None and _one_element(first)
    if kind.endswith("Tensor"):  # torch.Tensor, torch.LongTensor: data or sizes
        if len(positional) == 1 and isinstance(positional[0], (cst.List, cst.Tuple)):
            return _one_element(positional[0])  # torch.LongTensor([[sos]]): data
        return bool(positional) and _one_element_sizes(positional)  # torch.FloatTensor(1): sizes
    if kind in ("zeros", "ones", "empty"):
        sizes = positional or ([data] if data is not None else [])
        return _one_element_sizes(sizes)
    if kind == "full":
        return bool(positional) and _one_element_sizes(positional[:1])
    return False


_REPEATS = frozenset({"repeat", "repeat_interleave", "tile"})


def _repeated_per_batch(an: Analysis, model: FileModel, expr: cst.BaseExpression) -> bool:
    """The tensor is at once repeated to a size that changes in the loop
    (``torch.tensor(scale).repeat(bsz)``, ``torch.repeat_interleave(t, counts)``): the
    repeat allocates on every batch anyway, so building its seed once saves a fraction."""
    parent = an.parents.get(expr)
    if isinstance(parent, cst.Attribute) and parent.value is expr and parent.attr.value in _REPEATS:
        return isinstance(an.parents.get(parent), cst.Call)
    if isinstance(parent, cst.Arg):
        call = an.parents.get(parent)
        if isinstance(call, cst.Call) and call.args and call.args[0] is parent:
            qual = model.imports.qualname(call.func) or ""
            return qual in ("torch.repeat_interleave", "torch.tile")
    return False


def _in_body(an: Analysis, node: cst.CSTNode, loop: Loop) -> bool:
    body = loop.node.body
    return any(parent is body for parent in an.ancestors(node))


def _rarely_runs(facts: LoopFacts, loop: Loop, ctx) -> bool:
    """Under a condition inside the loop that may hold on some iterations only: one that
    counts iterations (``if step % 100 == 0``) or tests anything the loop changes
    (``if not losses:``), or in an ``except`` handler. A condition the loop never changes
    (``if args.use_mask:``) holds on every iteration or on none."""
    for cond in ctx.conds:
        if cond.loop is not None and loop.encloses(cond.loop):
            if cond.branch == "except" or cond.node is None or counts_iterations(cond, loop.targets):
                return True
            if not facts.invariant(cond.node):
                return True
    return False


def _hoistable(an: Analysis, facts: LoopFacts, call: cst.Call) -> cst.BaseExpression:
    """The largest invariant, pure expression around the allocation that only transforms
    it (``torch.tril(torch.ones(n, n))``, ``torch.tensor(w).to(device)``)."""
    parents = an.parents
    expr: cst.BaseExpression = call
    while True:
        parent = parents.get(expr)
        if isinstance(parent, cst.Attribute) and parent.value is expr:
            grand = parents.get(parent)
            if isinstance(grand, cst.Call) and grand.func is parent and facts.pure_call(grand):
                if all(facts.invariant(a.value) for a in grand.args):
                    expr = grand
                    continue
            return expr
        if isinstance(parent, cst.Arg) and (parent.keyword is None or parent.keyword.value != "out"):
            grand = parents.get(parent)
            if isinstance(grand, cst.Call) and facts.pure_call(grand):
                if all(facts.invariant(a.value) for a in grand.args):
                    expr = grand
                    continue
            return expr
        if isinstance(parent, (cst.Element,)):
            container = parents.get(parent)
            if isinstance(container, (cst.List, cst.Tuple)) and facts.invariant(container):
                arg = parents.get(container)
                grand = parents.get(arg) if isinstance(arg, cst.Arg) else None
                if isinstance(grand, cst.Call) and facts.pure_call(grand):
                    if all(facts.invariant(a.value) for a in grand.args):
                        expr = grand  # torch.cat([torch.zeros(1), torch.ones(n)])
                        continue
            return expr
        return expr


def _assigned_name(an: Analysis, expr: cst.CSTNode) -> Optional[str]:
    """``name`` when ``expr`` is the whole right-hand side of ``name = expr``."""
    parent = an.parents.get(expr)
    if isinstance(parent, cst.Assign) and parent.value is expr and len(parent.targets) == 1:
        target = parent.targets[0].target
        return target.value if isinstance(target, cst.Name) else None
    if isinstance(parent, cst.AnnAssign) and parent.value is expr and isinstance(parent.target, cst.Name):
        return parent.target.value
    return None


# --- the fix ---------------------------------------------------------------------------------


_UNSAFE_CONTEXTS = re.compile(r"(^|\.)(device|default_device|init_module|set_default_\w+|stream|use_deterministic\w*)$")


def _unconditional_path(an: Analysis, statement: cst.CSTNode, loop: Loop) -> bool:
    """Whether ``statement`` runs on every iteration of ``loop``, in no context that could
    change what a tensor constructor builds (``with torch.device("cuda"):``)."""
    child = statement
    for parent in an.ancestors(statement):
        if parent is loop.node:
            return child is loop.node.body
        if isinstance(parent, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            pass
        elif isinstance(parent, cst.With):
            for item in parent.items:
                expr = item.item.func if isinstance(item.item, cst.Call) else item.item
                name = an.model.imports.qualname(expr) or ""
                if _UNSAFE_CONTEXTS.search(name):
                    return False
        elif isinstance(parent, cst.Try):
            if child is not parent.body or parent.handlers:
                return False  # an except clause may be there for the allocation (out of memory)
        elif isinstance(parent, (cst.For, cst.While)):
            if child is not parent.body:
                return False  # a loop's else clause
        else:
            return False  # if/else, except handlers, match cases
        child = parent
    return False


def _expression_unconditional(an: Analysis, expr: cst.CSTNode, statement: cst.CSTNode) -> bool:
    """Not in a branch of ``a if c else b`` or the right side of ``and``/``or``."""
    for parent in an.ancestors(expr):
        if parent is statement:
            return True
        if isinstance(parent, (cst.IfExp, cst.BooleanOperation)):
            return False
    return False


def _bound_outside(an: Analysis, loop: Loop, name: str) -> bool:
    """Whether ``name`` is also bound in the loop's scope outside the loop (then moving
    ``name = ...`` before the loop would change its value when the loop runs no time)."""
    model = an.model
    fn = model.functions.get(loop.scope)
    if fn is not None and name in model.locals.get(loop.scope, ()) and name in fn.params:
        return True
    for targets, _value, ctx in model.assignments:
        if ctx.scope == loop.scope and name in targets and not loop.encloses(ctx.loop):
            return True
    return any(l.scope == loop.scope and name in l.targets and not loop.encloses(l) for l in model.loops)


def _reads_before(an: Analysis, loop: Loop, statement: cst.CSTNode, name: str) -> bool:
    """Whether ``name`` is read in the loop before ``statement`` (textually)."""
    reached: List[bool] = []

    def reads(node: cst.CSTNode) -> bool:
        if reached:
            return False
        if node is statement:
            reached.append(True)
            return False
        if isinstance(node, cst.Name) and node.value == name:
            return True
        if isinstance(node, (cst.Attribute, cst.Arg)):
            return reads(node.value)
        return any(reads(child) for child in tree_children(node))

    return (isinstance(loop.node, cst.While) and reads(loop.node.test)) or reads(loop.node.body)


def _fresh_name(an: Analysis, expr: cst.CSTNode, call: cst.Call, kind: str, taken: Set[str]) -> str:
    """A readable name for the hoisted tensor that clashes with no name in the file:
    the keyword it is passed as (``weight``), ``<name>_init`` for ``name = <it>``,
    ``<data>_tensor`` for ``torch.tensor(data)``, else the constructor and its sizes
    (``zeros_3``, ``ones_2x3``, ``ones_seq_len``)."""
    parent = an.parents.get(expr)
    base = None
    positional = [a.value for a in call.args if a.keyword is None]
    if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value not in ("input", "other", "x"):
        base = parent.keyword.value
    if base is None:
        name = _assigned_name(an, expr)
        if name is not None:
            base = f"{name}_init"
    if base is None and kind in ("tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor", "new_tensor"):
        data = positional[0] if positional else None
        text = (dotted(data) or "").rsplit(".", 1)[-1] if isinstance(data, (cst.Name, cst.Attribute)) else ""
        base = f"{text.lower()}_tensor" if text else "const_tensor"
    if base is None:
        base = _SHORT.get(kind) or ("window" if kind.endswith("_window") else "const_tensor")
        sizes = positional
        if sizes and isinstance(sizes[0], (cst.Tuple, cst.List)):
            sizes = [e.value for e in sizes[0].elements]
        if sizes and all(isinstance(s, cst.Integer) for s in sizes):
            base = f"{base}_{'x'.join(s.value for s in sizes)}"  # type: ignore[attr-defined]
        else:
            named = next((s for s in sizes if isinstance(s, (cst.Name, cst.Attribute))), None)
            if named is not None:
                base = f"{base}_{(dotted(named) or '').rsplit('.', 1)[-1].lower()}"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,40}", base) or keyword.iskeyword(base) or hasattr(builtins, base):
        base = "const_tensor" if base == "const_tensor" or not base.isidentifier() else f"{base}_tensor"
    name = base
    number = 2
    while name in an.names or name in taken:
        name = f"{base}_{number}"
        number += 1
    taken.add(name)
    return name


def _statement_line(code: str) -> Optional[cst.SimpleStatementLine]:
    try:
        statement = cst.parse_statement(code)
    except cst.ParserSyntaxError:
        return None
    return statement if isinstance(statement, cst.SimpleStatementLine) else None


def _fix(an: Analysis, loop: Loop, call: cst.Call, expr: cst.BaseExpression, kind: str, taken: Set[str]) -> Optional[Fix]:
    model = an.model
    statement = an.statement_of(expr)
    if not isinstance(statement, cst.SimpleStatementLine) or not _unconditional_path(an, statement, loop):
        return None
    if not _expression_unconditional(an, expr, statement):
        return None
    block = an.parents.get(loop.node)
    if not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return None
    facts = an.facts(loop)
    name = _assigned_name(an, expr)
    movable = (
        name is not None
        and len(statement.body) == 1
        and facts.binding_counts.get(name, 0) == 1
        and not _bound_outside(an, loop, name)
        and not _reads_before(an, loop, statement, name)
    )
    if movable:
        hoisted = statement
        holder = an.parents.get(statement)
        if not isinstance(holder, (cst.IndentedBlock, cst.Module)):
            return None
        if len(holder.body) == 1:
            new_loop = loop.node.deep_replace(statement, cst.SimpleStatementLine([cst.Pass()]))
        else:
            new_loop = loop.node.deep_remove(statement)
        description = f"Move `{name} = ...` before the loop"
    else:
        new_name = _fresh_name(an, expr, call, kind, taken)
        hoisted = _statement_line(f"{new_name} = {model.code_of(expr).strip()}\n")
        if hoisted is None:
            return None
        new_loop = loop.node.deep_replace(expr, cst.Name(new_name))
        description = f"Build the tensor once before the loop as `{new_name}`"
    if not isinstance(new_loop, cst.BaseStatement):
        return None
    body = list(block.body)
    index = next((i for i, stmt in enumerate(body) if stmt is loop.node), None)
    if index is None:
        return None
    # Blank lines above the loop go above the hoisted statement; comments stay with the loop.
    lines = list(new_loop.leading_lines)
    blank = 0
    while blank < len(lines) and lines[blank].comment is None:
        blank += 1
    own = [line for line in hoisted.leading_lines if line.comment is not None]
    hoisted = hoisted.with_changes(leading_lines=lines[:blank] + own)
    new_loop = new_loop.with_changes(leading_lines=lines[blank:])
    body[index:index + 1] = [hoisted, new_loop]
    return model.fix_replacing(block, block.with_changes(body=body), Applicability.SAFE, description)


def _hoist_loop(an: Analysis, loop: Loop, call: cst.Call, kind: str) -> Tuple[Loop, cst.BaseExpression]:
    """The outermost batch loop around the allocation (starting at ``loop``, going out
    through any loops in between) in which it is still invariant and private, with its
    hoistable expression there: hoisting any less far would leave it in a batch loop."""
    facts = an.facts(loop)
    best = (loop, _hoistable(an, facts, call))
    outer = loop.parent
    while outer is not None:
        facts = an.facts(outer)
        if not _allocation_invariant(facts, call, kind):
            break
        expr = _hoistable(an, facts, call)
        if not facts.stays_private(expr):
            break
        if an.is_batch_loop(outer):
            best = (outer, expr)
        outer = outer.parent
    return best


# --- the rule ----------------------------------------------------------------------------------


def _snippet(model: FileModel, node: cst.CSTNode) -> str:
    text = " ".join(model.code_of(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _brief(model: FileModel, call: cst.CSTNode) -> str:
    """The call as the message quotes it: whole when short, else ``torch.ones(...)``."""
    text = _snippet(model, call)
    if len(text) <= 30:
        return text
    func = dotted(call.func) if isinstance(call, cst.Call) else None
    return f"{shorten(func, 40)}(...)" if func else shorten(text)


def check(model: FileModel) -> Iterable[Finding]:
    an: Optional[Analysis] = None
    reported: Set[cst.CSTNode] = set()
    taken: Set[str] = set()
    for call, ctx in model.calls:
        if ctx.loop is None:
            continue
        kind = _constructor(model, call)
        if kind is None:
            continue
        an = an or analysis(model)
        loop = an.enclosing_batch_loop(ctx.loop)
        if loop is None or not _in_body(an, call, loop) or an.inside_nested_scope(call, loop.node):
            continue
        facts = an.facts(loop)
        if _rarely_runs(facts, loop, ctx):
            continue
        if not _allocation_invariant(facts, call, kind):
            continue
        expr = _hoistable(an, facts, call)
        if expr in reported:
            continue
        if _cpu_scalar(an, call, kind, expr) or _repeated_per_batch(an, model, expr):
            continue
        if not facts.stays_private(expr):
            continue
        reported.add(expr)
        hoist, hoist_expr = _hoist_loop(an, loop, call, kind)
        fix = _fix(an, hoist, call, hoist_expr, kind, taken)
        message = f"`{_brief(model, call)}` builds the same tensor every batch: build it once"
        detail = (
            f"`{_snippet(model, call)}` allocates (and copies to the device) the same tensor on every batch: "
            f"nothing it is built from changes in the loop; build it once before the loop."
        )
        yield model.finding(call, CODE, NAME, message, fix, detail)


# --- examples ------------------------------------------------------------------------------------

VALID = [
    # the shape depends on the batch
    """
    import torch
    for x, y in loader:
        mask = torch.ones(x.size(0), x.size(1), device=x.device)
        loss = criterion(model(x, mask), y)
    """,
    # DCGAN: the label size comes from the batch (the last batch may be smaller)
    """
    import torch
    for i, (real, _) in enumerate(dataloader):
        b_size = real.size(0)
        label = torch.full((b_size,), real_label, dtype=torch.float, device=device)
        errD_real = criterion(netD(real).view(-1), label)
    """,
    # random tensors differ on every batch
    """
    import torch
    for images, _ in train_loader:
        noise = torch.randn(batch_size, latent_dim, device=device)
        fake = generator(noise)
        idx = torch.randperm(64)
    """,
    # accumulators changed in place
    """
    import torch
    for x, y in val_loader:
        confusion = torch.zeros(num_classes, num_classes, dtype=torch.long)
        for t, p in zip(y, model(x).argmax(1)):
            confusion[t, p] += 1
        per_class = torch.zeros(num_classes)
        per_class.index_add_(0, y, torch.ones_like(y, dtype=torch.float))
        total = torch.tensor(0.0)
        total += criterion(model(x), y)
        stats.append(confusion)
    """,
    # each iteration keeps its own tensor: appended, stored, yielded
    """
    import torch
    def batches_with_masks(loader, seq_len):
        outputs = []
        for batch in loader:
            mask = torch.ones(seq_len, dtype=torch.bool)
            outputs.append(mask)
            state["mask"] = torch.zeros(seq_len)
            yield batch, torch.arange(seq_len)
    """,
    # a perturbation that collects gradients: each batch needs a fresh leaf
    """
    import torch
    for x, y in loader:
        delta = torch.zeros(1, 3, 32, 32, requires_grad=True)
        loss = F.cross_entropy(model(x + delta), y)
        loss.backward()
    """,
    # built from things that change in the loop: a list built per batch, a call's result,
    # an attribute the loop assigns, a name the loop assigns
    """
    import torch
    for batch in loader:
        values = []
        for item in batch:
            values.append(len(item))
        lengths = torch.tensor(values)
        buffer = torch.zeros(get_buffer_size())
        self.n = batch.size(0)
        ids = torch.arange(self.n)
        width = 16
        pad = torch.zeros(width)
    """,
    # only on logging iterations, or in an except handler
    """
    import torch
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        if step % 100 == 0:
            log(torch.tensor([1.0, 2.0]))
        try:
            run(x)
        except RuntimeError:
            fallback = torch.zeros(16)
    """,
    # loops that are not over batches: layers, epochs, hyper-parameters, items of one batch
    """
    import torch
    class Net(torch.nn.Module):
        def __init__(self, n_layers, width):
            super().__init__()
            for i in range(n_layers):
                self.register_buffer(f"scale{i}", torch.ones(width))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x) + torch.ones(4)
            return x

    for epoch in range(num_epochs):
        weights = torch.tensor(class_weights)
        for batch_size in [16, 32, 64]:
            probe = torch.zeros(batch_size)
    for b in range(batch_size):
        row = torch.zeros(n_classes)
    """,
    # a helper changes its argument in place; out= writes into it
    """
    import torch
    def reset(buf):
        buf.zero_()

    for x, y in loader:
        acc = torch.zeros(10)
        reset(acc)
        out = torch.empty(10)
        torch.add(x.sum(0), 1, out=out)
    """,
    # inside comprehensions and lambdas; empty placeholders
    """
    import torch
    for x, y in loader:
        heads = [torch.zeros(8) for _ in range(n_heads)]
        make = lambda: torch.ones(3)
        state = torch.zeros(0)
        state, out = rnn(x, state)
    """,
    # under a condition that depends on the batch: not on every iteration
    """
    import torch
    for x, y in loader:
        if y.sum() == 0:
            loss = torch.tensor(0.0, device=device)
        else:
            loss = criterion(model(x), y)
        loss.backward()
    """,
    # a loop that looks at one batch and stops; loops over the items of one batch
    """
    import torch
    for images, labels in loader:
        dummy = torch.zeros(1, 3, 224, 224)
        print(model(dummy).shape, images.shape)
        break
    for batch_idx, (scores, labels) in enumerate(zip(all_scores, all_labels)):
        keep = torch.full((height, width), -1, dtype=torch.int32)
        results.append(keep)
    """,
    # a unit test: a few fixed optimisation steps, the batches of a toy loader, checked once
    """
    import pytest
    import torch

    def test_fit_reduces_loss():
        model, opt = make_model()
        for _ in range(20):
            loss = (model(x) - torch.ones(4, 1)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    class TestLoader:
        def test_batches_are_normalised(self, loader):
            for data, target in loader:
                assert torch.equal(target, torch.ones(2, 2))
    """,
    # a loop over the tensors to concatenate: `batch` is a batch-index vector unpacked with another
    """
    import torch

    def cat(xs, num_rows, num_cols, device):
        for x in xs:
            batch, arange = batched_arange(x.counts)
            start = torch.arange(0, num_rows * num_cols, num_cols, device=device)
            scatter(x, start[batch] + arange)
    """,
    # one-element tensors on the CPU: as cheap as the Python number they wrap
    """
    import torch
    for seq_data, lengths in train_loader:
        args = (seq_data, torch.tensor(1.0), torch.tensor(1.0))
        guide_trace = trace(guide).get_trace(*args)
        with poutine.do(data=dict(t=torch.zeros(()))):
            y0 = replay(model, guide_trace)(seq_data)
        decoder_input = torch.LongTensor([[SOS_token]])
        reg = torch.tensor(0.0)
        for p in net.parameters():
            reg = reg + p.norm()
    """,
    # a seed repeated at once to the size of the batch: the repeat allocates on every batch anyway
    """
    import torch
    for step, batch in enumerate(train_dataloader):
        bsz = batch["pixel_values"].shape[0]
        resolution = torch.tensor([args.resolution, args.resolution]).repeat(bsz, 1)
        w = torch.repeat_interleave(torch.arange(4), batch["counts"])
        loss = model(batch, resolution.to(device), w)
    """,
    # a repeated list stores the same tensor in a dict that outlives the iteration
    """
    import torch
    for start in range(0, n, batch_size):
        preds = {"ctc": run(images[start:start + batch_size])}
        preds["neck"] = [torch.zeros(64)] * batch_size
        for k in range(batch_size):
            necks[start + k] = preds["neck"][k]
    """,
    # loops over the steps of one batch, not over batches: a sampler's denoising loop over
    # timesteps, autoregressive generation, a beam search (RULES.md: "Inside a loop over batches")
    """
    import torch

    @torch.no_grad()
    def sample(model, scheduler, shape, guidance_scale, device, num_steps):
        latents = torch.randn(shape, device=device)
        for i, t in enumerate(scheduler.timesteps):
            scale = torch.tensor(guidance_scale, device=device)
            eps = model(latents, torch.full((shape[0],), t, device=device))
            latents = scheduler.step(eps * scale, t, latents).prev_sample
        return latents

    @torch.no_grad()
    def generate(model, idx, max_new_tokens, block_size, device):
        for _ in range(max_new_tokens):
            idx_cond = idx[:, -block_size:]
            pos = torch.arange(0, block_size, dtype=torch.long, device=device)
            logits = model(idx_cond, pos)
            idx = torch.cat((idx, logits[:, -1].argmax(-1, keepdim=True)), dim=1)
        return idx

    def beam_search(decoder, memory, beam_size, max_len, device):
        step = 0
        while step < max_len:
            penalty = torch.ones(beam_size, device=device)
            memory = decoder(memory, penalty)
            step += 1
    """,
    # torch.arange over a size taken from the batch
    """
    import torch
    for input_ids in loader:
        positions = torch.arange(input_ids.size(1), device=input_ids.device)
        logits = model(input_ids, positions)
    """,
    # written through a slice or a view of a slice: changed in place on every batch
    """
    import torch
    for x, y in loader:
        weights = torch.tensor([0.5, 1.0, 1.5, 1.0])
        weights[0] = y.float().mean()
        scale = torch.ones(4)
        scale[: len(y)].mul_(2.0)
        head = torch.zeros(8)[:4]
        head += x.sum()
        loss = (weights * scale * head * model(x)).mean()
    """,
    # a slice of it stored somewhere that outlives the iteration
    """
    import torch
    def collect(model, loader, history):
        for x, y in loader:
            weights = torch.tensor([0.5, 1.0, 1.5, 1.0])
            history[-1].append(weights[: len(y)])
            loss = (weights[: len(y)] * model(x)).mean()
            loss.backward()
    """,
]

INVALID = [
    # a causal mask rebuilt on every batch from the fixed sequence length: moved before the loop
    Example(
        """
import torch

def train(model, loader, optimizer, seq_len, device):
    for x, y in loader:
        mask = torch.triu(torch.ones(seq_len, seq_len, device=device), diagonal=1).bool()
        loss = model(x.to(device), mask).loss(y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        fixed="""
import torch

def train(model, loader, optimizer, seq_len, device):
    mask = torch.triu(torch.ones(seq_len, seq_len, device=device), diagonal=1).bool()
    for x, y in loader:
        loss = model(x.to(device), mask).loss(y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    ),
    # class weights passed inline as a keyword: built once, before the loop, under that keyword's name
    Example(
        """
import torch
import torch.nn.functional as F

def train_epoch(model, loader, optimizer, device):
    model.train()
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)
        loss = F.cross_entropy(logits, labels, weight=torch.tensor([1.0, 3.5, 8.0], device=device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        fixed="""
import torch
import torch.nn.functional as F

def train_epoch(model, loader, optimizer, device):
    model.train()
    weight = torch.tensor([1.0, 3.5, 8.0], device=device)
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)
        loss = F.cross_entropy(logits, labels, weight=weight)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    ),
    # GAN labels of a fixed batch size (drop_last=True): both moved before the batch loop, inside the epoch loop
    Example(
        """
import torch

for epoch in range(num_epochs):
    for i, (images, _) in enumerate(data_loader):
        images = images.reshape(batch_size, -1).to(device)
        real_labels = torch.ones(batch_size, 1).to(device)
        fake_labels = torch.zeros(batch_size, 1).to(device)
        d_loss = criterion(D(images), real_labels) + criterion(D(G(torch.randn(batch_size, 64))), fake_labels)
        d_optimizer.zero_grad()
        d_loss.backward()
        d_optimizer.step()
""",
        fixed="""
import torch

for epoch in range(num_epochs):
    real_labels = torch.ones(batch_size, 1).to(device)
    fake_labels = torch.zeros(batch_size, 1).to(device)
    for i, (images, _) in enumerate(data_loader):
        images = images.reshape(batch_size, -1).to(device)
        d_loss = criterion(D(images), real_labels) + criterion(D(G(torch.randn(batch_size, 64))), fake_labels)
        d_optimizer.zero_grad()
        d_loss.backward()
        d_optimizer.step()
""",
    ),
    # normalisation constants in an evaluation loop, under torch.no_grad()
    Example(
        """
import torch

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]

@torch.no_grad()
def evaluate(model, loader, device):
    correct = 0
    for images, labels in loader:
        mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
        std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
        images = (images.to(device) - mean) / std
        correct += (model(images).argmax(1) == labels.to(device)).sum().item()
    return correct / len(loader.dataset)
""",
        fixed="""
import torch

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]

@torch.no_grad()
def evaluate(model, loader, device):
    correct = 0
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    for images, labels in loader:
        images = (images.to(device) - mean) / std
        correct += (model(images).argmax(1) == labels.to(device)).sum().item()
    return correct / len(loader.dataset)
""",
    ),
    # a step loop that fetches its batches with next(): position ids rebuilt every step
    Example(
        """
import torch as th

def pretrain(model, data_iter, optimizer, block_size, device, max_steps):
    step = 0
    while step < max_steps:
        x, y = next(data_iter)
        pos = th.arange(block_size, dtype=th.long, device=device)
        loss = model(x, pos, targets=y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
""",
        fixed="""
import torch as th

def pretrain(model, data_iter, optimizer, block_size, device, max_steps):
    step = 0
    pos = th.arange(block_size, dtype=th.long, device=device)
    while step < max_steps:
        x, y = next(data_iter)
        loss = model(x, pos, targets=y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
""",
    ),
    # an accumulator rebound (not changed in place) on every batch: its start value is hoisted
    Example(
        """
import torch

for batch_idx, (data, target) in enumerate(loader):
    output = model(data)
    l1 = torch.tensor(0.0, device=device)
    for param in model.parameters():
        l1 = l1 + param.abs().sum()
    loss = criterion(output, target) + 1e-5 * l1
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
        fixed="""
import torch

l1_init = torch.tensor(0.0, device=device)
for batch_idx, (data, target) in enumerate(loader):
    output = model(data)
    l1 = l1_init
    for param in model.parameters():
        l1 = l1 + param.abs().sum()
    loss = criterion(output, target) + 1e-5 * l1
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
    ),
    # imported constructor alias, inline allocation in an expression
    Example(
        """
from torch import zeros

def validate(model, val_loader, num_classes):
    for inputs, targets in val_loader:
        scores = model(inputs) + zeros(num_classes)
        report(scores, targets)
""",
        fixed="""
from torch import zeros

def validate(model, val_loader, num_classes):
    zeros_num_classes = zeros(num_classes)
    for inputs, targets in val_loader:
        scores = model(inputs) + zeros_num_classes
        report(scores, targets)
""",
    ),
    # a one-hot table indexed by the batch: the table is the same every time
    Example(
        """
import torch

class Trainer:
    def __init__(self, model, num_classes, device):
        self.model = model
        self.num_classes = num_classes
        self.device = device

    def fit(self, train_loader, optimizer):
        for x, y in train_loader:
            target = torch.eye(self.num_classes, device=self.device)[y]
            loss = ((self.model(x) - target) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""",
        fixed="""
import torch

class Trainer:
    def __init__(self, model, num_classes, device):
        self.model = model
        self.num_classes = num_classes
        self.device = device

    def fit(self, train_loader, optimizer):
        eye_num_classes = torch.eye(self.num_classes, device=self.device)
        for x, y in train_loader:
            target = eye_num_classes[y]
            loss = ((self.model(x) - target) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""",
    ),
    # manual mini-batching with range(0, n, batch_size)
    Example(
        """
import torch

def train(model, X, Y, optimizer, batch_size, num_classes):
    for start in range(0, len(X), batch_size):
        xb = X[start:start + batch_size]
        yb = Y[start:start + batch_size]
        identity = torch.eye(num_classes)
        loss = ((model(xb) - identity[yb]) ** 2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        fixed="""
import torch

def train(model, X, Y, optimizer, batch_size, num_classes):
    identity = torch.eye(num_classes)
    for start in range(0, len(X), batch_size):
        xb = X[start:start + batch_size]
        yb = Y[start:start + batch_size]
        loss = ((model(xb) - identity[yb]) ** 2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    ),
    # the mask is read before it is assigned in the body: kept in place, built once under a new name
    Example(
        """
import torch

mask = None
for batch in loader:
    if mask is not None:
        log_mask(mask)
    mask = torch.ones(16, 16)
    out = model(batch, mask)
""",
        fixed="""
import torch

mask = None
mask_init = torch.ones(16, 16)
for batch in loader:
    if mask is not None:
        log_mask(mask)
    mask = mask_init
    out = model(batch, mask)
""",
    ),
    # only when a flag is set: still on every batch, but hoisting it would build it when the flag is off, so no fix
    Example(
        """
import torch

def run(model, loader, use_bias, n):
    for batch in loader:
        if use_bias:
            bias = torch.linspace(0, 1, n)
            batch = batch + bias
        model(batch)
""",
    ),
    # an RNN's initial hidden state of a fixed batch size, inside an inner loop over time steps
    Example(
        """
import torch

for src, tgt in train_loader:
    hidden = torch.zeros(num_layers, BATCH_SIZE, hidden_size)
    for t in range(src.size(1)):
        out, hidden = rnn(src[:, t:t + 1], hidden)
    loss = criterion(out, tgt)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
""",
        fixed="""
import torch

hidden_init = torch.zeros(num_layers, BATCH_SIZE, hidden_size)
for src, tgt in train_loader:
    hidden = hidden_init
    for t in range(src.size(1)):
        out, hidden = rnn(src[:, t:t + 1], hidden)
    loss = criterion(out, tgt)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
""",
    ),
    # constant per-position weights only read through a slice (`weights[: len(y)]`): hoisted
    Example(
        """
import torch

def train(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        weights = torch.tensor([0.5, 1.0, 1.5, 1.0, 0.5, 1.0, 1.5, 1.0])
        loss = (weights[: len(y)].unsqueeze(1) * (model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
""",
        fixed="""
import torch

def train(model, loader, optimizer):
    weights = torch.tensor([0.5, 1.0, 1.5, 1.0, 0.5, 1.0, 1.5, 1.0])
    for x, y in loader:
        optimizer.zero_grad()
        loss = (weights[: len(y)].unsqueeze(1) * (model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
""",
    ),
    # an allocation nested in an inner loop over heads, invariant in both loops: hoisted out of both
    Example(
        """
import torch

for batch in tqdm(loader):
    x = batch.to(device)
    for head in heads:
        scale = torch.full((1,), 0.5, device=device)
        x = head(x) * scale
    loss = x.mean()
    loss.backward()
""",
        fixed="""
import torch

scale = torch.full((1,), 0.5, device=device)
for batch in tqdm(loader):
    x = batch.to(device)
    for head in heads:
        x = head(x) * scale
    loss = x.mean()
    loss.backward()
""",
    ),
]
