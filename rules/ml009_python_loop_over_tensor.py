"""A Python loop does element-wise arithmetic on a tensor one element at a time.

Why it matters
    ``for i in range(len(x)): out[i] = x[i] * w[i] + b`` runs the interpreter, builds a
    0-d tensor view and launches a tiny kernel for every element: on a GPU each
    element is also a kernel launch and often a device sync. The same arithmetic on
    whole tensors (``out = x * w + b``) is one op. No error is raised, the loop is just
    slow, and the cost grows with the tensor (fixtures/ml009: 20,000 elements on CPU,
    the two loops 1.7 to 3.0 s against 0.0003 to 0.007 s for the vectorised ops).

When the code is fine
    The rule reports only loops it can see are element-wise: ``for i in range(n)`` where
    ``n`` is the length or size of a tensor built in the file (``len(x)``, ``x.size(0)``,
    ``x.shape[0]``, a name bound to one of them), and whose body only assigns ``out[i] =``
    or accumulates ``total += ...`` with arithmetic (and element-wise functions such as
    ``torch.exp``) on elements indexed by the loop variable of tensors built in the file.
    Statistics of a whole tensor inside the loop (``(t[i] - t.mean()) / t.std()``) are
    loop-invariant, and a reduction of the row at the index (``torch.norm(x[i])``,
    ``x[i].abs().sum()``) is one call with ``dim=``: both are reported too. A parameter is a
    tensor when it is annotated ``torch.Tensor`` or the function calls a method only a tensor
    has on it (``x.size(0)``, ``x.numel()``, ``x.unsqueeze(1)``, ``x.detach()``).
    It stays silent for:
    - loops whose body decides anything per element (``if``, ``break``, ``continue``,
      ``while``), calls anything that is not element-wise arithmetic (a model forward per
      sample, a tokenizer, ``.item()``, ``print``, ``.append``), or uses the loop
      variable other than as an index (``x[i + 1]``, ``x[i] * i``);
    - recurrences, where a step reads what an earlier step wrote (``h = h * a[i] + x[i]``,
      ``out[i] = out[i - 1] + x[i]``): RNN steps and scans are not one element-wise op;
    - containers that are not known tensors (Python lists, numpy arrays, dicts, parameters
      only used through ``.shape``/``.copy()``, which an ndarray has too), a reduction whose
      argument changes per element (``x[i].sum(dims[i])``), and loops over a count that is
      not a tensor's size (epochs, batches, layers, heads, a fixed ``range(3)``).

How to fix
    Write the loop as one operation on whole tensors: ``out = x * w + b`` for
    ``out[i] = x[i] * w[i] + b``, ``total = (x * w).sum()`` for ``total += x[i] * w[i]``,
    ``out = torch.exp(x)`` for ``out[i] = torch.exp(x[i])``; with a nested loop over
    ``i, j`` the same expression works on the 2-d tensors. No automatic fix: whether the
    shapes broadcast the same way, and whether a partial write (``out[:n]``) was meant,
    needs a person.
"""

from __future__ import annotations

import ast
from typing import Iterable, Optional, Set, Tuple

import libcst as cst

from mllint.findings import Finding
from mllint.semantics.model import FileModel
from mllint.semantics.names import dotted, shorten
from mllint.semantics.tensors import TensorFacts, tensor_facts
from mllint.semantics.tree import visit as tree_visit

CODE = "ML009"
NAME = "python-loop-over-tensor"
MESSAGE = "a Python loop does element-wise tensor arithmetic one element at a time: use one vectorised op"
TRIGGERS = ("range(",)
REQUIRES = ("torch",)
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = None


def SCREEN(facts) -> bool:
    # Sound: a finding is a ``for NAME in range(n)`` / ``range(0, n)`` loop (no else, not
    # async; ``n`` a size: a name, a call or a subscript) whose body is assignments only, or
    # one such loop nested alone in it (_sized_loop, _elementwise, _Body.body_ok).
    return any(_candidate_loop(loop) for loop in facts.for_loops)


