"""Loops over batches, loop invariance, and what a loop does with the tensors it builds.

Computed lazily from a FileModel (``analysis(model)``), for rules about work repeated on
every batch (ML004). Three questions:

- *Is this loop over batches?* ``is_batch_loop``: it iterates a data loader (by role or
  spelling, also through ``enumerate``/``tqdm``/``zip``), batch-named things
  (``for batch in ...``, ``range(0, n, batch_size)``), or its body fetches a batch
  (``next(it)``, ``get_batch(...)``) or runs a training step (``loss.backward()``)
  without being an epoch loop. Loops over layers, epochs or hyper-parameters are not,
  nor are loops in unit tests (``Phases.unit_test``): they check a few fixed steps once.
- *Is this expression the same on every iteration?* ``LoopFacts.invariant``: built from
  constants, names the loop never binds (parameters, module names, names assigned
  before the loop), attributes of those that the loop never assigns or hands to a
  mutating method, and pure calls (``len``, ``min``, ``torch.device``, tensor
  constructors, ``x.size(0)`` of an invariant ``x``). Anything derived from the loop
  target or from names bound in the loop is variant, transitively; calls with unknown
  results are variant.
- *Does the tensor an expression builds stay private to one iteration?*
  ``LoopFacts.stays_private``: follow the names that may alias it (assignments, views,
  containers, ``[t] * n``) and fail on any in-place change (``t.add_()``, ``t += 1``,
  ``t[i] = v``, ``out=t``, a local helper that mutates its argument) and on any escape
  (appended to a container, stored on an object, returned or yielded).
"""

from __future__ import annotations

import re
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Set

import libcst as cst

from mllint.semantics import roles as R
from mllint.semantics.model import BACKWARD, CALL, MODULE_SCOPE, FileModel, Loop
from mllint.semantics.names import dotted
from mllint.semantics.phases import Phases

# --- vocabularies -----------------------------------------------------------------------

# Calls that allocate a new tensor whose contents depend only on their arguments.
TENSOR_CONSTRUCTORS = frozenset(
    f"torch.{name}"
    for name in (
        "zeros", "ones", "full", "empty", "eye", "arange", "range", "linspace", "logspace", "tensor",
        "as_tensor", "scalar_tensor", "empty_strided", "tril_indices", "triu_indices",
        "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
        "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
        "ShortTensor", "ByteTensor", "CharTensor", "BoolTensor",
        "cuda.FloatTensor", "cuda.DoubleTensor", "cuda.HalfTensor", "cuda.LongTensor", "cuda.IntTensor",
        "cuda.ByteTensor", "cuda.BoolTensor",
    )
)
# ``x.new_zeros(...)``: a constructor that takes dtype and device from ``x``.
NEW_METHODS = frozenset({"new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"})

