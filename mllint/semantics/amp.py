"""Mixed precision facts: where a gradient clip sees the gradients a ``GradScaler`` scaled.

A small path-sensitive walk over each function (and the module body), in statement order,
following calls of functions defined in the file (``clip_gradients(model)``,
``self._backward(loss)``) with their parameters mapped to the caller's arguments. Along
each path it tracks whether a ``scaler.scale(loss).backward()`` ran and whether
``scaler.unscale_(...)`` ran since; a clip (``torch.nn.utils.clip_grad_norm_`` /
``clip_grad_value_``) seen in between, followed on the same path by ``scaler.step(opt)``,
is a :class:`ScaledClip`.

Conditions are remembered per path as (expression text, truth) so that ``if use_amp:
scaler.scale(loss).backward() ... if not use_amp: clip(...)`` is not a path; a clip under
a condition that says AMP is off (``if not args.amp``, ``if scaler is None``) is ignored.
``accelerator.clip_grad_norm_`` and Lightning's ``gradient_clip_val`` unscale themselves
and are not clips here (only torch's functions, and timm's ``dispatch_clip_grad``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics.model import MODULE_SCOPE, FileModel
from mllint.semantics.names import dotted, ref_of

CLIPS = {
    "torch.nn.utils.clip_grad_norm_",
    "torch.nn.utils.clip_grad_norm",
    "torch.nn.utils.clip_grad_value_",
    "torch.nn.utils.clip_grad.clip_grad_norm_",
    "torch.nn.utils.clip_grad.clip_grad_value_",
    "torch.nn.utils.clip_grads_with_norm_",
    "timm.utils.dispatch_clip_grad",
    "timm.utils.clip_grad.dispatch_clip_grad",
}
SCALERS = ("GradScaler", "ShardedGradScaler")
_AMP_WORDS = re.compile(r"amp|fp16|half|scaler|mixed|autocast|float16", re.IGNORECASE)
_NO_AMP_WORDS = re.compile(r"no_amp|disable_amp|fp32|full_precision|not_amp", re.IGNORECASE)
_MAX_STATES = 128
_MAX_DEPTH = 4


@dataclass(eq=False)
class Frame:
    """One (possibly inlined) run of a function body."""

    scope: str
    mapping: Dict[str, str]
    parent: Optional["Frame"] = None
    call: Optional[cst.Call] = None  # the call in ``parent`` that runs this frame

    def ancestors(self) -> List["Frame"]:
        out, frame = [], self
        while frame is not None:
            out.append(frame)
            frame = frame.parent
        return out


@dataclass(frozen=True)
class Clip:
    node: cst.Call
    frame: Frame
    loop: Optional[cst.CSTNode]  # the innermost loop of the frame around the clip
    statement: Optional[cst.CSTNode]
    block: Optional[cst.CSTNode]


@dataclass(frozen=True)
class State:
    scaler: Optional[str] = None  # scaler (in entry-frame terms) whose scaled backward is pending
    unscaled: bool = False
    conds: FrozenSet[Tuple[str, bool]] = frozenset()
    clips: Tuple[Clip, ...] = ()


@dataclass
class ScaledClip:
    clip: Clip
    scaler: str  # the scaler and optimizer of the step, as spelled in the step's frame
    optimizer: Optional[str]
    step: cst.Call
    step_frame: Frame
    step_loop: Optional[cst.CSTNode]
    unscaled_later: bool  # an unscale_ ran after the clip, before the step

    def report_node(self) -> cst.CSTNode:
        """The clip, or the call (in the innermost frame that also runs the step) leading to it."""
        step_chain = self.step_frame.ancestors()
        node: cst.CSTNode = self.clip.node
        for frame in self.clip.frame.ancestors():
            if frame in step_chain:
                return node
            node = frame.call
        return self.clip.node


def _cond(test: cst.BaseExpression, module: cst.Module, frame: Frame) -> Tuple[str, bool]:
    truth = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        truth, test = not truth, test.expression
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        if isinstance(comp.comparator, cst.Name) and comp.comparator.value == "None":
            if isinstance(comp.operator, cst.Is):
                truth, test = not truth, test.left
            elif isinstance(comp.operator, cst.IsNot):
                test = test.left
    text = module.code_for_node(test).strip()
    return _map_text(text, frame), truth


def _map_text(text: str, frame: Frame) -> str:
    head = re.match(r"[A-Za-z_]\w*", text)
    if head and head.group(0) in frame.mapping:
        return frame.mapping[head.group(0)] + text[head.end():]
    return text


def _map_ref(ref: Optional[str], frame: Frame) -> Optional[str]:
    return None if ref is None else _map_text(ref, frame)


def amp_off(conds: FrozenSet[Tuple[str, bool]]) -> bool:
    """Whether the conditions say mixed precision is off on this path."""
    for text, truth in conds:
        if not truth and _AMP_WORDS.search(text) and not _NO_AMP_WORDS.search(text):
            return True
        if truth and _NO_AMP_WORDS.search(text):
            return True
    return False


class AmpWalk:
    def __init__(self, model: FileModel) -> None:
        self.model = model
        self.found: List[ScaledClip] = []
        self.scaler_names: Set[str] = set()  # last components of names bound to a GradScaler
        self.scaled_vars: Set[str] = set()  # names bound to ``scaler.scale(...)``
        for targets, value, _ctx in model.assignments:
            if isinstance(value, cst.Call):
                name = model.imports.qualname(value.func) or dotted(value.func) or ""
                if name.rsplit(".", 1)[-1] in SCALERS:
                    self.scaler_names.update(t.rsplit(".", 1)[-1] for t in targets)
                if isinstance(value.func, cst.Attribute) and value.func.attr.value == "scale":
                    self.scaled_vars.update(targets)

    # --- recognising the events ---------------------------------------------------------------
    def _scaled_backward(self, call: cst.Call) -> Optional[str]:
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "backward"):
            return None
        inner = func.value
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "scale":
            return ref_of(inner.func.value)
        name = dotted(inner)
        if name in self.scaled_vars:
            return "<scaler>"
        return None

    def _is_scaler(self, ref: Optional[str], state: State) -> bool:
        if not ref:
            return False
        return ref == state.scaler or ref.rsplit(".", 1)[-1] in self.scaler_names or "scaler" in ref.rsplit(".", 1)[-1].lower()

    def _is_clip(self, call: cst.Call) -> bool:
        name = dotted(call.func)
        if name is None:
            return False
        qual = self.model.imports.qualify(name) or name
        if qual in CLIPS:
            return True
        # ``nn.utils.clip_grad_norm_`` with ``from torch import nn``; a bare star-imported name
        tail = qual.rsplit(".", 1)[-1]
        if tail in ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"):
            if "." not in name and name not in self.model.imports.aliases and name not in self.model.functions:
                return True
            return qual.startswith("torch.") and ".utils." in qual
        return False

    def _callee(self, call: cst.Call, frame: Frame) -> Optional[Tuple[str, Dict[str, str]]]:
        func = call.func
        key = None
        bound = False
        if isinstance(func, cst.Name):
            nested = f"{frame.scope}.{func.value}" if frame.scope != MODULE_SCOPE else func.value
            key = nested if nested in self.model.functions else (func.value if func.value in self.model.functions else None)
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            fn = self.model.functions.get(frame.scope)
            cls = fn.cls if fn is not None else None
            key = self.model.method_key(cls, func.attr.value) if cls else None
            bound = True
        if key is None:
            return None
        fn = self.model.functions[key]
        params = list(fn.params)
        mapping: Dict[str, str] = {}
        if bound and params:
            mapping[params[0]] = _map_text("self", frame)
            params = params[1:]
        for index, arg in enumerate(call.args):
            if arg.star:
                break
            if arg.keyword is not None:
                target = arg.keyword.value
            elif index < len(params):
                target = params[index]
            else:
                break
            ref = ref_of(arg.value)
            if ref is not None:
                mapping[target] = _map_text(ref, frame)
        return key, mapping

    # --- the walk ----------------------------------------------------------------------------------
    def run(self) -> List[ScaledClip]:
        self._walk_block(self.model.module.body, [State()], Frame(MODULE_SCOPE, {}), None, 0, set())
        called = self._called_names()
        for key, fn in self.model.functions.items():
            body = fn.node.body
            if isinstance(body, cst.IndentedBlock):
                entry = State()
                scaler = self._scaler_param(fn.node)
                if scaler is not None and key.rsplit(".", 1)[-1] not in called:
                    entry = State(scaler)
                self._walk_block(body.body, [entry], Frame(key, {}), None, 0, {key})
        return self.found

    def _called_names(self) -> Set[str]:
        """Functions called by name, and methods called on ``self``, in this file (their callers
        are walked with them inlined, so their own walk starts from nothing pending)."""
        names: Set[str] = set()
        for call, _ctx in self.model.calls:
            if isinstance(call.func, cst.Name):
                names.add(call.func.value)
            elif isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and call.func.value.value in ("self", "cls"):
                names.add(call.func.attr.value)  # a method of the file run on its own instance
        return names

    def _scaler_param(self, node: cst.FunctionDef) -> Optional[str]:
        """A parameter that receives the caller's ``GradScaler`` (annotated so, or named ``*scaler``):
        a function handed the scaler to step it runs after the caller's scaled backward pass."""
        params = node.params
        for param in list(params.params) + list(params.kwonly_params) + list(params.posonly_params):
            name = param.name.value
            annotation = self.model.module.code_for_node(param.annotation.annotation) if param.annotation else ""
            if any(word in annotation for word in SCALERS) or name.lower().endswith("scaler"):
                return name
        return None

    def _cap(self, states: List[State]) -> List[State]:
        seen, out = set(), []
        for s in states:
            if s not in seen:
                seen.add(s)
                out.append(s)
        return out[:_MAX_STATES]

    def _walk_block(self, body, states, frame, loop, depth, active) -> List[State]:
        """States after the block; ``return``/``raise``/``break``/``continue`` end their paths
        here (a loop's body paths also leave the loop unchanged: see _walk_statement)."""
        for statement in body:
            if not states:
                break
            states = self._cap(self._walk_statement(statement, states, frame, loop, depth, active, body))
        return states

    def _walk_suite(self, suite, states, frame, loop, depth, active) -> List[State]:
        """An indented block, or the one-line body of ``if x: scaler.unscale_(opt)``."""
        if isinstance(suite, cst.IndentedBlock):
            return self._walk_block(suite.body, states, frame, loop, depth, active)
        if isinstance(suite, cst.SimpleStatementSuite):
            return self._cap(self._walk_statement(suite, states, frame, loop, depth, active, None))
        return states

    def _walk_statement(self, st, states, frame, loop, depth, active, block) -> List[State]:
        if isinstance(st, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in st.body:
                if isinstance(small, (cst.Return, cst.Raise, cst.Break, cst.Continue)):
                    states = self._simple(small, st, states, frame, loop, depth, active, block)
                    if isinstance(small, (cst.Break, cst.Continue)):
                        self._exits.extend(states)
                    elif isinstance(small, cst.Return):
                        self._returns.extend(states)
                    return []
                states = self._simple(small, st, states, frame, loop, depth, active, block)
            return states
        if isinstance(st, cst.If):
            return self._walk_if(st, states, frame, loop, depth, active)
        if isinstance(st, (cst.For, cst.While)):
            saved = self._exits
            self._exits = []
            inner = self._walk_suite(st.body, states, frame, st, depth, active)
            after = states + inner + self._exits
            if isinstance(st, cst.For) and inner and all(s.unscaled for s in inner) and not self._exits:
                # ``for opt in optimizers: scaler.unscale_(opt)``: every pass unscales, and with no
                # optimizer to run the loop for there is no step either: no path skips it
                after = inner
            self._exits = saved
            if st.orelse is not None:
                after = after + self._walk_block(st.orelse.body.body, inner, frame, loop, depth, active)
            return after
        if isinstance(st, (cst.With,)):
            return self._walk_suite(st.body, states, frame, loop, depth, active)
        if isinstance(st, cst.Try):
            out = self._walk_block(st.body.body, states, frame, loop, depth, active)
            if st.orelse is not None:
                out = self._walk_block(st.orelse.body.body, out, frame, loop, depth, active)
            if st.finalbody is not None:
                out = self._walk_block(st.finalbody.body.body, out, frame, loop, depth, active)
            return out
        if isinstance(st, cst.Match):
            out = []
            for case in st.cases:
                out += self._walk_block(case.body.body, states, frame, loop, depth, active)
            return out + states
        return states  # def, class: analysed on their own

    _exits: List[State] = []
    _returns: List[State] = []

    def _walk_if(self, st, states, frame, loop, depth, active) -> List[State]:
        text, truth = _cond(st.test, self.model.module, frame)
        out: List[State] = []
        for branch_truth, body in ((truth, st.body), (not truth, st.orelse)):
            allowed = [s for s in states if (text, not branch_truth) not in s.conds]
            allowed = [State(s.scaler, s.unscaled, s.conds | {(text, branch_truth)}, s.clips) for s in allowed]
            if body is None:
                out += allowed
            elif isinstance(body, cst.If):
                out += self._walk_if(body, allowed, frame, loop, depth, active)
            elif isinstance(body, cst.Else):
                out += self._walk_suite(body.body, allowed, frame, loop, depth, active)
            else:
                out += self._walk_suite(body, allowed, frame, loop, depth, active)
        return out

    def _simple(self, small, line, states, frame, loop, depth, active, block) -> List[State]:
        # the calls of the statement, outer first, not inside lambdas or nested definitions
        for call in self.model.index.nodes(cst.Call, small, nested=False):
            states = self._call(call, line, states, frame, loop, depth, active, block)
        return states

    def _call(self, call, line, states, frame, loop, depth, active, block) -> List[State]:
        scaler = self._scaled_backward(call)
        if scaler is not None:
            mapped = _map_ref(scaler, frame)
            return [State(mapped, False, s.conds, s.clips) for s in states]
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "unscale_":
            return [State(s.scaler, True, s.conds, s.clips) for s in states]
        if isinstance(func, cst.Attribute) and func.attr.value == "step" and call.args:
            receiver = _map_ref(ref_of(func.value), frame)
            out = []
            for s in states:
                if s.scaler is not None and self._is_scaler(receiver, s):
                    for clip in s.clips:
                        self.found.append(ScaledClip(clip, ref_of(func.value) or "scaler", ref_of(call.args[0].value),
                                                     call, frame, loop, s.unscaled))
                    out.append(State(None, False, s.conds, ()))
                else:
                    out.append(s)
            return out
        if self._is_clip(call):
            clip = Clip(call, frame, loop, line, block)
            return [
                State(s.scaler, s.unscaled, s.conds, s.clips + (clip,))
                if s.scaler is not None and not s.unscaled and not amp_off(s.conds) else s
                for s in states
            ]
        if depth < _MAX_DEPTH:
            target = self._callee(call, frame)
            if target is not None and target[0] not in active:
                key, mapping = target
                fn = self.model.functions[key]
                if isinstance(fn.node.body, cst.IndentedBlock):
                    sub = Frame(key, mapping, frame, call)
                    saved_r, saved_e = self._returns, self._exits
                    self._returns, self._exits = [], []
                    end = self._walk_block(fn.node.body.body, states, sub, None, depth + 1, active | {key})
                    end = end + self._returns
                    self._returns, self._exits = saved_r, saved_e
                    # conditions of the helper's own branches do not constrain the caller
                    return self._cap([State(s.scaler, s.unscaled, self._outer_conds(s, states), s.clips) for s in end])
        return states

    @staticmethod
    def _outer_conds(s: State, before: List[State]) -> FrozenSet[Tuple[str, bool]]:
        common = None
        for b in before:
            if b.conds <= s.conds:
                common = b.conds if common is None or len(b.conds) > len(common) else common
        return common if common is not None else s.conds


def scaled_clips(model: FileModel) -> List[ScaledClip]:
    """Every clip that sees scaled gradients before the scaler's step (see module docstring)."""
    walk = AmpWalk(model)
    walk._exits, walk._returns = [], []
    return walk.run()