def _candidate_loop(loop: ast.For) -> bool:
    it = loop.iter
    if loop.orelse or not isinstance(loop.target, ast.Name) or not isinstance(it, ast.Call):
        return False
    if not isinstance(it.func, ast.Name) or it.func.id != "range" or it.keywords:
        return False
    if any(isinstance(a, ast.Starred) for a in it.args) or len(it.args) not in (1, 2):
        return False
    if len(it.args) == 2 and not (isinstance(it.args[0], ast.Constant) and it.args[0].value == 0):
        return False
    if not isinstance(it.args[-1], (ast.Name, ast.Call, ast.Subscript)):
        return False  # TensorFacts.sized_tensor: len(x), x.size(0), x.numel(), x.shape[0], or a name bound to one
    body = loop.body
    if len(body) == 1 and isinstance(body[0], ast.For):
        return _candidate_loop(body[0])
    return all(_element_statement(s) for s in body)


def _element_statement(stmt: ast.stmt) -> bool:
    """_Body.statement_ok accepts only ``name = ...``/``x[i] = ...`` (one target) and
    ``name += ...``/``x[i] += ...``."""
    if isinstance(stmt, ast.Assign):
        return len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Name, ast.Subscript))
    return isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, (ast.Name, ast.Subscript))



# torch functions and tensor methods that act element by element
_ELEMENTWISE = frozenset(
    """abs exp exp2 log log2 log10 log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid relu clamp clip pow
    square neg reciprocal floor ceil round trunc sign erf mul add sub div true_divide maximum minimum
    softplus gelu silu elu leaky_relu float double half""".split()
)
# reductions: of a whole known tensor they are loop-invariant (``(t[i] - t.mean()) / t.std()``),
# of the row at the loop index one call with ``dim=`` does them all (``norms[i] = feats[i].norm()``)
_REDUCTIONS = frozenset("sum mean std var norm prod amax amin logsumexp".split())
_AUG_OPS = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign)


def _range_count(model: FileModel, loop: cst.For) -> Optional[cst.BaseExpression]:
    """``n`` in ``for i in range(n)`` / ``range(0, n)``, else None."""
    it = loop.iter
    if not isinstance(it, cst.Call) or model.imports.qualname(it.func) != "range" or dotted(it.func) != "range":
        return None
    args = it.args
    if any(a.keyword is not None or a.star for a in args):
        return None
    if len(args) == 1:
        return args[0].value
    if len(args) == 2 and isinstance(args[0].value, cst.Integer) and args[0].value.value == "0":
        return args[1].value
    return None