# Pure functions: their result depends only on their arguments.
_PURE_BUILTINS = frozenset(
    {"len", "int", "float", "bool", "str", "abs", "min", "max", "round", "tuple", "list", "range", "sum", "sorted",
     "divmod", "pow", "complex", "slice", "reversed", "isinstance", "getattr", "hasattr", "dict", "set", "frozenset"}
)
_PURE_QUALIFIED = re.compile(
    r"^(math\.\w+|operator\.\w+|torch\.(device|Size|finfo|iinfo|get_default_dtype|promote_types)"
    r"|(numpy|np)\.(array|asarray|zeros|ones|full|eye|arange|linspace|logspace|float32|float64|int64|int32|prod|sqrt|log|exp|pi)"
    r"|functools\.reduce)$"
)
# Torch functions that return a new tensor computed from their arguments (no randomness, no
# in-place writes); used to hoist ``torch.tril(torch.ones(n, n))`` as one expression.
PURE_TORCH_FUNCTIONS = frozenset(
    f"torch.{name}"
    for name in (
        "tril", "triu", "outer", "exp", "log", "pow", "sqrt", "rsqrt", "sin", "cos", "diag", "diag_embed", "stack",
        "cat", "cumsum", "cumprod", "flip", "where", "logical_not", "ones_like", "zeros_like", "full_like",
        "polar", "complex", "matmul", "kron", "cartesian_prod", "block_diag", "div", "mul", "add", "sub", "neg",
        "reciprocal", "abs", "clamp", "repeat_interleave", "unsqueeze", "reshape", "cdist", "sigmoid", "tanh",
        "nn.functional.pad", "nn.functional.one_hot",
    )
)
# Tensor methods (and common accessors) that neither change their receiver nor depend on
# anything but their arguments.
PURE_METHODS = frozenset(
    {
        # accessors of tensors and containers
        "size", "dim", "numel", "element_size", "nelement", "get", "keys", "values", "items", "item", "tolist",
        "index", "count", "format", "join", "split", "strip", "lower", "upper", "replace", "startswith", "endswith",
        "bit_length", "is_floating_point", "is_complex", "get_device", "stride", "type_as",
        # tensor operations returning a new tensor or a view
        "to", "cuda", "cpu", "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char",
        "type", "view", "view_as", "reshape", "reshape_as", "unsqueeze", "squeeze", "expand", "expand_as", "repeat",
        "t", "transpose", "permute", "flatten", "contiguous", "tril", "triu", "masked_fill", "cumsum", "sum", "mean",
        "diag", "flip", "neg", "exp", "log", "sqrt", "pow", "abs", "clone", "detach", "logical_not", "reciprocal",
        "sin", "cos", "pin_memory", "clamp", "repeat_interleave", "mul", "add", "sub", "div", "matmul", "float_power",
    }
)
# Methods whose result is a new tensor, never a view of (or the same object as) the receiver.
FRESH_METHODS = frozenset(
    {
        "sum", "mean", "max", "min", "std", "var", "norm", "prod", "clone", "add", "sub", "mul", "div", "matmul",
        "mm", "bmm", "abs", "exp", "log", "pow", "sqrt", "softmax", "log_softmax", "argmax", "argmin", "item",
        "tolist", "eq", "ne", "gt", "lt", "ge", "le", "all", "any", "cumsum", "masked_fill", "tril", "triu",
        "size", "dim", "numel", "sigmoid", "tanh", "relu", "neg", "reciprocal", "round", "floor", "ceil",
    }
)
# Torch functions whose result may share storage with their first argument.
VIEW_FUNCTIONS = frozenset(
    f"torch.{name}"
    for name in (
        "narrow", "select", "squeeze", "unsqueeze", "reshape", "flatten", "transpose", "t", "permute", "chunk",
        "split", "tensor_split", "unbind", "movedim", "moveaxis", "diagonal", "view_as_real", "view_as_complex",
        "as_strided", "broadcast_to", "atleast_1d", "atleast_2d", "atleast_3d", "swapaxes", "swapdims",
        "nn.Parameter", "nn.parameter.Parameter", "from_numpy", "as_tensor", "detach",
    )
)
# Methods that store their arguments somewhere that outlives the iteration.
ESCAPE_METHODS = frozenset(
    {
        "append", "extend", "insert", "add", "push", "put", "put_nowait", "appendleft", "extendleft", "update",
        "setdefault", "register_buffer", "register_parameter", "add_module", "save_for_backward", "store",
        "record", "send", "add_param_group", "__setitem__",
    }
)
# Tensor (and array) methods known not to change their receiver; any other method called on
# a tensor the loop built may (numpy's ``arr.fill(0)``, ``arr.sort()`` after ``t.numpy()``).
NON_MUTATING_METHODS = PURE_METHODS | FRESH_METHODS | frozenset(
    {
        "numpy", "backward", "chunk", "unbind", "index_select", "gather", "masked_select", "nonzero", "where", "argsort",
        "topk", "unique", "roll", "narrow", "select", "unfold", "softmax", "log_softmax", "square", "sign", "lerp",
        "bmm", "mm", "mv", "dot", "outer", "einsum", "isnan", "isinf", "isfinite", "nan_to_num", "floor_divide",
        "remainder", "fmod", "maximum", "minimum", "logical_and", "logical_or", "logical_xor", "bitwise_and",
        "bitwise_or", "amax", "amin", "logsumexp", "cumprod", "diff", "is_contiguous", "data_ptr", "is_pinned",
        "record_stream", "storage_offset", "untyped_storage", "__getitem__", "__len__", "__iter__", "as_subclass",
        "requires_grad", "retain_grad", "register_hook", "abs", "mul", "add", "sub", "div", "true_divide",
    }
)
# Functions that write into a tensor argument: collectives and shuffles.
MUTATING_FUNCTIONS = frozenset(
    {
        "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
        "reduce_scatter_tensor", "recv", "irecv", "all_to_all", "all_to_all_single", "shuffle", "copyto", "place",
        "putmask",
    }
)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# Iterables whose items are batches (``train_loader``, ``batches``, ``data_iter``), not the items of one batch.
_LOADER_TEXT = re.compile(r"loader|batches|iterator$|(^|_)iter$|(^|_)dl$|^dl_", re.IGNORECASE)
# A loop variable that holds a whole batch. Not ``batch_idx`` or ``batch_scores``: post-processing
# code spells the items of one batch so (``for batch_idx, scores in enumerate(zip(...))``).
_BATCH_TARGET = re.compile(r"^(batch|batches|minibatch|mini_batch|mb|batch_data|data_batch|batch_dict)$", re.IGNORECASE)
_NOT_BATCH = re.compile(r"^batch_?(size|sizes|shape|count|len|length|dim|dims|norm|first)s?$|bs$", re.IGNORECASE)
_EPOCH = re.compile(r"epoch", re.IGNORECASE)
_BATCH_FETCH = re.compile(r"(^|_)(get|next|sample|load|fetch|make|draw|generate)_?\w*batch|batch(es)?$", re.IGNORECASE)


def is_inplace_name(name: str) -> bool:
    """``add_``, ``zero_``: PyTorch's spelling of an in-place operation (dunders excluded)."""
    return name.endswith("_") and not name.endswith("__") and not name.startswith("_") and len(name) > 1


def _call_name(func: cst.BaseExpression) -> str:
    return (dotted(func) or "").rsplit(".", 1)[-1]


def _called_name(func: cst.BaseExpression) -> str:
    """The name a call invokes, also for a method of a computed receiver
    (``t[:n].unsqueeze`` -> ``unsqueeze``, ``buffers[k].append`` -> ``append``), which
    ``_call_name`` leaves empty."""
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return _call_name(func)


def is_method_call(model: FileModel, func: cst.BaseExpression) -> bool:
    """``x.add_(1)``, ``self.buffer.append(t)``: a method of an object, not a function
    reached through a module (``torch.narrow``, ``nn.init.zeros_``, ``autograd.Variable``)."""
    if not isinstance(func, cst.Attribute):
        return False
    name = dotted(func.value)
    if name is None:
        return True
    head = name.split(".", 1)[0]
    return head not in model.imports.aliases or head in ("self", "cls")


