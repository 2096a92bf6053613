"""The ML model of one file: what the rules query.

Built once per file by ``builder.build_model``. Everything a rule needs about flow is
here: scopes (functions and methods), loops and what they iterate, every call with
its context (enclosing loops, grad mode, the statement and block it sits in),
effects (backward, optimizer step, gradient clearing, forward, mode switch), roles
of names, and per-function summaries computed to a fixpoint.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from mllint.findings import Applicability, Edit, Finding, Fix, Severity, split_lines
from mllint.semantics.names import ImportTable
from mllint.semantics.tree import NodeIndex, visit as tree_visit

MODULE_SCOPE = "<module>"
ANY = "*"  # a reference that may be anything (unknown argument, loop variable over many)
EACH_GRAD = "[*].grad"  # CLEAR ref suffix: the gradient of every tensor in a collection (``tensors[*].grad``)

# Effect kinds
BACKWARD = "backward"
STEP = "step"
CLEAR = "clear"
# The gradients an optimizer holds start out empty here: the optimizer (and the tensors it
# holds) were just built, or a distributed autograd context was entered. Clears like CLEAR
# for the steps that follow, but is not a clearing call (nothing to report "runs only ...").
FRESH = "fresh"
FORWARD = "forward"
EVAL = "eval"
TRAIN = "train"
CALL = "call"  # call of a function defined in this file
MODE_UNKNOWN = "mode?"  # model.train(flag): the mode it sets is not known statically


@dataclass
class Loop:
    node: cst.CSTNode  # cst.For or cst.While
    scope: str
    parent: Optional["Loop"]
    targets: Tuple[str, ...]  # names bound by ``for`` (empty for while)
    iter_ref: Optional[str]  # the iterated object, unwrapped from enumerate/tqdm/zip/iter
    iter_call: Optional[str]  # qualified callee when iterating a call (range, enumerate, ...)
    body: cst.BaseSuite
    order: int
    trip_count: Optional[int] = None  # known number of iterations (range(3), a literal list)
    conds: Tuple["Cond", ...] = ()  # the conditions the loop statement itself sits under

    @property
    def depth(self) -> int:
        return 0 if self.parent is None else self.parent.depth + 1

    def encloses(self, other: Optional["Loop"]) -> bool:
        while other is not None:
            if other is self:
                return True
            other = other.parent
        return False


@dataclass
class Context:
    """Where a call or statement sits."""

    scope: str
    loop: Optional[Loop]
    conditional: bool  # under an if/try/match inside its innermost loop (or scope)
    grad: Optional[str]  # None (inherit), "off", "on", or "flag:<name>"
    statement: Optional[cst.CSTNode]  # the enclosing simple statement line / compound statement
    block: Optional[cst.CSTNode]  # the IndentedBlock / Module holding ``statement``
    withs: Tuple[cst.With, ...] = ()
    guard: Optional[cst.BaseExpression] = None  # test of the innermost ``if`` within the loop
    conds: Tuple["Cond", ...] = ()  # every condition the code sits under, outermost first


class Cond:
    """One condition a piece of code runs under: the branch of an ``if`` (compared by the
    test's text, so two ``if train:`` blocks are the same condition) or an ``except``.

    The text may be given as a function that renders it (`render`): the builder makes a
    Cond for every branch of every ``if``, and most are never compared or read."""

    __slots__ = ("_text", "branch", "loop", "node", "_render")

    def __init__(
        self, text: Optional[str], branch: str, loop: Optional["Loop"] = None,
        node: Optional[cst.CSTNode] = None, render: Optional[Callable[[], str]] = None,
    ) -> None:
        self._text = text
        self.branch = branch  # "if", "else" or "except"
        self.loop = loop  # innermost loop around the ``if``
        self.node = node  # the test expression
        self._render = render

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self._render()  # type: ignore[misc]
            self._render = None
        return self._text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cond):
            return NotImplemented
        return self.branch == other.branch and self.text == other.text

    def __hash__(self) -> int:
        return hash((self.text, self.branch))

    def __repr__(self) -> str:
        return f"Cond({self.text!r}, {self.branch!r})"


@dataclass
class Effect:
    kind: str
    ref: str  # the object acted on (optimizer for STEP, target for CLEAR, model for FORWARD...)
    node: cst.CSTNode  # the call (or assignment) that has the effect
    ctx: Context
    order: int
    callee: Optional[str] = None  # CALL: scope key of the local function
    args: Optional[Dict[str, Optional[str]]] = None  # CALL: parameter -> argument ref


@dataclass
class Function:
    key: str  # "f", "Cls.method", "outer.inner"
    node: cst.FunctionDef
    cls: Optional[str]
    params: Tuple[str, ...]  # positional parameter names in order, including self
    decorators: Tuple[str, ...]  # qualified decorator names
    grad: Optional[str]  # "off" for @torch.no_grad()/@torch.inference_mode()


@dataclass
class ClassInfo:
    name: str
    node: cst.ClassDef
    bases: Tuple[str, ...]
    is_module: bool
    methods: Set[str] = field(default_factory=set)


@dataclass(frozen=True)
class ClearSite:
    """A gradient clearing a function does, with the conditions it runs under in the
    function (conditions inside the function's own loops left out)."""

    ref: str
    conds: Tuple[Cond, ...] = ()


@dataclass(frozen=True)
class StepSite:
    """An optimizer step a function does outside loops of its own."""

    ref: str
    node: cst.CSTNode
    conds: Tuple[Cond, ...]
    feeder: Optional[cst.CSTNode]  # the backward() before it in the same function, if any
    covered: bool  # the same function clears this optimizer whenever it steps


@dataclass(frozen=True)
class Summary:
    """What calling a function does, in terms of its own parameter names
    (computed to a fixpoint over the file's call graph, see summaries.py)."""

    backward_sites: FrozenSet[cst.CSTNode] = frozenset()  # backward() calls it runs
    clears: FrozenSet[ClearSite] = frozenset()  # gradient clearings (ref ANY: any optimizer)
    fresh: FrozenSet[ClearSite] = frozenset()  # optimizers (or gradient contexts) it builds anew on each call
    top_steps: FrozenSet[StepSite] = frozenset()  # steps not inside a loop of its own
    loop_steps: FrozenSet[str] = frozenset()  # optimizers it steps inside loops of its own
    forwards: FrozenSet[str] = frozenset()  # models it runs forward
    evals: FrozenSet[str] = frozenset()  # models it switches to eval mode
    trains: FrozenSet[str] = frozenset()  # models it switches to train mode
    grad_off: bool = False  # decorated with @torch.no_grad() / @torch.inference_mode()


@dataclass
class LoopEffect:
    """An effect seen from a loop. ``depth`` 0: it runs on every pass through the loop
    body itself (not inside a nested loop); ``ref`` is translated into the loop's scope;
    ``via`` holds the call in the loop's scope through which a helper's effect arrives."""

    kind: str
    ref: str
    node: cst.CSTNode
    depth: int
    conditional: bool
    order: int  # position in the loop body (a helper's effects take the position of the call)
    via: Tuple[Effect, ...] = ()
    origin: Optional[Effect] = None  # the effect itself when it sits in the loop's own scope
    conds: Tuple[Cond, ...] = ()  # conditions inside the loop it runs under (nested loops' own left out)
    feeder: Optional[cst.CSTNode] = None  # STEP through a helper: the helper's backward() before it
    covered: bool = False  # STEP through a helper that clears the optimizer whenever it steps


class FileModel:
    def __init__(self, module: cst.Module, source: str, path: str) -> None:
        self.module = module
        self.source = source
        self.path = path
        self.imports = ImportTable()
        self.functions: Dict[str, Function] = {}
        self.classes: Dict[str, ClassInfo] = {}
        self.loops: List[Loop] = []
        self.effects: List[Effect] = []
        self.calls: List[Tuple[cst.Call, Context]] = []
        self.call_order: Dict[cst.Call, int] = {}  # call -> its position among effects (Effect.order)
        self.assignments: List[Tuple[Tuple[str, ...], cst.BaseExpression, Context]] = []
        # Facts about names are scoped like Python names: a function's parameter or local
        # shadows a module-level name of the same spelling (see ScopedTable).
        self.locals: Dict[str, Set[str]] = {}  # scope -> names local to it (parameters, assigned names)
        self.roles = ScopedTable(self)  # ref -> roles from assignment/annotation/usage
        self.instance_of = ScopedTable(self)  # ref -> class defined in the file
        self.project_instance_of = ScopedTable(self)  # ref -> qualified name of a class of another project file
        self.optimizer_params = ScopedTable(self)  # optimizer ref -> frozenset of model refs (None: unknown)
        # ref -> frozenset of what it was bound to: the qualified constructor when an optimizer
        # was built, "" for anything else (see is_torch_optimizer)
        self.optimizer_kinds = ScopedTable(self)
        self.assignment_order: Dict[cst.CSTNode, int] = {}  # assigned value -> position among effects
        self.callables = ScopedTable(self)  # ref -> expressions of the callables it may hold (see builder)
        self.lambda_calls: Dict[cst.CSTNode, List[cst.Call]] = {}  # lambda -> the calls in its body
        self.aliases = ScopedTable(self)  # ref -> the ref it was assigned from (model = net; net.to(dev))
        self.iteration_vars: Set[str] = set()  # names bound by loops/comprehensions
        # calls of an imported name that rebind it (``from models import net`` then ``net = net(n)``):
        # the import's class or factory ran there, whatever the name holds afterwards
        self.rebinding_import_calls: Set[cst.CSTNode] = set()
        self.summaries: Dict[str, Summary] = {}
        from mllint.semantics.options import DEFAULT

        self.options = DEFAULT  # what the settings say about the environment (see options.py)
        # The project as this file sees it (mllint/project/view.py): classes and callers in other
        # files. None when the file is judged alone.
        self.project = None
        self._positions = None
        self._parents = None
        self._lines: Optional[List[str]] = None
        self._assignments_index = None  # see _assignment_index
        self._code_lines: Optional[List[int]] = None  # see _statement_positions
        # whole-file facts a rule's helper derives once and asks again per finding (see memo())
        self._memo: Dict[object, object] = {}
        # edits.statement_starts of CPython's parse of the file, when the engine has it
        self.ast_starts: Optional[List[int]] = None
        # The codes of the rules the settings enable for this file (set by the engine), so that a
        # rule's advice and fix agree with the others' (ML006 with ML007 on). None: not known.
        self.enabled: Optional[FrozenSet[str]] = None

    # --- positions (resolved lazily: most files report nothing) ----------------------
    def position(self, node: cst.CSTNode):
        """The node's PositionProvider range. Only the top-level statement holding it is
        rendered (a finding in a large file should not cost a rendering of all of it)."""
        if self._positions is None:
            self._positions = {}
        found = self._positions.get(node)
        if found is None:
            self._positions.update(self._statement_positions(node) or _positions(self.module))
            found = self._positions[node]
        return found

    def _statement_positions(self, node: cst.CSTNode):
        from mllint.semantics.edits import statement_positions, top_statement_lines

        if self._code_lines is None:
            self._code_lines = top_statement_lines(self.module, self.source, self.ast_starts) or []
        if not self._code_lines:
            return None
        try:
            return statement_positions(self.module, self.lines, self.parents, node, self._code_lines)
        except (ImportError, AttributeError, TypeError):  # a LibCST whose internals differ
            return None

    # --- roles --------------------------------------------------------------------------
    def method_key(self, cls: Optional[str], method: str, seen: Optional[set] = None) -> Optional[str]:
        """The function key (``Class.method``) that `method` of a class defined in this file runs:
        its own, else the first local base class's (method resolution through local bases)."""
        if cls is None:
            return None
        seen = seen if seen is not None else set()
        if cls in seen:
            return None
        seen.add(cls)
        key = f"{cls}.{method}"
        if key in self.functions:
            return key
        info = self.classes.get(cls)
        for base in info.bases if info else ():
            found = self.method_key(base.rsplit(".", 1)[-1], method, seen)
            if found:
                return found
        return None

    def method_keys(self, cls: str) -> List[str]:
        """The function keys (``Class.method``) of the methods class `cls` of this file defines
        itself (not its nested functions, nor its bases' methods)."""
        prefix = cls + "."
        return [k for k in self.functions if k.startswith(prefix) and "." not in k[len(prefix):]]

    def subclass_method_key(self, cls: str, method: str) -> Optional[str]:
        """``self.method()`` in a base class that does not define it: the method of the one
        subclass in this file that does (``BaseTrainer.fit`` calling ``self.evaluate()`` that
        ``MyTrainer`` defines). None when no subclass or several different ones define it."""
        found = set()
        todo, seen = [cls], {cls}
        while todo:
            current = todo.pop()
            for info in self.classes.values():
                if info.name in seen or not any(b.rsplit(".", 1)[-1] == current for b in info.bases):
                    continue
                seen.add(info.name)
                todo.append(info.name)
                key = self.method_key(info.name, method)
                if key is not None:
                    found.add(key)
        return found.pop() if len(found) == 1 else None

    def canonical(self, ref: str, scope: str) -> str:
        """Follow assignments ``a = b`` / ``a = DDP(b.to(dev))`` back to the original object."""
        seen = set()
        while ref not in seen:
            seen.add(ref)
            source = self.aliases.get(scope, ref)
            if source is None:
                break
            ref = source
        return ref

    def has_role(self, ref: Optional[str], role: str, scope: str, *, by_name: bool = True) -> bool:
        """Whether ``ref`` (as seen from ``scope``) holds an object of ``role``: assignment and
        annotation evidence first, then a class defined in the file, then spelling."""
        from mllint.semantics import roles as R

        if not ref or ref == ANY:
            return False
        for candidate in (ref, self.canonical(ref, scope)):
            known = self.roles.get(scope, candidate)
            if known:
                return role in known
        cls_name = self.instance_of.get(scope, ref)
        if cls_name is not None:
            cls = self.classes.get(cls_name)
            return role == R.MODEL and cls is not None and cls.is_module
        return by_name and R.role_of_name(ref) == role

    def is_torch_optimizer(self, ref: str, scope: str) -> bool:
        """Whether ``ref`` is known to hold a ``torch.optim.Optimizer`` (so it has ``zero_grad()``):
        every binding of it seen is a known torch optimizer constructor or annotation."""
        from mllint.semantics import roles as R

        if not ref or ref == ANY:
            return False
        for candidate in dict.fromkeys((ref, self.canonical(ref, scope))):
            kinds = self.optimizer_kinds.get(scope, candidate)
            if kinds:
                return all(R.is_torch_optimizer(k) or self._local_torch_optimizer(k) for k in kinds)
        return False

    def lacks_zero_grad(self, ref: str, scope: str) -> bool:
        """Whether ``ref`` is known to hold an optimizer without ``zero_grad()`` (``DistributedOptimizer``)."""
        from mllint.semantics import roles as R

        if not ref or ref == ANY:
            return False
        for candidate in dict.fromkeys((ref, self.canonical(ref, scope))):
            kinds = self.optimizer_kinds.get(scope, candidate)
            if kinds:
                return any(R.lacks_zero_grad(k) for k in kinds)
        return False

    def _local_torch_optimizer(self, name: str, seen: Optional[Set[str]] = None) -> bool:
        """A class defined in the file that subclasses a torch optimizer."""
        from mllint.semantics import roles as R

        seen = seen if seen is not None else set()
        cls = self.classes.get(name)
        if cls is None or name in seen:
            return False
        seen.add(name)
        return any(R.is_torch_optimizer(b) or self._local_torch_optimizer(b, seen) for b in cls.bases)

    def optimizer_owners(self, ref: str, scope: str) -> Optional[FrozenSet[str]]:
        """Models whose ``.parameters()`` the optimizer ``ref`` was built from (None: unknown)."""
        found = self.optimizer_params.get(scope, ref) or self.optimizer_params.get(scope, self.canonical(ref, scope))
        return found if found is not None else self._held_optimizer_owners(ref, scope)

    def _class_of(self, ref: str, scope: str, depth: int) -> Optional[str]:
        """The class of this file ``ref`` is an instance of, also through attributes that
        ``__init__`` of a class of this file sets (``gan.discriminator`` for ``gan = GAN()`` and
        ``self.discriminator = Discriminator()`` in ``GAN.__init__``)."""
        cls = self.instance_of.get(scope, ref) or self.instance_of.get(scope, self.canonical(ref, scope))
        if cls is None and depth < 3 and "." in ref and "[" not in ref:
            owner, _, attr = ref.rpartition(".")
            outer = self._class_of(owner, scope, depth + 1)
            init = self.method_key(outer, "__init__") if outer is not None else None
            if init is not None:
                cls = self.instance_of.get(init, f"self.{attr}")
        return cls if cls in self.classes else None

    def _held_optimizer_owners(self, ref: str, scope: str) -> Optional[FrozenSet[str]]:
        """An optimizer an object of a class of this file holds as an attribute (``self.optimizer
        = Adam(self.parameters())`` in ``Discriminator.__init__``), reached through that object
        (``self.discriminator.optimizer`` for ``self.discriminator = Discriminator(...)``): the
        models it holds, in the terms of ``scope`` (``self.discriminator``). None when the class
        builds it over anything but its own parameters or attributes."""
        head, _, attr = ref.rpartition(".")
        if not head or not attr.isidentifier() or "[" in head:
            return None
        cls = self._class_of(head, scope, 0)
        if cls is None:
            return None
        method = self.method_key(cls, "__init__")
        owners = self.optimizer_params.get(method, f"self.{attr}") if method is not None else None
        if not owners:
            return None
        out = set()
        for owner in owners:
            if owner != "self" and not owner.startswith("self."):
                return None  # a parameter or a global of the class's code: not known from here
            out.add(head + owner[len("self"):])
        return frozenset(out)

    def class_scope_of(self, scope: str) -> Optional[str]:
        """The scope key of the class whose method ``scope`` is (or is nested in)."""
        parts = scope.split(".") if scope != MODULE_SCOPE else []
        for end in range(len(parts) - 1, 0, -1):
            if parts[end - 1] in self.classes:
                return ".".join(parts[:end])
        return None

    # --- effects seen from a loop ----------------------------------------------------------
    def effects_in(self, scope: str) -> List[Effect]:
        return self._by_scope.get(scope, [])

    def index_effects(self) -> None:
        self._by_scope: Dict[str, List[Effect]] = {}
        for effect in self.effects:
            self._by_scope.setdefault(effect.ctx.scope, []).append(effect)

    def loop_effects(self, loop: Loop) -> List[LoopEffect]:
        """Everything one iteration of ``loop`` does, calls to local functions included
        (through their summaries, with the callee's parameters renamed to the arguments)."""
        out: List[LoopEffect] = []
        for effect in self.effects_in(loop.scope):
            if not loop.encloses(effect.ctx.loop):
                continue
            depth = effect.ctx.loop.depth - loop.depth
            conditional = effect.ctx.conditional if depth == 0 else True
            conds = conds_within(effect.ctx.conds, loop)
            if effect.kind != CALL:
                out.append(LoopEffect(effect.kind, effect.ref, effect.node, depth, conditional, effect.order, (), effect, conds))
                continue
            summary = self.summaries.get(effect.callee or "")
            if summary is None:
                continue
            mapping = effect.args or {}
            via = (effect,)
            for node in summary.backward_sites:
                out.append(LoopEffect(BACKWARD, ANY, node, depth, True, effect.order, via, None, conds))
            for kind, sites in ((CLEAR, summary.clears), (FRESH, summary.fresh)):
                for clear in sites:
                    ref = translate(clear.ref, mapping)
                    out.append(LoopEffect(kind, ref, effect.node, depth, True, effect.order, via, None, conds + clear.conds))
            for step in summary.top_steps:
                ref = translate(step.ref, mapping)
                cond = conditional or bool(step.conds)
                out.append(
                    LoopEffect(STEP, ref, step.node, depth, cond, effect.order, via, None, conds + step.conds, step.feeder, step.covered)
                )
        return out

    def clears(self, target: str, optimizer: str, scope: str) -> bool:
        """Whether clearing ``target`` (``target.zero_grad()``, ``x.grad = None``; ANY for an
        anonymous clearing) clears the gradients ``optimizer`` holds, as seen from ``scope``."""
        from mllint.semantics import roles as R

        if target == ANY or optimizer == ANY:
            return True
        if target.endswith(EACH_GRAD):
            # Every tensor of a collection (``for t in tensors: t.grad.zero_()``): clears this
            # optimizer if it was given that collection, or the collection belongs to a model it
            # holds; when we cannot tell which tensors it holds, a loop over tensors clearing
            # each one's gradient in a training loop is taken to be over them.
            collection = target[: -len(EACH_GRAD)]
            owners = self.optimizer_owners(optimizer, scope)
            if owners:
                return any(_related(collection, owner) or _related(collection, self.canonical(owner, scope)) for owner in owners)
            return not any(self.has_role(collection, role, scope) for role in (R.LOADER, R.OPTIMIZER))
        if target.endswith(".grad"):
            # One tensor's gradient (``delta.grad.zero_()``): clears this optimizer only if it
            # holds that tensor, or the tensor is a parameter of a model it holds.
            tensor = target[: -len(".grad")]
            owners = self.optimizer_owners(optimizer, scope)
            if owners:
                return any(_related(tensor, owner) for owner in owners)
            return self.has_role(tensor.split(".")[0], R.MODEL, scope)
        canonical_target = self.canonical(target, scope)
        if target == optimizer or canonical_target == self.canonical(optimizer, scope):
            return True
        if self.has_role(target, R.OPTIMIZER, scope) and not self.has_role(target, R.MODEL, scope, by_name=False):
            return False  # another optimizer's zero_grad()
        owners = self.optimizer_owners(optimizer, scope)
        if not owners:
            return True  # we do not know which parameters it holds: any model's zero_grad() may clear them
        for owner in owners:
            if _related(target, owner) or _related(canonical_target, self.canonical(owner, scope)):
                return True
        # Only a model known to be a different one is evidence of a missing clear.
        return not self.has_role(target, R.MODEL, scope)

    def _assignment_index(self):
        """(assignments by scope, assignments by a single target, assignments by each name they
        bind), rebuilt if assignments grew."""
        index = self._assignments_index
        if index is None or index[0] != len(self.assignments):
            by_scope: Dict[str, list] = {}
            by_target: Dict[str, list] = {}
            by_name: Dict[str, list] = {}
            for item in self.assignments:
                by_scope.setdefault(item[2].scope, []).append(item)
                if isinstance(item[0], tuple) and len(item[0]) == 1:
                    by_target.setdefault(item[0][0], []).append(item)
                for name in dict.fromkeys(item[0]):
                    by_name.setdefault(name, []).append(item)
            index = self._assignments_index = (len(self.assignments), by_scope, by_target, by_name)
        return index

    def assignments_in(self, scope: str) -> list:
        """The (targets, value, ctx) assignments made directly in ``scope``, in order."""
        return self._assignment_index()[1].get(scope, [])

    def assignments_to(self, ref: str) -> list:
        """The (targets, value, ctx) assignments whose targets are exactly ``(ref,)``, in order."""
        return self._assignment_index()[2].get(ref, [])

    def assignments_naming(self, ref: str) -> list:
        """The (targets, value, ctx) assignments that bind ``ref`` (alone or among other targets:
        ``x, y = ...``), in order."""
        return self._assignment_index()[3].get(ref, [])

    def assigns_locally(self, scope: str, name: str) -> bool:
        """Whether ``name`` is assigned (so local) in exactly ``scope``."""
        return any(name in targets for targets, _value, ctx in self.assignments_in(scope)) or any(
            loop.scope == scope and name in loop.targets for loop in self.loops
        )

    def fixed_period(self, ref: str) -> bool:
        """Whether ``ref`` (the modulus of ``i % ref``) only ever holds an integer literal of at
        least 2: every binding of it in the file is ``ref = <int >= 2>``, it is no function's
        parameter nor a loop variable, and nothing updates it in place (``ref += 1``)."""
        found = False
        for targets, value, _ctx in self.assignments:
            if ref not in targets:
                continue
            if len(targets) != 1 or not isinstance(value, cst.Integer) or int(value.value, 0) < 2:
                return False
            found = True
        if not found or any(ref in loop.targets for loop in self.loops):
            return False
        head = ref.split(".", 1)[0]
        for fn in self.functions.values():
            params = fn.node.params
            every = [*params.posonly_params, *params.params, *params.kwonly_params]
            every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
            if "." not in ref and any(p.name.value == head for p in every):
                return False
        return re.search(rf"(?<![\w.]){re.escape(ref)}\s*(?:[-+*/%|&^@]|//|\*\*|<<|>>)=", self.source) is None

    # --- fixes -----------------------------------------------------------------------------
    # A fix costs nothing until it is asked for: when ``options.fixes`` is off (a text report,
    # no --fix/--diff) a rule's fix is a *deferred* one, its applicability and description
    # without edits; the edits are built when a run needs them, as local edits of the
    # statement that changes (see edits.py).
    @property
    def index(self) -> NodeIndex:
        """The file's nodes, walked once (on first use) for every module that asks where
        nodes are: parents, the nodes of a type under a node, in source order (see
        tree.NodeIndex). The semantic modules ask it instead of walking the tree again."""
        if self._parents is None:
            self._parents = NodeIndex(self.module)
        return self._parents

    def memo(self, key: object, compute):
        """``compute(self)``, computed once per file for ``key``: for a whole-file fact that a
        rule's helper would otherwise derive again for every candidate (a file of a thousand
        training functions asked a thousand times which of its functions run a backward pass)."""
        if key not in self._memo:
            self._memo[key] = compute(self)
        return self._memo[key]

    @property
    def parents(self) -> NodeIndex:
        """Each node's parent: the `index`, which is a tree.Parents."""
        return self.index

    @property
    def lines(self) -> List[str]:
        """The source's lines with their endings (findings.split_lines), split once."""
        if self._lines is None:
            self._lines = split_lines(self.source)
        return self._lines

    def deferred_fix(self, applicability: Applicability, description: str, build) -> Optional[Fix]:
        """``build()`` (a Fix or None) when fixes are wanted, else a deferred fix that says
        a fix of this kind exists. Checks a rule can make cheaply (is the name bound there?)
        belong before this call, so that a deferred fix is one that will be built."""
        if not self.options.fixes:
            return Fix(applicability, (), description, deferred=True)
        try:
            return build()
        except Exception:  # a rule built an invalid tree: no fix rather than a crash
            return None

    def fix_replacing(self, old: cst.CSTNode, new: cst.CSTNode, applicability: Applicability, description: str) -> Optional[Fix]:
        """A fix built as a LibCST change, ``old`` replaced by ``new``, expressed as line
        edits against the original text (of the statement holding ``old``)."""
        return self.deferred_fix(applicability, description, lambda: self._replacing(old, new, applicability, description))

    def _replacing(self, old, new, applicability: Applicability, description: str) -> Optional[Fix]:
        from mllint.semantics.edits import local_edits

        edits = local_edits(self.module, self.lines, self.parents, self._start_line, old, new)
        if edits is None:  # the module itself, or a statement we could not place: the whole file
            return self._from_module(self.replaced(old, new), applicability, description)
        return Fix(applicability, tuple(edits), description) if edits else None

    def _start_line(self, node: cst.CSTNode) -> int:
        return self.position(node).start.line

    def replaced(self, old: cst.CSTNode, new: cst.CSTNode) -> cst.Module:
        """This file's module with ``old`` replaced by ``new`` (sharing every node not above
        ``old``: see tree.replace)."""
        if old is self.module:
            assert isinstance(new, cst.Module)
            return new
        from mllint.semantics.tree import replace

        fixed = replace(self.parents, old, new)
        assert isinstance(fixed, cst.Module)
        return fixed

    def fix_from_module(self, fixed: cst.Module, applicability: Applicability, description: str) -> Optional[Fix]:
        """A fix that turns this file into ``fixed`` (a changed copy of ``self.module``),
        as line edits against the original text; None when nothing changes."""
        return self.deferred_fix(applicability, description, lambda: self._from_module(fixed, applicability, description))

    def _from_module(self, fixed: cst.Module, applicability: Applicability, description: str) -> Optional[Fix]:
        edits = self._statement_edits(fixed)
        if edits is None:
            edits = line_edits(self.source, fixed.code)
        if not edits:
            return None
        return Fix(applicability, tuple(edits), description)

    def _statement_edits(self, fixed: cst.Module) -> Optional[List[Edit]]:
        """The edits turning this file into ``fixed`` when ``fixed`` has the same header,
        footer and number of top-level statements and shares the unchanged ones (a module
        built by `replaced`): each changed statement is rendered and diffed on its own.
        None when the modules differ in another way (then the whole text is diffed)."""
        from mllint.semantics.edits import local_edits

        old_body, new_body = self.module.body, fixed.body
        if len(old_body) != len(new_body) or fixed.header is not self.module.header and list(fixed.header) != list(
            self.module.header
        ) or fixed.footer is not self.module.footer and list(fixed.footer) != list(self.module.footer):
            return None
        if (fixed.default_indent, fixed.default_newline, fixed.has_trailing_newline, fixed.encoding) != (
            self.module.default_indent, self.module.default_newline, self.module.has_trailing_newline, self.module.encoding
        ):
            return None
        edits: List[Edit] = []
        for old, new in zip(old_body, new_body):
            if old is new:
                continue
            found = local_edits(self.module, self.lines, self.parents, self._start_line, old, new)
            if found is None:
                return None
            edits.extend(found)
        return edits

    def finding(self, node: cst.CSTNode, code: str, name: str, message: str, fix: Optional[Fix] = None,
                detail: Optional[str] = None, basis: Optional[str] = None) -> Finding:
        pos = self.position(node)
        return Finding(
            path=self.path,
            line=pos.start.line,
            column=pos.start.column + 1,
            end_line=pos.end.line,
            end_column=pos.end.column + 1,
            code=code,
            name=name,
            message=message,
            severity=Severity.ERROR,
            fix=fix,
            detail=detail,
            basis=basis,
        )

    def code_of(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


class ScopedTable:
    """Facts keyed by (scope, reference), looked up the way Python resolves names.

    A fact recorded in a function is visible there and in functions nested in it; a
    module-level fact is visible everywhere unless the name is a parameter or local of a
    scope in between (then that scope's own facts, or none, apply). Facts about
    ``self.x`` live on the class, so ``__init__`` informs every method."""

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self.data: Dict[Tuple[str, str], object] = {}

    def home(self, scope: str, ref: str) -> str:
        head = ref.split(".", 1)[0].split("[", 1)[0]
        if head in ("self", "cls") and "." in ref:
            return self.model.class_scope_of(scope) or scope
        return scope

    def put(self, scope: str, ref: str, value) -> None:
        self.data[(self.home(scope, ref), ref)] = value

    def setdefault(self, scope: str, ref: str, value):
        return self.data.setdefault((self.home(scope, ref), ref), value)

    def get(self, scope: str, ref: str, default=None):
        head = ref.split(".", 1)[0].split("[", 1)[0]
        home = self.home(scope, ref)
        current = home
        while True:
            found = self.data.get((current, ref))
            if found is not None:
                return found
            if current == MODULE_SCOPE:
                return default
            if head in self.model.locals.get(current, ()) and not (head in ("self", "cls") and current != home):
                return default  # shadowed: a parameter or local of this scope
            current = current.rsplit(".", 1)[0] if "." in current else MODULE_SCOPE

    def __contains__(self, key) -> bool:
        return key in self.data


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def conds_within(conds: Tuple[Cond, ...], loop: Optional[Loop]) -> Tuple[Cond, ...]:
    """The conditions directly in ``loop``'s body (or, for None, outside every loop): those
    outside it hold for the whole loop, and those inside nested loops are about the nested
    loop's elements (``for p in params: if p.grad is not None: ...``)."""
    return tuple(c for c in conds if c.loop is loop)


_COUNTER_WORDS = re.compile(r"step|iter|accum|count|idx|index|sync|boundary|last|batch|epoch", re.IGNORECASE)


def counts_iterations(cond: Cond, loop_targets: Tuple[str, ...] = ()) -> bool:
    """Whether a condition counts iterations (``(i + 1) % k == 0``, ``sync_gradients``)
    rather than testing values (``torch.isfinite(norm)``, ``phase == "train"``)."""
    if cond.node is None:
        return False
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Modulo(self, node: cst.Modulo) -> None:
            found.append(True)

        def visit_Name(self, node: cst.Name) -> None:
            if node.value in loop_targets or _COUNTER_WORDS.search(node.value):
                found.append(True)

    tree_visit(cond.node, Finder())
    return bool(found)


def moduli(cond: Cond) -> FrozenSet[str]:
    """The right-hand sides of ``%`` in a condition (``accum_steps`` in ``(i + 1) % accum_steps == 0``)."""
    found = set()
    module = cst.Module(body=[])

    class Finder(cst.CSTVisitor):
        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
            if isinstance(node.operator, cst.Modulo):
                found.add(module.code_for_node(node.right).strip())

    if cond.node is not None:
        tree_visit(cond.node, Finder())
    return frozenset(found)


def _mentions(text: str, ref: str) -> bool:
    """Whether a condition's text tests the object ``ref`` itself (``optimizer is not None``,
    ``self.optimizer``, ``model.training``), not a sibling that merely shares its spelling
    (``self.model_ema`` for ``self.model``; ``self.scheduler`` for ``self``: an attribute of
    ``self`` is another object, except its own mode, ``self.training``)."""
    tail = r"(?!\w)(?!\.(?!training\b))" if ref in ("self", "cls") else r"(?!\w)"
    return re.search(rf"(?<![\w.]){re.escape(ref)}{tail}", text) is not None


def _modulo_test(cond: Cond) -> Optional[Tuple[str, Optional[bool]]]:
    """(modulus, whether the condition holds when the modulus is 1) for a branch of a
    test ``<expr> % <m> == <k>`` / ``!= <k>`` (also ``not (...)``) with ``<m>`` a name,
    an attribute or the literal 1: ``x % 1`` is always 0. None for any other condition."""
    node = cond.node
    negate = cond.branch == "else"
    while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        node, negate = node.expression, not negate
    if cond.branch not in ("if", "else") or not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return None
    target = node.comparisons[0]
    if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
        return None
    sides = [node.left, target.comparator]
    modulo = next((x for x in sides if isinstance(x, cst.BinaryOperation) and isinstance(x.operator, cst.Modulo)), None)
    literal = next((x for x in sides if isinstance(x, cst.Integer)), None)
    if modulo is None or literal is None:
        return None
    right = modulo.right
    if isinstance(right, cst.Integer):
        if int(right.value, 0) != 1:
            return None
    elif not isinstance(right, (cst.Name, cst.Attribute)):
        return None
    holds = int(literal.value, 0) == 0
    if isinstance(target.operator, cst.NotEqual):
        holds = not holds
    if negate:
        holds = not holds
    return cst.Module(body=[]).code_for_node(right).strip(), holds


def never_with_period_one(
    clear_cond: Cond, step_conds: Tuple[Cond, ...], fixed: Optional[Callable[[str], bool]] = None
) -> Optional[str]:
    """The modulus ``m`` when ``clear_cond`` tests ``<expr> % m == k`` with ``k`` not 0 (it never
    holds when ``m`` is 1) while a step condition on the same ``m`` does hold then
    (``% m == 0``): with ``m == 1`` the step runs on every iteration and the clearing never.
    ``fixed(m)`` says ``m`` is known never to be 1 (``FileModel.fixed_period``)."""
    mine = _modulo_test(clear_cond)
    if mine is None or mine[1] is not False or (fixed is not None and mine[0] != "1" and fixed(mine[0])):
        return None
    for cond in step_conds:
        theirs = _modulo_test(cond)
        if theirs is not None and theirs[0] == mine[0] and theirs[1]:
            return mine[0]
    return None


def covers(
    clear_conds: Tuple[Cond, ...],
    clear_ref: str,
    step_conds: Tuple[Cond, ...],
    loop_targets: Tuple[str, ...] = (),
    invariant: Optional[Callable[[Cond], bool]] = None,
    fixed: Optional[Callable[[str], bool]] = None,
) -> bool:
    """Whether a clearing under ``clear_conds`` runs whenever a step under ``step_conds`` does.

    Each of the clearing's conditions must hold whenever the step runs: the step is under
    the same condition (same test text and branch); or the condition tests the cleared
    object itself (``if optimizer is not None``); or both count iterations with the same
    period (``if i % k == 0: zero_grad()`` with ``if (i + 1) % k == 0: step()``), unless
    the clearing's residue can never be reached when the period is 1 while the step's is
    (``i % k == 1`` against ``i % k == 0``). ``invariant(cond)``, when given, says a
    condition is the same on every iteration (a flag the loop never changes): such a
    condition counts nothing, whatever its names; ``fixed(m)`` says a modulus is known
    never to be 1."""
    step_counters = [c for c in step_conds if counts_iterations(c, loop_targets)]
    for cond in clear_conds:
        if cond in step_conds:
            continue
        if cond.branch == "if" and any(c.branch == "if" and cond.text in c.text.split(" and ") for c in step_conds):
            continue  # the step runs under `a and b`, the clearing under `a`
        if clear_ref != ANY and _mentions(cond.text, clear_ref.split(".grad")[0]):
            continue
        if cond.branch != "except" and counts_iterations(cond, loop_targets) and step_counters:
            if invariant is not None and invariant(cond):
                return False  # ``if args.step_scheduler:``: a flag, not a count
            if never_with_period_one(cond, step_conds, fixed) is not None:
                return False
            mine = moduli(cond)
            if not mine or any(not moduli(c) or moduli(c) & mine for c in step_counters):
                continue
        return False
    return True


def translate(ref: Optional[str], mapping: Dict[str, str]) -> str:
    """Rename the head of ``ref`` from a callee's parameter to the caller's argument."""
    if not ref:
        return ANY
    if not mapping or ref == ANY:
        return ref
    head, sep, rest = ref.partition(".")
    if head in mapping:
        base = mapping[head]
        if base == ANY:
            return ANY
        return f"{base}.{rest}" if sep else base
    return ref


def _positions(module: cst.Module):
    """Every node's position: one rendering of the module by PositionProvider's codegen,
    without MetadataWrapper (whose resolve also walks the whole tree with a visitor)."""
    from mllint.semantics.edits import rendered_positions

    try:
        return rendered_positions(module, module)
    except (ImportError, AttributeError, TypeError):  # a LibCST whose internals differ
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def line_edits(old: str, new: str) -> List[Edit]:
    """Minimal whole-line edits turning ``old`` into ``new``."""
    a = split_lines(old)
    b = split_lines(new)
    edits = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        content = "".join(b[j1:j2])
        edits.append(Edit(line=i1 + 1, column=1, end_line=i2 + 1, end_column=1, content=content))
    return edits


def iter_loops_outermost_first(loops: List[Loop]) -> Iterator[Loop]:
    return iter(sorted(loops, key=lambda l: (l.depth, l.order)))