class _Body:
    """Checks that a loop body is element-wise arithmetic on tensors indexed by loop variables."""

    def __init__(self, model: FileModel, facts: TensorFacts, scope: str, var: str, outer: Tuple[str, ...]) -> None:
        self.model = model
        self.facts = facts
        self.scope = scope
        self.var = var
        self.loop_vars = set(outer) | {var}
        self.temps: Set[str] = set()  # names assigned in the body before being read
        self.accumulators: Set[str] = set()
        self.reads_element = False  # the current statement reads a tensor element at the loop index
        self.first: Optional[cst.CSTNode] = None

    def index_ok(self, node: cst.Subscript, current: bool = True) -> bool:
        """``[i]``, ``[i, j]``, ``[:, i]``: loop variables (this loop's among them) and full slices."""
        names = []
        for element in node.slice:
            inner = element.slice
            if isinstance(inner, cst.Index) and isinstance(inner.value, cst.Name) and inner.value.value in self.loop_vars:
                names.append(inner.value.value)
            elif isinstance(inner, cst.Slice) and inner.lower is None and inner.upper is None and inner.step is None:
                continue
            else:
                return False
        return bool(names) and (self.var in names or not current) and len(set(names)) == len(names)

    def element(self, node: cst.Subscript, current: bool = True) -> bool:
        """A tensor element read or written at the loop index (``current=False``: at the
        index of enclosing loops only, the target of a reduction ``row_sum[i] += m[i, j]``)."""
        return isinstance(node.value, cst.Name) and self.facts.is_tensor(self.scope, node.value) and self.index_ok(node, current)

    def uses(self, node: cst.CSTNode, names: Set[str]) -> bool:
        found = []

        class Finder(cst.CSTVisitor):
            def visit_Name(self, n: cst.Name) -> None:
                if n.value in names:
                    found.append(n)

        tree_visit(node, Finder())
        return bool(found)

    def expr_ok(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, (cst.Integer, cst.Float)):
            return True
        if isinstance(node, cst.Name):
            if node.value in self.loop_vars or node.value in self.accumulators:
                return False
            if node.value in self.temps:
                self.reads_element = True  # derived from this iteration's elements
            return True  # a loop-invariant scalar or tensor, or a temporary of this iteration
        if isinstance(node, cst.Attribute):
            return dotted(node) is not None and not self.uses(node, self.loop_vars)
        if isinstance(node, cst.UnaryOperation):
            return isinstance(node.operator, (cst.Minus, cst.Plus)) and self.expr_ok(node.expression)
        if isinstance(node, cst.BinaryOperation):
            return self.expr_ok(node.left) and self.expr_ok(node.right)
        if isinstance(node, cst.Subscript):
            if self.uses(node, self.loop_vars):
                if self.element(node):
                    self.reads_element = True
                    return True
                return False
            return isinstance(node.value, cst.Name) and all(
                isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Integer) for e in node.slice
            )  # w[0]: an invariant element
        if isinstance(node, cst.Call):
            if any(a.star for a in node.args):
                return False
            qual = self.model.imports.qualname(node.func) or ""
            if qual.startswith(("torch.", "torch.nn.functional.")) and qual.rsplit(".", 1)[-1] in _ELEMENTWISE:
                return all(self.expr_ok(a.value) for a in node.args)
            reduction = self.reduction_of(node, qual)
            if reduction is not None:
                return reduction
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in _ELEMENTWISE and not qual.startswith(("math.", "np.", "numpy.")):
                return self.expr_ok(node.func.value) and all(self.expr_ok(a.value) for a in node.args)
            return False
        return False

    def reduction_of(self, node: cst.Call, qual: str) -> Optional[bool]:
        """``t.mean()`` of a whole known tensor (invariant), ``x[i].sum()`` / ``torch.norm(x[i])``
        of the element at the loop index (one call with ``dim=``); None: not a reduction."""
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _REDUCTIONS and not qual.startswith(
            ("math.", "np.", "numpy.", "torch.")
        ):
            subject, args = node.func.value, node.args
        elif qual.startswith("torch.") and qual[len("torch."):] in _REDUCTIONS and node.args and node.args[0].keyword is None:
            subject, args = node.args[0].value, node.args[1:]
        else:
            return None
        for arg in args:  # sum(0), norm(p=2), mean(dim=1): nothing that varies per element
            if arg.keyword is None and not isinstance(arg.value, cst.Integer):
                return False
            if arg.keyword is not None and (arg.keyword.value not in ("dim", "keepdim", "p") or self.uses(arg.value, self.loop_vars)):
                return False
        if not self.uses(subject, self.loop_vars):
            return isinstance(subject, cst.Name) and self.facts.is_tensor(self.scope, subject)
        before, self.reads_element = self.reads_element, False
        ok = self.expr_ok(subject) and self.reads_element  # x[i], x[i].abs(), (x[i] - y[i]) ** 2
        self.reads_element = before or ok
        return ok

    def statement_ok(self, stmt: cst.BaseSmallStatement) -> bool:
        self.reads_element = False
        if isinstance(stmt, cst.Assign):
            if len(stmt.targets) != 1:
                return False
            target = stmt.targets[0].target
            if isinstance(target, cst.Subscript):
                if not self.element(target):
                    return False
                return self.expr_ok(stmt.value) and self.reads_element
            if isinstance(target, cst.Name):
                name = target.value
                if name in self.loop_vars or name in self.accumulators or self.uses(stmt.value, {name}):
                    return False  # h = h * a[i] + x[i]: a recurrence
                if not (self.expr_ok(stmt.value) and self.reads_element):
                    return False
                self.temps.add(name)
                return True
            return False
        if isinstance(stmt, cst.AugAssign):
            target = stmt.target
            if isinstance(target, cst.Name):
                name = target.value
                if not isinstance(stmt.operator, _AUG_OPS) or name in self.loop_vars or name in self.temps:
                    return False
                if self.uses(stmt.value, {name}):
                    return False
                ok = self.expr_ok(stmt.value) and self.reads_element
                self.accumulators.add(name)
                return ok
            if isinstance(target, cst.Subscript):
                return self.element(target, current=False) and self.expr_ok(stmt.value) and self.reads_element
            return False
        return False

    def body_ok(self, body: cst.BaseSuite) -> bool:
        if not isinstance(body, cst.IndentedBlock):
            statements = [body] if isinstance(body, cst.SimpleStatementSuite) else []
            smalls = [s for line in statements for s in line.body]
        else:
            smalls = []
            for line in body.body:
                if not isinstance(line, cst.SimpleStatementLine):
                    return False
                smalls.extend(line.body)
        if not smalls:
            return False
        # a name read before it is assigned in the body carries a value from the previous step
        for stmt in smalls:
            if not self.statement_ok(stmt):
                return False
        written = self.temps | self.accumulators
        seen: Set[str] = set()
        for stmt in smalls:
            value = stmt.value if isinstance(stmt, (cst.Assign, cst.AugAssign)) else stmt
            if self.uses(value, written - seen):
                return False
            if isinstance(stmt, cst.Assign) and isinstance(stmt.targets[0].target, cst.Name):
                seen.add(stmt.targets[0].target.value)
        return True