# --- the analysis of one file --------------------------------------------------------------


class Analysis:
    """Parents of every node, names of the file, and per-loop facts, built on demand."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._names: Optional[Set[str]] = None
        self._globals: Optional[Set[str]] = None
        self._facts: Dict[cst.CSTNode, "LoopFacts"] = {}
        self._batch: Dict[cst.CSTNode, bool] = {}
        self._mutating_functions: Dict[str, bool] = {}
        self._self_assigned: Dict[str, Set[str]] = {}
        self._callees: Optional[Dict[cst.CSTNode, str]] = None

    # --- tree helpers ----------------------------------------------------------------
    @property
    def parents(self):
        return self.model.parents

    @property
    def names(self) -> Set[str]:
        """Every variable name used in the file, bound or read (to invent names that clash
        with none); attribute names and keyword-argument names are not variables."""
        if self._names is None:
            self._scan_file()
        assert self._names is not None
        return self._names

    @property
    def declared_global(self) -> Set[str]:
        """Names some function declares ``global`` or ``nonlocal``: any call may rebind them."""
        if self._globals is None:
            self._scan_file()
        assert self._globals is not None
        return self._globals

    def _scan_file(self) -> None:
        names: Set[str] = set()
        declared: Set[str] = set()
        for node, parent in self.model.parents.items():
            if isinstance(node, cst.Name):
                if not (isinstance(parent, cst.Attribute) and parent.attr is node) and not (
                    isinstance(parent, cst.Arg) and parent.keyword is node
                ):
                    names.add(node.value)
            elif isinstance(node, (cst.Global, cst.Nonlocal)):
                declared.update(item.name.value for item in node.names)
        self._names, self._globals = names, declared

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        return self.model.parents.ancestors(node)

    def statement_of(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The statement (simple statement line or compound statement) holding ``node``."""
        for parent in self.ancestors(node):
            if isinstance(parent, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return parent
        return None

    def inside_nested_scope(self, node: cst.CSTNode, stop: cst.CSTNode) -> bool:
        """Whether ``node`` sits in a lambda, comprehension, def or class nested below ``stop``."""
        for parent in self.ancestors(node):
            if parent is stop:
                return False
            if isinstance(parent, _SCOPES):
                return True
        return False

    # --- loops ----------------------------------------------------------------------------
    def facts(self, loop: Loop) -> "LoopFacts":
        found = self._facts.get(loop.node)
        if found is None:
            found = self._facts[loop.node] = LoopFacts(self, loop)
        return found

    def is_batch_loop(self, loop: Loop) -> bool:
        found = self._batch.get(loop.node)
        if found is None:
            found = self._batch[loop.node] = _is_batch_loop(self, loop)
        return found

    def in_unit_test(self, scope: str) -> bool:
        """Whether ``scope`` is a unit test or a function nested in one (``Phases.unit_test``:
        judged by the code, not by the file's name)."""
        phases = Phases.of(self.model)
        parts = scope.split(".") if scope != MODULE_SCOPE else []
        for end in range(len(parts), 0, -1):
            fn = self.model.functions.get(".".join(parts[:end]))
            if fn is not None and phases.unit_test(fn):
                return True
        return False

    def enclosing_batch_loop(self, loop: Optional[Loop]) -> Optional[Loop]:
        while loop is not None:
            if self.is_batch_loop(loop):
                return loop
            loop = loop.parent
        return None

    # --- functions ------------------------------------------------------------------------
    def callee_of(self, call: cst.Call) -> Optional[str]:
        """The key of the function defined in this file that ``call`` calls, if any."""
        if self._callees is None:
            self._callees = {e.node: e.callee for e in self.model.effects if e.kind == CALL and e.callee}
        return self._callees.get(call)

    def mutates_arguments(self, key: str) -> bool:
        """Whether the local function ``key`` may change one of its parameters in place."""
        found = self._mutating_functions.get(key)
        if found is None:
            self._mutating_functions[key] = True  # recursion: assume the worst while computing
            fn = self.model.functions.get(key)
            found = True
            if fn is not None:
                params = set(fn.params) - {"self", "cls"}
                for star in (fn.node.params.star_arg, fn.node.params.star_kwarg):
                    if isinstance(star, cst.Param):
                        params.add(star.name.value)
                found = bool(params) and not _Aliases(self, fn.node.body, set(params), key).private()
            self._mutating_functions[key] = found
        return found

    def self_attributes_assigned_by(self, key: str, seen: Optional[Set[str]] = None) -> Set[str]:
        """``self.x`` refs a method (and the methods it calls on ``self``) assigns or mutates."""
        if key in self._self_assigned:
            return self._self_assigned[key]
        seen = set() if seen is None else seen
        if key in seen:
            return set()
        seen.add(key)
        fn = self.model.functions.get(key)
        out: Set[str] = set()
        if fn is not None:
            scan = _Bindings(self, fn.node.body, key)
            out = {ref for ref in scan.changed if ref.startswith("self.")}
            for method in scan.self_calls:
                callee = self._method(key, method)
                if callee is not None:
                    out |= self.self_attributes_assigned_by(callee, seen)
        self._self_assigned[key] = out
        return out

    def _method(self, scope: str, method: str) -> Optional[str]:
        cls = self.model.class_scope_of(scope)
        if cls is None:
            return None
        key = f"{cls}.{method}"
        return key if key in self.model.functions else None


def analysis(model: FileModel) -> Analysis:
    """The file's analysis, kept on the model (a module-level WeakKeyDictionary would never let
    the model go: the analysis refers to it, so every linted file's tree stayed in memory)."""
    found = getattr(model, "_invariance", None)
    if found is None:
        found = Analysis(model)
        model._invariance = found  # type: ignore[attr-defined]
    return found


# --- batch loops ----------------------------------------------------------------------------


def _is_batch_loop(an: Analysis, loop: Loop) -> bool:
    model = an.model
    if loop.trip_count is not None and loop.trip_count <= 1:
        return False
    if loop.scope.rsplit(".", 1)[-1] == "__init__":
        return False
    if an.in_unit_test(loop.scope):
        return False  # a test's loop checks a few fixed steps once; it is no hot path
    node = loop.node
    if _exits_first_time(node.body):
        return False  # for batch in loader: ...; break -- looks at one batch
    epoch = any(_EPOCH.search(t) for t in loop.targets)
    if isinstance(node, cst.For):
        if not epoch and _loader_like(an, loop, node.iter):
            return True
        if _EPOCH.search(" ".join(t for t in (loop.iter_ref, loop.iter_call) if t)):
            epoch = True
        if loop.iter_call in ("range", "trange"):
            if _range_over_batches(an, node.iter):
                return True
        elif any(_BATCH_TARGET.match(t) and not _NOT_BATCH.search(t) for t in loop.targets):
            return True  # (not for batch_idx in range(batch_size): the items of one batch)
    if epoch:
        return False
    # The body fetches a batch, or runs a training step (each iteration is one batch).
    for targets, value, ctx in model.assignments:
        if ctx.loop is not loop or ctx.conditional:
            continue
        if len(targets) == 1 and _BATCH_TARGET.match(targets[0]) and not _NOT_BATCH.search(targets[0]):
            return True  # batch = ...; not ``batch, arange = f(count)`` (a batch-index vector among others)
        if isinstance(value, cst.Call):
            name = _call_name(value.func)
            if name == "next" and value.args and _data_iterator(value.args[0].value):
                return True  # batch = next(train_iter)
            if name != "next" and _BATCH_FETCH.search(name) and "size" not in name.lower():
                return True  # xb, yb = get_batch("train")
    return any(e.kind == BACKWARD and e.depth == 0 for e in model.loop_effects(loop))


_NOT_LOADER = re.compile(r"_(dir|path|paths|file|files|name|names|cfg|config|kwargs|args|fn|cls|type|size|len)$", re.IGNORECASE)


def _loader_like(an: Analysis, loop: Loop, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether iterating ``expr`` yields batches: a data loader (by role or spelling:
    ``train_loader``, ``batches``, ``data_iter``, ``dataloaders[phase]``), a call that
    returns one (``self.train_dataloader()``, ``get_batches(x, y)``), a wrapper of one
    (``enumerate(tqdm(loader))``, ``metric_logger.log_every(loader, 10)``), or a name
    assigned from one of these (``pbar = tqdm(loader)``)."""
    model = an.model
    if depth > 3:
        return False
    if isinstance(expr, cst.Subscript):
        return _loader_like(an, loop, expr.value, depth + 1)
    if isinstance(expr, cst.Call):
        name = _call_name(expr.func)
        if name != "range" and _LOADER_TEXT.search(name) and not _NOT_LOADER.search(name):
            return True
        return any(a.keyword is None and _loader_like(an, loop, a.value, depth + 1) for a in expr.args)
    ref = dotted(expr)
    if ref is None:
        return False
    last = ref.rsplit(".", 1)[-1]
    if _NOT_LOADER.search(last) or _NOT_BATCH.search(last):
        return False
    if model.has_role(ref, R.LOADER, loop.scope) or _LOADER_TEXT.search(last):
        return True
    if "." in ref:
        return False
    for targets, value, ctx in model.assignments:  # pbar = tqdm(train_loader)
        if targets == (ref,) and ctx.scope == loop.scope and not loop.encloses(ctx.loop) and value is not expr:
            if isinstance(value, cst.Call) and _loader_like(an, loop, value, depth + 1):
                return True
    return False


_DATA_ITERATOR = re.compile(r"iter|loader|data|batch|(^|_)dl$|stream|(^|_)it$|gen", re.IGNORECASE)


def _data_iterator(arg: cst.BaseExpression) -> bool:
    """``next(train_iter)``, ``next(iter(loader))``, ``next(self.data_stream)``; not
    ``next(model.parameters())`` or ``next(grid_iters[kind])`` (one of several iterators)."""
    if isinstance(arg, cst.Call) and _call_name(arg.func) == "iter" and arg.args:
        arg = arg.args[0].value
    name = dotted(arg)
    return name is not None and "param" not in name and bool(_DATA_ITERATOR.search(name.rsplit(".", 1)[-1]))


def _exits_first_time(body: cst.BaseSuite) -> bool:
    """Whether the loop body ends every pass with ``break``, ``return`` or ``raise``."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for statement in statements:
        small = statement.body if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else ()
        if any(isinstance(s, (cst.Break, cst.Return, cst.Raise)) for s in small):
            return True
    return False


def _range_over_batches(an: Analysis, call: cst.BaseExpression) -> bool:
    """``range(0, n, batch_size)``, ``range(num_batches)``, ``range(len(loader))``,
    ``range(len(X) // batch_size)``."""
    while isinstance(call, cst.Call) and _call_name(call.func) in ("enumerate", "tqdm", "trange"):
        if not call.args:
            return False
        call = call.args[0].value
    if not isinstance(call, cst.Call):
        return False
    args = [a.value for a in call.args if a.keyword is None]
    texts = [" ".join(an.model.code_of(a).split()) for a in args]
    if len(texts) == 3 and re.search(r"batch|\bbs\b", texts[2], re.IGNORECASE):
        return True
    if not texts or len(texts) > 2:
        return False
    stop = texts[-1]
    return bool(
        re.search(r"n_?batch|num_?batch|batches|loader", stop, re.IGNORECASE)
        or re.search(r"//?\s*[\w.]*(batch_size|\bbs)\b", stop, re.IGNORECASE)  # range(len(X) // batch_size)
    )


# --- names bound and objects changed in a block --------------------------------------------------


class _Bindings(cst.CSTVisitor):
    """Names a piece of code binds, refs it assigns or mutates (``self.n = ...``,
    ``values.append(x)``, ``cfg.update()``), and the methods it calls on ``self``."""

    def __init__(self, an: Analysis, root: cst.CSTNode, scope: str) -> None:
        super().__init__()
        self.an = an
        self.scope = scope
        self.bound: Set[str] = set()
        self.changed: Set[str] = set()
        self.self_calls: Set[str] = set()
        self.binding_counts: Dict[str, int] = {}
        self.changes_defaults = False  # calls torch.set_default_dtype/device/tensor_type
        self.scan(root)

    def scan(self, root: cst.CSTNode) -> None:
        """``tree.visit(root, self)``, answered from the file's index: the visit hooks run on
        ``root`` and the nodes under it in source order, not inside nested functions, classes
        or lambdas (the hooks of those return False: their insides are not visited)."""
        hooks = _binding_hooks()
        hook = hooks.get(type(root))
        if hook is not None and hook(self, root) is False:
            return
        for node in self.an.model.index.nodes(tuple(hooks), root, nested=False):
            hooks[type(node)](self, node)

    def _bind_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.bound.add(target.value)
            self.binding_counts[target.value] = self.binding_counts.get(target.value, 0) + 1
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value)
        elif isinstance(target, (cst.Attribute, cst.Subscript)):
            base = _base_ref(target)
            if base:
                self.changed.add(base)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind_target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind_target(node.name.name)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind_target(node.target)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            if alias.asname is not None:
                self._bind_target(alias.asname.name)  # type: ignore[arg-type]
            else:
                self.bound.add((dotted(alias.name) or "").split(".")[0])

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            target = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(target, cst.Name):
                self._bind_target(target)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._bind_target(node.name)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._bind_target(node.name)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_CompFor(self, node: cst.CompFor) -> None:
        pass  # comprehension variables are local to the comprehension

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if _call_name(func).startswith("set_default_"):
            self.changes_defaults = True
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        receiver = dotted(func.value) or _base_ref(func.value)
        if receiver is None:
            return
        head = receiver.split(".", 1)[0]
        if head in self.an.model.imports.aliases and head not in self.bound:
            return  # torch.sigmoid(x), np.random.shuffle(x): a module's function, not a change of the module
        if receiver in ("self", "cls"):
            self.self_calls.add(method)
            key = self.an._method(self.scope, method) if self.scope != MODULE_SCOPE else None
            if key is None:
                self.changed.add(f"{receiver}.{method}")  # self.model(x), self.log(...): the attribute's object
            return
        if method not in PURE_METHODS:
            self.changed.add(receiver)


_BINDING_HOOKS: Dict[type, Callable] = {}


def _binding_hooks() -> Dict[type, Callable]:
    """Node class -> the `_Bindings` method visiting it (``visit_Assign`` for cst.Assign)."""
    if not _BINDING_HOOKS:
        for name, method in vars(_Bindings).items():
            if name.startswith("visit_") and name != "visit_CompFor":  # visit_CompFor does nothing
                _BINDING_HOOKS[getattr(cst, name[len("visit_"):])] = method
    return _BINDING_HOOKS


def _base_ref(node: cst.BaseExpression) -> Optional[str]:
    """The dotted object an attribute/subscript target writes into: ``self.n`` for
    ``self.n = 1``, ``values`` for ``values[i] = 1``, ``a.b`` for ``a.b[0].c = 1``."""
    if isinstance(node, cst.Attribute):
        name = dotted(node)
        if name is not None:
            return name
        return _base_ref(node.value)
    if isinstance(node, cst.Subscript):
        return dotted(node.value) or _base_ref(node.value)
    if isinstance(node, cst.Call):
        return _base_ref(node.func.value) if isinstance(node.func, cst.Attribute) else None
    return dotted(node)


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


# --- one loop ---------------------------------------------------------------------------------


class LoopFacts:
    """What one loop binds and changes, and the questions asked about expressions in it."""

    def __init__(self, an: Analysis, loop: Loop) -> None:
        self.an = an
        self.model = an.model
        self.loop = loop
        node = loop.node
        scan = _Bindings(an, node.body, loop.scope)
        if isinstance(node, cst.For):
            scan._bind_target(node.target)
        elif isinstance(node, cst.While):
            scan.scan(node.test)
        self._fixed: FrozenSet[str] = frozenset()  # comprehension variables while checking one
        self.bound = scan.bound
        self.binding_counts = scan.binding_counts
        self.changes_defaults = scan.changes_defaults
        self.changed = set(scan.changed)
        for method in scan.self_calls:
            callee = an._method(loop.scope, method)
            if callee is not None:
                self.changed |= an.self_attributes_assigned_by(callee)

    # --- invariance ----------------------------------------------------------------------
    def name_free(self, name: str) -> bool:
        """Whether the loop never rebinds ``name`` (and no function may, through ``global``)."""
        return name not in self.bound and name not in self.an.declared_global

    def ref_invariant(self, ref: str) -> bool:
        if ref.split(".", 1)[0] in self._fixed:
            return True
        if not self.name_free(ref.split(".", 1)[0]):
            return False
        return not any(_related(ref, changed) for changed in self.changed)

    def invariant(self, expr: Optional[cst.CSTNode], local: Optional[FrozenSet[str]] = None) -> bool:
        """Whether ``expr`` evaluates to the same value on every iteration, without side
        effects (``local``: names of enclosing comprehensions, fixed for one evaluation)."""
        if expr is None:
            return True
        if local is not None and local != self._fixed:
            saved, self._fixed = self._fixed, local
            try:
                return self.invariant(expr, local)
            finally:
                self._fixed = saved
        if isinstance(expr, cst.Name):
            return expr.value in ("True", "False", "None") or self.ref_invariant(expr.value)
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)):
            return True
        if isinstance(expr, cst.ConcatenatedString):
            return self.invariant(expr.left) and self.invariant(expr.right)
        if isinstance(expr, cst.FormattedString):
            return all(self.invariant(p.expression) for p in expr.parts if isinstance(p, cst.FormattedStringExpression))
        if isinstance(expr, cst.Attribute):
            name = dotted(expr)
            if name is not None:
                return self.ref_invariant(name)
            return self.invariant(expr.value)
        if isinstance(expr, cst.Subscript):
            return self.invariant(expr.value) and all(self.invariant(s.slice) for s in expr.slice)
        if isinstance(expr, cst.Index):
            return self.invariant(expr.value)
        if isinstance(expr, cst.Slice):
            return self.invariant(expr.lower) and self.invariant(expr.upper) and self.invariant(expr.step)
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return all(self.invariant(e.value) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            return all(
                self.invariant(e.value) and (not isinstance(e, cst.DictElement) or self.invariant(e.key))
                for e in expr.elements
            )
        if isinstance(expr, cst.BinaryOperation):
            return self.invariant(expr.left) and self.invariant(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self.invariant(expr.expression)
        if isinstance(expr, cst.BooleanOperation):
            return self.invariant(expr.left) and self.invariant(expr.right)
        if isinstance(expr, cst.Comparison):
            return self.invariant(expr.left) and all(self.invariant(c.comparator) for c in expr.comparisons)
        if isinstance(expr, cst.IfExp):
            return self.invariant(expr.test) and self.invariant(expr.body) and self.invariant(expr.orelse)
        if isinstance(expr, cst.Call):
            return self.pure_call(expr) and all(self.invariant(a.value) for a in expr.args)
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._comprehension_invariant(expr)
        return False  # lambdas, await, yield, walrus

    def _comprehension_invariant(self, expr) -> bool:
        """``[f(h) for h in range(n)]`` with ``n`` invariant and ``f`` pure."""
        names = set(self._fixed)
        clause = expr.for_in
        while clause is not None:
            if clause.asynchronous is not None or not self.invariant(clause.iter, frozenset(names)):
                return False
            found: Set[str] = set()
            if not _collect_names(clause.target, found):
                return False
            names |= found
            if not all(self.invariant(c.test, frozenset(names)) for c in clause.ifs):
                return False
            clause = clause.inner_for_in
        if isinstance(expr, cst.DictComp):
            return self.invariant(expr.key, frozenset(names)) and self.invariant(expr.value, frozenset(names))
        return self.invariant(expr.elt, frozenset(names))

    def pure_call(self, call: cst.Call) -> bool:
        """Whether ``call`` computes its result from its receiver and arguments alone
        (the arguments themselves are checked by the caller)."""
        func = call.func
        if isinstance(func, cst.Name):
            name = func.value
            if name in _PURE_BUILTINS:
                return name not in self.model.functions and self.name_free(name)
        qual = self.model.imports.qualname(func) or ""
        if qual in TENSOR_CONSTRUCTORS or qual in PURE_TORCH_FUNCTIONS or _PURE_QUALIFIED.match(qual):
            return self.name_free((dotted(func) or "").split(".")[0])
        if isinstance(func, cst.Attribute) and (func.attr.value in PURE_METHODS or func.attr.value in NEW_METHODS):
            return self.invariant(func.value)
        return False

    # --- aliasing -------------------------------------------------------------------------
    def stays_private(self, expr: cst.CSTNode) -> bool:
        """Whether the tensor ``expr`` builds is never changed in place during the loop and
        no reference to it outlives the iteration."""
        start = self._flow_from(expr)
        if start is None:
            return False
        names = start
        if not names:
            return True
        return _Aliases(self.an, self.loop.node.body, names, self.loop.scope).private()

    def _flow_from(self, expr: cst.CSTNode) -> Optional[Set[str]]:
        """Names the value of ``expr`` lands in directly (None: it escapes or is changed)."""
        parents = self.an.parents
        node = expr
        while True:
            parent = parents.get(node)
            if parent is None:
                return None
            if isinstance(parent, (cst.Element, cst.DictElement, cst.StarredElement, cst.Tuple, cst.List, cst.Set, cst.Dict)):
                if isinstance(parent, cst.DictElement) and parent.key is node:
                    return set()  # a dict key: hashed, not stored as a tensor to mutate
                node = parent
                continue
            if isinstance(parent, (cst.IfExp,)):
                if parent.test is node:
                    return set()
                node = parent
                continue
            if isinstance(parent, cst.Subscript) and parent.value is node:
                node = parent  # a view of it
                continue
            if isinstance(parent, (cst.Index, cst.Slice, cst.SubscriptElement)):
                return set()  # used as an index
            if isinstance(parent, cst.Attribute) and parent.value is node:
                call = parents.get(parent)
                if isinstance(call, cst.Call) and call.func is parent:
                    method = parent.attr.value
                    if is_inplace_name(method) or method not in NON_MUTATING_METHODS:
                        return None
                    if method in FRESH_METHODS:
                        return set()
                    node = call  # may return the same tensor or a view (.to(), .view(), .float())
                    continue
                node = parent  # t.T, t.data
                continue
            if isinstance(parent, cst.Arg):
                call = parents.get(parent)
                if not isinstance(call, cst.Call):
                    return None
                verdict = self._argument_verdict(call, parent)
                if verdict is None:
                    return None
                if verdict == "flows":
                    node = call
                    continue
                return set()
            if _container_arithmetic(parent) and isinstance(node, _CONTAINER_LITERALS):
                node = parent  # [t] * n, [t] + rest: a new list holding the same tensor
                continue
            if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation)):
                return set()  # consumed: the result is a new object
            if isinstance(parent, cst.AugAssign):
                return set() if parent.value is node else None
            if isinstance(parent, cst.Expr):
                return set()
            if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AssignTarget)):
                assign = parent if not isinstance(parent, cst.AssignTarget) else parents.get(parent)
                targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]
                names: Set[str] = set()
                for target in targets:
                    if not _collect_names(target, names):
                        return None  # stored on an object or in a container
                return names
            if isinstance(parent, cst.NamedExpr):
                if not isinstance(parent.target, cst.Name):
                    return None
                rest = self._flow_from(parent)
                return None if rest is None else rest | {parent.target.value}
            if isinstance(parent, (cst.Return, cst.Yield, cst.Await, cst.Lambda, cst.WithItem, cst.Raise)):
                return None
            if isinstance(parent, (cst.If, cst.While, cst.Assert)):
                return set()
            return None

    def _argument_verdict(self, call: cst.Call, arg: cst.Arg) -> Optional[str]:
        """What a call does with one of its arguments: "consumed", "flows" into the result,
        or None (stored or changed in place)."""
        func = call.func
        if arg.keyword is not None and arg.keyword.value == "out":
            return None
        if any(a.keyword is not None and a.keyword.value == "inplace" and not _is_false(a.value) for a in call.args):
            return None
        name = _called_name(func)
        if name in MUTATING_FUNCTIONS:
            return None  # dist.all_reduce(t) writes into t
        if is_method_call(self.model, func):
            assert isinstance(func, cst.Attribute)
            if name in ESCAPE_METHODS:
                return None
            key = self.an.callee_of(call)
            if key is not None and self.an.mutates_arguments(key):
                return None
            return "consumed"  # x.copy_(t) reads t; criterion(out, t) reads t
        if name in ("setattr",):
            return None
        if is_inplace_name(name):
            return None  # torch.nn.init.zeros_(t)
        key = self.an.callee_of(call)
        if key is not None and self.an.mutates_arguments(key):
            return None
        if _flows_through(self.model, call):
            return "flows"
        return "consumed"


