"""The ML model of one file: what the rules query.

Built once per file by ``builder.build_model``. Everything a rule needs about flow is
here: scopes (functions and methods), loops and what they iterate, every call with
its context (enclosing loops, grad mode, the statement and block it sits in),
effects (backward, optimizer step, gradient clearing, forward, mode switch), roles
of names, and per-function summaries computed to a fixpoint.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from mllint.findings import Applicability, Edit, Finding, Fix, Severity, split_lines
from mllint.semantics.names import ImportTable

MODULE_SCOPE = "<module>"
ANY = "*"  # a reference that may be anything (unknown argument, loop variable over many)

# Effect kinds
BACKWARD = "backward"
STEP = "step"
CLEAR = "clear"
FORWARD = "forward"
EVAL = "eval"
TRAIN = "train"
CALL = "call"  # call of a function defined in this file


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
class Summary:
    """What calling a function does, in terms of its own parameter names
    (computed to a fixpoint over the file's call graph, see summaries.py)."""

    backward_sites: FrozenSet[cst.CSTNode] = frozenset()  # backward() calls it runs
    clears: FrozenSet[str] = frozenset()  # what it clears gradients of (ANY: any)
    top_steps: FrozenSet[Tuple[str, cst.CSTNode, bool]] = frozenset()  # (optimizer, site, conditional) not in a loop of its own
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
    via: Tuple[Effect, ...] = ()
    origin: Optional[Effect] = None  # the effect itself when it sits in the loop's own scope


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
        self.assignments: List[Tuple[Tuple[str, ...], cst.BaseExpression, Context]] = []
        self.roles: Dict[str, Set[str]] = {}  # ref -> roles from assignment/annotation/usage
        self.instance_of: Dict[str, str] = {}  # ref -> class defined in the file
        self.optimizer_params: Dict[str, Optional[FrozenSet[str]]] = {}  # optimizer ref -> model refs
        self.aliases: Dict[str, str] = {}  # ref -> canonical ref (model = net; net.to(dev))
        self.iteration_vars: Set[str] = set()  # names bound by loops/comprehensions
        self.summaries: Dict[str, Summary] = {}
        self._wrapper: Optional[MetadataWrapper] = None
        self._positions = None

    # --- positions (resolved lazily: most files report nothing) ----------------------
    def position(self, node: cst.CSTNode):
        if self._positions is None:
            self._wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._positions = self._wrapper.resolve(PositionProvider)
        return self._positions[node]

    # --- roles --------------------------------------------------------------------------
    def canonical(self, ref: str) -> str:
        seen = set()
        while ref in self.aliases and ref not in seen:
            seen.add(ref)
            ref = self.aliases[ref]
        return ref

    def has_role(self, ref: Optional[str], role: str, *, by_name: bool = True) -> bool:
        """Whether ``ref`` holds an object of ``role``: assignment evidence first, then spelling."""
        from mllint.semantics import roles as R

        if not ref or ref == ANY:
            return False
        for candidate in (ref, self.canonical(ref)):
            known = self.roles.get(candidate)
            if known:
                return role in known
        if ref in self.instance_of:
            cls = self.classes.get(self.instance_of[ref])
            return role == R.MODEL and cls is not None and cls.is_module
        return by_name and R.role_of_name(ref) == role

    def known_roles(self, ref: str) -> Set[str]:
        return self.roles.get(ref) or self.roles.get(self.canonical(ref)) or set()

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
            if effect.kind != CALL:
                out.append(LoopEffect(effect.kind, effect.ref, effect.node, depth, conditional, (), effect))
                continue
            summary = self.summaries.get(effect.callee or "")
            if summary is None:
                continue
            mapping = effect.args or {}
            via = (effect,)
            for node in summary.backward_sites:
                out.append(LoopEffect(BACKWARD, ANY, node, depth, True, via))
            for ref in summary.clears:
                out.append(LoopEffect(CLEAR, translate(ref, mapping), effect.node, depth, True, via))
            for ref, node, cond in summary.top_steps:
                out.append(LoopEffect(STEP, translate(ref, mapping), node, depth, conditional or cond, via))
        return out

    def assigns_locally(self, scope: str, name: str) -> bool:
        """Whether ``name`` is assigned (so local) in exactly ``scope``."""
        return any(ctx.scope == scope and name in targets for targets, _value, ctx in self.assignments) or any(
            loop.scope == scope and name in loop.targets for loop in self.loops
        )

    # --- fixes -----------------------------------------------------------------------------
    def fix_replacing(self, old: cst.CSTNode, new: cst.CSTNode, applicability: Applicability, description: str) -> Optional[Fix]:
        """A fix built as a LibCST change: the module with ``old`` replaced by ``new``,
        expressed as line edits against the original text."""
        try:
            fixed = self.module.deep_replace(old, new)
            assert isinstance(fixed, cst.Module)
            new_source = fixed.code
        except Exception:  # a rule built an invalid tree: no fix rather than a crash
            return None
        edits = line_edits(self.source, new_source)
        if not edits:
            return None
        return Fix(applicability, tuple(edits), description)

    def finding(self, node: cst.CSTNode, code: str, name: str, message: str, fix: Optional[Fix] = None) -> Finding:
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
        )

    def code_of(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


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