def _sized_loop(model: FileModel, facts: TensorFacts, scope: str, node: cst.CSTNode) -> Optional[Tuple[str, str]]:
    """(loop variable, tensor whose size it counts) for ``for i in range(<size of a tensor>)``."""
    if not isinstance(node, cst.For) or node.asynchronous is not None or node.orelse is not None:
        return None
    if not isinstance(node.target, cst.Name):
        return None
    count = _range_count(model, node)
    if count is None:
        return None
    tensor = facts.sized_tensor(scope, count)
    if tensor is None:
        return None
    return node.target.value, tensor


def _elementwise(model: FileModel, facts: TensorFacts, scope: str, node: cst.For, outer: Tuple[str, ...]) -> Optional[cst.BaseSmallStatement]:
    """The first statement of the element-wise body of ``node`` (through nested sized loops), else None."""
    head = _sized_loop(model, facts, scope, node)
    if head is None:
        return None
    var, _tensor = head
    if var in outer:
        return None
    body = node.body
    if isinstance(body, cst.IndentedBlock) and len(body.body) == 1 and isinstance(body.body[0], cst.For):
        return _elementwise(model, facts, scope, body.body[0], outer + (var,))
    checker = _Body(model, facts, scope, var, outer)
    if not checker.body_ok(body):
        return None
    if isinstance(body, cst.IndentedBlock):
        return body.body[0].body[0]
    return body.body[0]