def _flows_through(model: FileModel, call: cst.Call) -> bool:
    """Whether a (non-method) call's result may hold its arguments: views (``torch.narrow``),
    containers (``list``, ``dict``, ``zip``), objects built from them (``Batch(x=t)``,
    ``nn.Parameter(t)``)."""
    qual = model.imports.qualname(call.func) or ""
    name = _call_name(call.func)
    return (
        qual in VIEW_FUNCTIONS
        or name in ("iter", "list", "tuple", "dict", "set", "zip", "enumerate", "reversed", "map", "filter", "sorted")
        or name[:1].isupper()
    )


_CONTAINER_LITERALS = (cst.List, cst.Tuple, cst.ListComp)


def _container_arithmetic(node: cst.CSTNode) -> bool:
    """``a * n`` or ``a + b``: with a list or tuple operand, the result holds the operand's items."""
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Multiply, cst.Add))


def _is_false(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "False"


def _collect_names(target: cst.BaseExpression, out: Set[str]) -> bool:
    if isinstance(target, cst.Name):
        out.add(target.value)
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return all(_collect_names(e.value, out) for e in target.elements)
    if isinstance(target, cst.StarredElement):
        return _collect_names(target.value, out)
    return False


class _Aliases:
    """Names in ``root`` that may hold a given tensor (or a view of it), grown to a fixpoint,
    and whether any of them is changed in place or escapes."""

    def __init__(self, an: Analysis, root: cst.CSTNode, names: Set[str], scope: str) -> None:
        self.an = an
        self.root = root
        self.names = set(names)
        self.scope = scope

    def may_alias(self, expr: Optional[cst.CSTNode]) -> bool:
        if expr is None:
            return False
        if isinstance(expr, cst.Name):
            return expr.value in self.names
        if isinstance(expr, cst.Attribute):
            return self.may_alias(expr.value)
        if isinstance(expr, cst.Subscript):
            return self.may_alias(expr.value)
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return any(self.may_alias(e.value) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            return any(self.may_alias(e.value) for e in expr.elements)
        if isinstance(expr, cst.IfExp):
            return self.may_alias(expr.body) or self.may_alias(expr.orelse)
        if isinstance(expr, cst.BooleanOperation):
            return self.may_alias(expr.left) or self.may_alias(expr.right)
        if _container_arithmetic(expr) and (
            isinstance(expr.left, _CONTAINER_LITERALS) or isinstance(expr.right, _CONTAINER_LITERALS)
        ):
            return self.may_alias(expr.left) or self.may_alias(expr.right)  # [t] * n, xs + [t]
        if isinstance(expr, cst.NamedExpr):
            return self.may_alias(expr.value)
        if isinstance(expr, cst.Call):
            func = expr.func
            if is_method_call(self.an.model, func):
                assert isinstance(func, cst.Attribute)
                if func.attr.value in FRESH_METHODS:
                    return False
                return self.may_alias(func.value)
            if _flows_through(self.an.model, expr) or _call_name(func) == "next":
                return any(self.may_alias(a.value) for a in expr.args)
            return False
        return False

    def private(self) -> bool:
        """Grow the alias set to a fixpoint; False as soon as an alias is changed or escapes."""
        for _ in range(20):
            before = len(self.names)
            verdict = self._scan()
            if verdict is False:
                return False
            if len(self.names) == before:
                return True
        return False

    def _scan(self) -> bool:
        aliases = self
        failed: List[bool] = []

        class Scan(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                value_aliases = aliases.may_alias(node.value)
                for target in node.targets:
                    aliases._assigned(target.target, value_aliases, failed)

            def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
                if node.value is not None:
                    aliases._assigned(node.target, aliases.may_alias(node.value), failed)

            def visit_AugAssign(self, node: cst.AugAssign) -> None:
                if aliases.may_alias(node.target):
                    failed.append(True)  # t += x changes t in place

            def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
                if aliases.may_alias(node.value) and isinstance(node.target, cst.Name):
                    aliases.names.add(node.target.value)

            def visit_For(self, node: cst.For) -> None:
                if aliases.may_alias(node.iter):
                    names: Set[str] = set()
                    if _collect_names(node.target, names):
                        aliases.names |= names
                    else:
                        failed.append(True)

            def visit_Call(self, node: cst.Call) -> None:
                func = node.func
                name = _called_name(func)
                method = is_method_call(aliases.an.model, func)
                if method and aliases.may_alias(func.value) and (is_inplace_name(name) or name not in NON_MUTATING_METHODS):
                    failed.append(True)  # t.add_(1), t[0].zero_(), t.data.copy_(x), t.numpy().fill(0)
                    return
                if not any(aliases.may_alias(a.value) for a in node.args):
                    return
                if any(a.keyword is not None and a.keyword.value == "out" and aliases.may_alias(a.value) for a in node.args):
                    failed.append(True)
                    return
                if any(a.keyword is not None and a.keyword.value == "inplace" and not _is_false(a.value) for a in node.args):
                    failed.append(True)
                    return
                if name in ESCAPE_METHODS and method:
                    failed.append(True)
                    return
                if name == "setattr" or name in MUTATING_FUNCTIONS or (not method and is_inplace_name(name)):
                    failed.append(True)
                    return
                key = aliases.an.callee_of(node)
                if key is not None and aliases.an.mutates_arguments(key):
                    failed.append(True)

            def visit_Return(self, node: cst.Return) -> None:
                if aliases.may_alias(node.value):
                    failed.append(True)

            def visit_Yield(self, node: cst.Yield) -> None:
                value = node.value
                if isinstance(value, cst.From):
                    value = value.item
                if aliases.may_alias(value):
                    failed.append(True)

            def visit_Global(self, node: cst.Global) -> None:
                if any(item.name.value in aliases.names for item in node.names):
                    failed.append(True)

            def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
                if any(item.name.value in aliases.names for item in node.names):
                    failed.append(True)

        # tree.visit(self.root, Scan()) (no hook returns False), answered from the file's index
        scan = Scan()
        kinds = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.Call, cst.Return, cst.Yield,
                 cst.Global, cst.Nonlocal)
        nodes = self.an.model.index.nodes(kinds, self.root)
        for node in [self.root, *nodes] if isinstance(self.root, kinds) else nodes:
            getattr(scan, "visit_" + type(node).__name__)(node)
        return not failed

    def _assigned(self, target: cst.BaseExpression, value_aliases: bool, failed: List[bool]) -> None:
        if isinstance(target, cst.Name):
            if value_aliases:
                self.names.add(target.value)
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._assigned(element.value, value_aliases, failed)
            return
        if isinstance(target, cst.StarredElement):
            self._assigned(target.value, value_aliases, failed)
            return
        if isinstance(target, (cst.Attribute, cst.Subscript)):
            if self.may_alias(target.value) or value_aliases:
                failed.append(True)  # t[0] = 1, t.data = x (changed); self.m = t, d[k] = t (escapes)