def check(model: FileModel) -> Iterable[Finding]:
    facts: Optional[TensorFacts] = None
    inside: Set[cst.CSTNode] = set()
    for loop in sorted(model.loops, key=lambda l: (l.depth, l.order)):
        node = loop.node
        if node in inside or not isinstance(node, cst.For):
            continue
        facts = facts or tensor_facts(model)
        first = _elementwise(model, facts, loop.scope, node, ())
        if first is None:
            continue

        class Nested(cst.CSTVisitor):
            def visit_For(self, n: cst.For) -> None:
                inside.add(n)

        tree_visit(node.body, Nested())
        header = f"for {model.code_of(node.target).strip()} in {model.code_of(node.iter).strip()}"
        statement = model.code_of(first).strip()
        message = f"`{shorten(header, 34)}` computes `{shorten(statement, 30)}` element by element: vectorise it"
        detail = (
            f"`{header}` runs `{shorten(statement, 60)}` in Python once per element, each a tiny tensor op "
            f"(a kernel launch per element on a GPU); the same arithmetic on whole tensors is one op "
            f"(`out = x * 2` for `out[i] = x[i] * 2`, `(x * w).sum()` for `total += x[i] * w[i]`)."
        )
        yield model.finding(node, CODE, NAME, message, None, detail)


# --- examples ------------------------------------------------------------------------------------

VALID = [
    # already vectorised
    """
    import torch
    x = torch.randn(1000)
    out = x * 2 + 1
    """,
    # a model forward per sample: not element-wise arithmetic
    """
    import torch
    def embed_all(model, images):
        feats = torch.zeros(len(images), 512)
        xs = torch.stack(images)
        for i in range(xs.size(0)):
            feats[i] = model(xs[i].unsqueeze(0))
        return feats
    """,
    # a recurrence: step t reads step t - 1 (an exponential moving average), not one op
    """
    import torch
    def ema(x, alpha=0.9):
        x = torch.as_tensor(x)
        out = torch.empty_like(x)
        h = torch.zeros(())
        for t in range(len(x)):
            h = alpha * h + (1 - alpha) * x[t]
            out[t] = h
        return out
    """,
    # reads the previous element: a scan, left to a person
    """
    import torch
    x = torch.rand(100)
    out = torch.zeros(100)
    for i in range(x.shape[0]):
        out[i] = out[i - 1] + x[i]
    """,
    # data-dependent control flow on element values
    """
    import torch
    scores = torch.rand(50)
    keep = torch.zeros(50)
    for i in range(len(scores)):
        if scores[i] < 0.1:
            break
        keep[i] = scores[i] * 2
    """,
    # a Python list, not a tensor
    """
    import torch
    values = [1.0, 2.0, 3.0]
    doubled = [0.0] * 3
    for i in range(len(values)):
        doubled[i] = values[i] * 2
    """,
    # .item() into a list for printing: host values, not tensor arithmetic
    """
    import torch
    probs = torch.softmax(torch.randn(10), dim=0)
    shown = []
    for i in range(len(probs)):
        shown.append(probs[i].item() * 100)
    print(shown)
    """,
    # a loop over layers of a fixed count, not over a tensor's elements
    """
    import torch
    hidden = torch.zeros(4, 8, 16)
    for layer in range(4):
        hidden[layer] = torch.tanh(hidden[layer] + 1)
    """,
    # the loop count is not a tensor's size (a parameter of unknown origin)
    """
    import torch
    def scale(x, n):
        out = torch.zeros_like(x)
        for i in range(n):
            out[i] = x[i] * 2
        return out
    """,
    # a numpy array, not a tensor
    """
    import numpy as np
    import torch
    arr = np.arange(10.0)
    res = np.zeros(10)
    for i in range(len(arr)):
        res[i] = arr[i] ** 2
    """,
    # the loop variable used in arithmetic, not only as an index
    """
    import torch
    x = torch.rand(10)
    y = torch.zeros(10)
    for i in range(x.numel()):
        y[i] = x[i] * i
    """,
    # a parameter only used with methods numpy arrays share (.shape, .clone-free copy): it may be an
    # ndarray, where the loop is a different cost question; not reported
    """
    import torch
    def scale(values, factor):
        out = values.copy()
        for i in range(values.shape[0]):
            out[i] = values[i] * factor
        return out
    """,
    # a reduction whose argument changes per element is not one call with dim=
    """
    import torch
    def per_row(x: torch.Tensor, dims):
        out = torch.zeros(x.size(0))
        for i in range(x.size(0)):
            out[i] = x[i].sum(dims[i])
        return out
    """,
]

INVALID = [
    # the RULES.md shape, with the count from the shape
    """
    import torch
    x = torch.randn(10000)
    out = torch.empty_like(x)
    n = x.shape[0]
    for i in range(n):
        out[i] = x[i] * 2
    """,
    # a weighted sum accumulated element by element
    """
    import torch
    def weighted_score(preds: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        total = 0.0
        for i in range(len(preds)):
            total += preds[i] * weights[i]
        return total
    """,
    # element-wise torch functions per element
    """
    import torch
    logits = torch.randn(512)
    probs = torch.zeros(512)
    for i in range(logits.size(0)):
        probs[i] = torch.sigmoid(logits[i]) * 0.5 + 0.25
    """,
    # a nested loop over both dimensions
    """
    import torch
    a = torch.rand(64, 32)
    b = torch.rand(64, 32)
    c = torch.zeros(64, 32)
    rows, cols = a.shape
    for i in range(rows):
        for j in range(cols):
            c[i, j] = a[i, j] * b[i, j] - 1
    """,
    # a model's output rescaled element by element
    """
    import torch
    import torch.nn as nn
    model = nn.Linear(8, 1)
    x = torch.randn(100, 8)
    with torch.no_grad():
        y = model(x).squeeze(1)
    for k in range(len(y)):
        y[k] = (y[k] - 0.5) / 2.0
    """,
    # a temporary per element, and a method call that acts element-wise
    """
    import torch
    err = torch.randn(256)
    sq = torch.zeros(256)
    for i in range(err.numel()):
        d = err[i].abs()
        sq[i] = d * d
    """,
    # in-place update of each row
    """
    import torch
    emb = torch.randn(100, 16)
    scale = torch.rand(100)
    for r in range(emb.size(0)):
        emb[r] *= scale[r]
    """,
    # reduction over the columns of each row with a nested loop
    """
    import torch
    m = torch.rand(20, 30)
    row_sum = torch.zeros(20)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            row_sum[i] += m[i, j]
    """,
    # squared error summed in a loop inside a method
    """
    import torch
    class Metric:
        def mse(self, pred: torch.Tensor, target: torch.Tensor):
            n = pred.size(0)
            err = 0
            for i in range(n):
                err += (pred[i] - target[i]) ** 2
            return err / n
    """,
    # a dot product by hand
    """
    import torch
    u = torch.randn(300)
    v = torch.randn(300)
    dot = torch.tensor(0.0)
    for idx in range(len(u)):
        dot += u[idx] * v[idx]
    """,
    # clamping each element with torch.clamp in a helper
    """
    import torch
    def clip_scores(raw):
        scores = torch.as_tensor(raw).float()
        for i in range(scores.shape[0]):
            scores[i] = torch.clamp(scores[i], 0.0, 1.0)
        return scores
    """,
    # loop-invariant statistics of the whole tensor inside the element loop
    """
    import torch
    def standardise(t: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(t)
        for i in range(len(t)):
            out[i] = (t[i] - t.mean()) / (t.std() + 1e-8)
        return out
    """,
    # a reduction of each row: one call with dim=1
    """
    import torch
    feats = torch.randn(256, 128)
    norms = torch.zeros(256)
    for i in range(feats.shape[0]):
        norms[i] = torch.norm(feats[i]) + feats[i].abs().sum() * 0
    """,
    # an unannotated parameter the function treats as a tensor (x.size(0) is torch's, not numpy's)
    """
    import torch
    def apply_gate(x, scale):
        n = x.size(0)
        out = x.new_zeros(n)
        for i in range(n):
            out[i] = torch.sigmoid(x[i]) * scale
        return out
    """,
]
