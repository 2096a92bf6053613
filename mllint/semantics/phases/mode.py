"""What mode is this model in? ``.eval()``/``.train()`` switches in order (helpers, context managers,
callers, loops), how a model was made, models held by other objects, and ``.eval()`` inside a
training loop that nothing undoes."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from mllint.frameworks import OTHER_MODULES
from mllint.semantics import roles as R
from mllint.semantics.model import (
    ANY,
    CALL,
    EVAL,
    FORWARD,
    MODE_UNKNOWN,
    MODULE_SCOPE,
    TRAIN,
    Context,
    Effect,
    FileModel,
    Loop,
    translate,
)
from mllint.semantics.names import dotted, ref_of
from mllint.semantics.phases.flow import _reads
from mllint.semantics.phases.words import (
    _CM_DECORATORS,
    _EVAL_INITIAL,
    _HARMLESS_CM,
    _LOADER_WORDS,
    _MAYBE_INITIAL,
    _MODE_CALL_WORDS,
    _MODE_HINT,
    _NO_VALUE,
    _TEACHER_WORDS,
    _constant,
    _head,
    _part_for,
    _truth,
    _words,
    name_tokens,
    related,
)


@dataclass
class ModeEvent:
    """A mode switch seen from one scope: directly there, or through a helper it calls."""

    order: float
    kind: str  # "eval", "train" or "maybe"
    ref: str  # the model, in this scope's terms
    node: cst.CSTNode  # the .eval()/.train() call itself (possibly in a helper)
    ctx: Context  # where it happens in this scope (of the call that brings it, for a helper's)
    via: Tuple[Effect, ...] = ()
    cond: bool = False  # may not happen (conditional inside a helper, or one branch of an expression)
    withs: Tuple[cst.With, ...] = ()  # with-blocks around the switch itself (inside the helper too)


@dataclass
class FlagEvaluation:
    """A call that runs a shared training/evaluation function with its training flag off
    (``run_epoch(model, val_loader, is_train=False)``), and a forward there that then runs
    in training mode."""

    site: Effect  # the call with the flag off
    forward: Effect  # the forward in the shared function
    function: str  # the shared function
    flag: str  # its training flag
    ref: str  # the model, in the caller's terms
    in_function: bool  # the shared function itself puts the model in training mode (else the caller left it there)


@dataclass
class NotUndone:
    """An ``.eval()`` in a training loop that nothing switches back before the next training step."""

    event: ModeEvent
    loop: Loop
    ref: str  # the model, in the loop's scope




class ModeFacts:
    """The modes a model may be in at a point, and evals never undone."""

    m: FileModel

    def overrides_mode(self, ref: str, scope: str) -> bool:
        """Whether ``ref`` is an instance of a class in this file that defines train()/eval()
        with a meaning of its own (or ``self`` inside such a class)."""
        names = []
        head = _head(ref)
        if head in ("self", "cls") and "." not in ref:
            cls = self.m.class_scope_of(scope)
            if cls:
                names.append(cls.rsplit(".", 1)[-1])
        found = self.m.instance_of.get(scope, ref) or self.m.instance_of.get(scope, self.m.canonical(ref, scope))
        if found:
            names.append(found)
        for name in names:
            seen: Set[str] = set()
            while name and name not in seen:
                seen.add(name)
                info = self.m.classes.get(name)
                if info is None:
                    break
                if info.methods & {"train", "eval"}:
                    return True
                name = next((b.rsplit(".", 1)[-1] for b in info.bases if b.rsplit(".", 1)[-1] in self.m.classes), "")
        return False

    # --- modes -----------------------------------------------------------------------------------------
    def _assignment_targets(self) -> Dict[cst.CSTNode, Tuple[str, ...]]:
        """For each call that is (the receiver chain of) an assigned value: the targets."""
        if self._assign_of_call is None:
            table: Dict[cst.CSTNode, Tuple[str, ...]] = {}
            for targets, value, _ctx in self.m.assignments:
                expr = value
                for _ in range(10):
                    if not isinstance(expr, cst.Call):
                        break
                    table[expr] = targets
                    if isinstance(expr.func, cst.Attribute):
                        expr = expr.func.value
                    else:
                        break
            self._assign_of_call = table
        return self._assign_of_call

    def _mode_ref(self, effect: Effect) -> str:
        """The model an EVAL/TRAIN effect switches: the assigned name for
        ``model = Net().eval()``, the receiver chain's model for ``model.to(dev).eval()``."""
        if effect.ref != ANY:
            return effect.ref
        targets = self._assignment_targets().get(effect.node)
        if targets and len(targets) == 1:
            return targets[0]
        node = effect.node
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            found = self._receiver(node.func.value)
            if found:
                return found
        return ANY

    def _with_end(self, with_node: cst.With, scope: str) -> float:
        if with_node not in self._with_ends:
            last = 0
            for effect in self.m.effects_in(scope):
                if with_node in effect.ctx.withs:
                    last = max(last, effect.order)
            for call, ctx in self.calls_in(scope):
                if with_node in ctx.withs:
                    last = max(last, self.m.call_order.get(call, 0))
            self._with_ends[with_node] = last + 0.5
        return self._with_ends[with_node]

    def _is_with_item(self, call: cst.CSTNode, ctx: Context) -> Optional[cst.With]:
        stmt = ctx.statement
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                if item.item is call:
                    return stmt
        return None

    def _contextmanager(self, key: str) -> bool:
        fn = self.m.functions.get(key)
        return fn is not None and any(d.rsplit(".", 1)[-1] in _CM_DECORATORS for d in fn.decorators)

    def _yield_line_of(self, key: str) -> Optional[int]:
        if key not in self._yield_line:
            fn = self.m.functions[key]
            found = self.m.index.nodes(cst.Yield, fn.node.body, skip=(cst.FunctionDef,))
            self._yield_line[key] = self.m.position(found[0]).start.line if found else None
        return self._yield_line[key]

    def events(self, scope: str, _stack: Tuple[str, ...] = ()) -> List[ModeEvent]:
        """Mode switches in a scope, in the order they run, helpers' included."""
        if scope in self._events:
            return self._events[scope]
        if scope in _stack or len(_stack) > 8:
            return []
        stack = _stack + (scope,)
        out: List[ModeEvent] = []
        for effect in self.m.effects_in(scope):
            if effect.kind in (EVAL, TRAIN, MODE_UNKNOWN):
                kind = {EVAL: "eval", TRAIN: "train"}.get(effect.kind, "maybe")
                for ref in self._switched_models(effect):
                    out.append(ModeEvent(effect.order, kind, ref, effect.node, effect.ctx, (), False, effect.ctx.withs))
            elif effect.kind == CALL and effect.callee in self.m.functions:
                out.extend(self._helper_events(effect, stack))
        for call, ctx in self.calls_in(scope):
            out.extend(self._unknown_mode_calls(call, ctx))
        # One statement that switches a model both ways (``model.train() if phase == "train"
        # else model.eval()``): either may happen.
        by_statement: Dict[int, Set[str]] = {}
        for event in out:
            if event.ctx.statement is not None and not event.via:
                by_statement.setdefault(id(event.ctx.statement), set()).add(event.kind)
        for event in out:
            if event.ctx.statement is not None and not event.via and len(by_statement.get(id(event.ctx.statement), ())) > 1:
                event.cond = True
        out.sort(key=lambda e: e.order)
        if not _stack:
            self._events[scope] = out
        return out

    def _switched_models(self, effect: Effect) -> List[str]:
        """The models a switch acts on: ``for m in (enc, dec): m.eval()`` switches ``enc`` and
        ``dec``; ``for m in models.values(): m.eval()`` (or over ``models``) switches every
        model in ``models`` (``models["enc"]``); and the loop variable itself, which the loop's
        body may go on to run (``for model in models: ... model.eval(); model(x)``)."""
        ref = self._mode_ref(effect)
        loop = effect.ctx.loop
        while loop is not None and ref != ANY:
            if isinstance(loop.node, cst.For) and ref in loop.targets and _head(ref) == ref:
                found = self._loop_elements(loop, ref)
                return found + [ref] if found and ref not in found else found or [ref]
            loop = loop.parent
        return [ref]

    def _loop_elements(self, loop: Loop, target: str) -> List[str]:
        expr = loop.node.iter  # type: ignore[union-attr]
        targets = loop.targets
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)) and len(targets) == 1:
            refs = [ref_of(e.value) for e in expr.elements]
            return [r for r in refs if r] if all(refs) else []
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
            method = expr.func.attr.value
            container = ref_of(expr.func.value)
            if container and (method == "values" or (method == "items" and len(targets) == 2 and targets[-1] == target)):
                return [container]
            if container and method in ("modules", "children") :
                return []  # submodules: switching some of them (MC dropout) is not switching the model
        container = ref_of(expr)
        if container and len(targets) == 1 and not self.m.has_role(container, R.MODEL, loop.scope):
            return [container]  # for m in models: m.eval()
        return []

    def _helper_events(self, effect: Effect, stack: Tuple[str, ...]) -> List[ModeEvent]:
        callee = effect.callee or ""
        inner = self.events(callee, stack)
        if not inner:
            return []
        fn = self.m.functions[callee]
        mapping = effect.args or {}
        with_node = self._is_with_item(effect.node, effect.ctx)
        split = None
        if with_node is not None and self._contextmanager(callee):
            split = self._yield_line_of(callee)
        bindings = self.constant_arguments(callee, effect.node)
        out = []
        for event in inner:
            settled = self.settled_event(event, bindings)
            if settled is None:
                continue  # ``set_mode("eval", ...)``: the helper's train() branch does not run
            event = settled
            ref = event.ref
            head = _head(ref)
            if ref != ANY and head not in fn.params and head not in ("self", "cls"):
                held = self._local_alias(callee, ref)
                if held is not None:
                    ref, head = held, _head(held)  # ``model = self.shared; model.train()``
                    event = dataclasses.replace(event, ref=ref)
                elif self.m.assigns_locally(callee, head):
                    continue  # a model the helper makes for itself
            new_refs = [translate(ref, mapping) if ref != ANY else ANY]
            if new_refs == [ANY] and ref != ANY and head in fn.params:
                new_refs = self._listed_arguments(callee, effect.node, ref) or new_refs
            order: float = effect.order
            if split is not None and with_node is not None and self.m.position(event.node).start.line > split:
                order = self._with_end(with_node, effect.ctx.scope)
            cond = event.cond or bool(self._conditions(event.ctx.conds, event.ref))
            for new_ref in new_refs:
                out.append(ModeEvent(order, event.kind, new_ref, event.node, effect.ctx, (effect,) + event.via, cond, event.withs))
        return out

    def _local_alias(self, scope: str, ref: str) -> Optional[str]:
        """What a local name of helper `scope` stands for when it is bound once, to an attribute of
        ``self``/``cls`` or to a parameter (``model = self.shared``), else None."""
        if ref != _head(ref):
            return None
        source = self.m.canonical(ref, scope)
        fn = self.m.functions.get(scope)
        if source == ref or fn is None or (_head(source) not in fn.params and _head(source) not in ("self", "cls")):
            return None
        bound = [1 for targets, _, ctx in self.m.assignments if ctx.scope == scope and ref in targets]
        return source if len(bound) == 1 else None

    def _listed_arguments(self, callee: str, call: cst.CSTNode, ref: str) -> List[str]:
        """``set_mode("eval", [enc, dec])``: the models a list or tuple argument names, for a
        switch of the parameter's elements (``for m in models: m.eval()``)."""
        head = _head(ref)
        expr = self.argument_value(callee, call, head)
        if not isinstance(expr, (cst.List, cst.Tuple)) or not expr.elements or ref != head:
            return []
        refs = [ref_of(e.value) if not isinstance(e, cst.StarredElement) else None for e in expr.elements]
        return [r for r in refs if r] if all(refs) else []

    def constant_arguments(self, key: str, call: cst.CSTNode) -> Dict[str, object]:
        """The parameters of function ``key`` a call binds to a literal (or leaves at a
        literal default): ``set_mode("eval", models)`` -> {"mode": "eval"}."""
        fn = self.m.functions.get(key)
        if fn is None or not isinstance(call, cst.Call):
            return {}
        found: Dict[str, object] = {}
        for param in fn.params:
            if param in ("self", "cls") or self.m.assigns_locally(key, param):
                continue  # (a parameter the function rebinds holds something else later)
            value = _constant(self.argument_value(key, call, param))
            if value is not _NO_VALUE:
                found[param] = value
        return found

    def settled_event(self, event: ModeEvent, bindings: Dict[str, object]) -> Optional[ModeEvent]:
        """A switch written in a function (not in a helper it calls), when the parameters in
        ``bindings`` hold those constants: None when it does not run then (``if mode ==
        "train": m.train()`` for ``mode="eval"``), with its conditions on them settled when it
        does, and ``m.train(is_train)`` read as the switch it is. Unchanged when a condition on
        them cannot be worked out."""
        if event.via or not bindings:
            return event
        conds = []
        for cond in event.ctx.conds:
            if cond.branch in ("if", "else") and cond.node is not None and set(_words(cond.text)) & set(bindings):
                truth = _truth(cond.node, bindings)
                if truth is None:
                    return event
                if truth != (cond.branch == "if"):
                    return None
                continue
            conds.append(cond)
        kind, cond_flag = event.kind, event.cond
        child: cst.CSTNode = event.node
        for ancestor in self.m.parents.ancestors(event.node):
            if isinstance(ancestor, cst.IfExp):
                truth = _truth(ancestor.test, bindings)
                if truth is None:
                    return event
                if (child is ancestor.body) != truth:
                    return None
                cond_flag = False  # ``m.train() if train else m.eval()``: this side runs
            if ancestor is event.ctx.statement or isinstance(ancestor, cst.BaseStatement):
                break
            child = ancestor
        node = event.node
        if kind == "maybe" and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "train":
            args = [a.value for a in node.args if a.keyword is None or a.keyword.value == "mode"]
            truth = _truth(args[0], bindings) if len(args) == 1 else None
            if truth is not None:
                kind = "train" if truth else "eval"  # model.train(is_train), model.train(optimizer is not None)
        if len(conds) == len(event.ctx.conds) and kind == event.kind and cond_flag == event.cond:
            return event
        return dataclasses.replace(event, kind=kind, cond=cond_flag, ctx=dataclasses.replace(event.ctx, conds=tuple(conds)))

    def _unknown_mode_calls(self, call: cst.Call, ctx: Context) -> List[ModeEvent]:
        """Calls we cannot see into that may switch a model's mode: ``set_eval(model)``,
        ``model.apply(set_bn_eval)``, ``with EvalMode(model):`` (a local class), ``with
        torch_utils.eval_mode(model):``."""
        func = call.func
        name = dotted(func) or ""
        order = self.m.call_order.get(call, 0)
        out: List[ModeEvent] = []
        if self._local_callable(func, ctx.scope) in self.m.functions:
            return out  # a local function: its effects arrive as a helper's
        external = self._project_helper_events(call, ctx, order)
        if external is not None:
            return external
        local_class = name if name in self.m.classes else None
        tokens = set(name_tokens(name.rsplit(".", 1)[-1])) if name else set()
        if isinstance(func, cst.Attribute) and func.attr.value == "apply" and call.args:
            receiver = ref_of(func.value)
            arg = dotted(call.args[0].value) or ""
            if receiver and set(name_tokens(arg)) & _MODE_CALL_WORDS:
                out.append(ModeEvent(order, "maybe", receiver, call, ctx, (), True))
            return out
        if local_class is not None:
            info = self.m.classes[local_class]
            if "__enter__" not in info.methods:
                return out
            kinds = set()
            for key in (f"{local_class}.__enter__", f"{local_class}.__exit__", f"{local_class}.__init__"):
                kinds |= {e.kind for e in self.events(key)} if key in self.m.functions else set()
            if not kinds:
                return out
        elif not (tokens & _MODE_CALL_WORDS) or isinstance(func, cst.Attribute) and func.attr.value in ("train", "eval"):
            return out
        for arg in call.args:
            ref = ref_of(arg.value)
            if ref and self.m.has_role(ref, R.MODEL, ctx.scope):
                out.append(ModeEvent(order, "maybe", ref, call, ctx, (), True))
        return out

    def _project_helper_events(self, call: cst.Call, ctx: Context, order: int) -> Optional[List[ModeEvent]]:
        """The mode switches of a function defined in another file of the project
        (``from utils import evaluate``), read from its facts: ``evaluate(model, loader)``
        whose body calls ``model.eval()`` and never ``model.train()`` leaves ``model`` in eval
        mode here. None when the callee is no function of the project."""
        project = self.m.project
        name = self.m.imports.qualname(call.func)
        if project is None or not name:
            return None
        fn = None if name == dotted(call.func) and "." not in name else project.function_named(name)
        receiver = None  # for a method of a project class: the object it is called on
        if fn is None and isinstance(call.func, cst.Attribute):
            fn, receiver = self._project_method(call.func, ctx.scope)
        if fn is None:
            return None
        params = list(fn.params[1:] if "." in fn.key else fn.params)
        out: List[ModeEvent] = []
        picked = _picked_mode(fn, params, call)
        for param in fn.evals | fn.trains:
            if receiver is not None and (param == "self" or param.startswith("self.")):
                if picked is None and param in fn.evals and param in fn.trains:
                    continue  # (a method that switches both ways, by its own logic: read as before, as no switch)
                kind = picked or ("eval" if param in fn.evals else "train")
                out.append(ModeEvent(order, kind, receiver + param[len("self"):], call, ctx, (), False))
                continue
            head = _head(param)
            if head not in params:
                continue
            index = params.index(head)
            arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == head), None)
            positional = [a for a in call.args if a.keyword is None]
            if arg is None and index < len(positional) and not any(a.star for a in positional[: index + 1]):
                arg = positional[index]
            ref = ref_of(arg.value) if arg is not None else None
            if not ref:
                continue
            ref = ref + param[len(head):]
            both = picked is None and param in fn.evals and param in fn.trains
            kind = picked or ("maybe" if both else ("eval" if param in fn.evals else "train"))
            out.append(ModeEvent(order, kind, ref, call, ctx, (), kind == "maybe"))
        return out

    def _project_method(self, func: cst.Attribute, scope: str):
        """(facts, receiver) of the project method ``func`` calls in another file: ``self.m(...)``
        inherited from a project base class of another file, or ``obj.m(...)`` on an instance
        of a project class (``net = MC_drop_net(...)``). (None, None) otherwise."""
        project = self.m.project
        receiver = ref_of(func.value)
        method = func.attr.value
        if not receiver:
            return None, None
        if receiver == "self":
            cls = self.m.class_scope_of(scope)
            found = project.inherited_method(cls, method) if cls and "." not in cls else None
        else:
            qualified = self.m.project_instance_of.get(scope, receiver)
            found = project.method_of_class(qualified, method) if qualified else None
        return (found[1], receiver) if found is not None else (None, None)

    def mode_at(self, effect: Effect, ref: str) -> Set[str]:
        """The modes ``ref`` may be in when ``effect`` runs: a subset of {"eval", "eval_initial"
        (made by from_pretrained, never switched), "train",
        "maybe", "none"} ("none": nothing sets it and nobody in this file calls the function)."""
        return self._mode(effect.ctx.scope, effect.order, effect.ctx, ref, 0, frozenset())

    def _kind(self, event: ModeEvent, point: Context) -> str:
        if event.cond or event.ref == ANY:
            return "maybe"
        if any(c not in point.conds for c in self._conditions(event.ctx.conds, event.ref)):
            return "maybe"
        return event.kind

    @staticmethod
    def _conditions(conds, ref: str):
        """The conditions a switch of ``ref`` really depends on: ``if isinstance(net,
        nn.Module): net.train()`` switches every model (what is not a module has no mode)."""
        out = []
        for cond in conds:
            node = cond.node
            if (
                cond.branch == "if"
                and isinstance(node, cst.Call)
                and (dotted(node.func) or "") == "isinstance"
                and node.args
                and related(ref_of(node.args[0].value) or "", ref)
                and "Module" in (cond.text or "")
            ):
                continue
            out.append(cond)
        return out

    def _mode(self, scope: str, order: float, ctx: Context, ref: str, depth: int, seen: FrozenSet) -> Set[str]:
        if depth > 8:
            return {"maybe"}
        events = [e for e in self.events(scope) if self.same_model(e.ref, ref, scope)]
        before = [e for e in events if e.order < order]
        result: Set[str] = set()
        loop = ctx.loop
        while loop is not None:
            inside = [e for e in before if loop.encloses(e.ctx.loop)]
            if inside:
                result.add(self._kind(inside[-1], ctx))
                return result
            after = [e for e in events if e.order > order and loop.encloses(e.ctx.loop)]
            if after:
                result.add(self._kind(after[-1], ctx))
            loop = loop.parent
        if before:
            result.add(self._kind(before[-1], ctx))
            return result
        rebound = self._rebound_parameter(scope, ref, order)
        if rebound is not None:
            return result | {rebound}
        return result | self._outer(scope, ref, depth, seen)

    def _rebound_parameter(self, scope: str, ref: str, order: float) -> Optional[str]:
        """How the model starts out when ``ref`` is a parameter the function rebinds on every
        path before ``order`` (``model = build(name, pretrained=True); model = model.to(dev)``,
        the parameter holding only the model's name): from that assignment, not from what the
        callers hand in; likewise a name of the scope bound more than once, from the last
        binding before ``order`` on every path. None when it is not so rebound."""
        fn = self.m.functions.get(scope)
        head = _head(ref)
        if ref != head:
            return None
        if fn is None or head not in fn.params:
            if fn is None and scope != MODULE_SCOPE:
                return None
            # a name of this scope bound more than once (a notebook's ``model = from_pretrained(...)``,
            # then much later ``model = get_peft_model(model, ...)``): the binding that reaches here
            bindings = [v for t, v, c in self.m.assignments if c.scope == scope and t == (head,)]
            if len(bindings) < 2:
                return None
        assignments = self.m.assignments
        last = None
        for index, (targets, value, ctx) in enumerate(assignments):
            if ctx.scope != scope or targets != (head,):
                continue
            at = self.m.assignment_order.get(value)
            if at is None or at >= order:
                continue
            if ctx.loop is None and not ctx.conds and not ctx.conditional and not ctx.withs:
                last = index
        if last is None:
            return None
        found = self._initial(scope, ref, 0, last + 1)
        return None if found == "none" else found

    def _outer(self, scope: str, ref: str, depth: int, seen: FrozenSet) -> Set[str]:
        """The mode a model has when ``scope`` starts: from the callers, else how it was made."""
        if scope == MODULE_SCOPE:
            return {self._initial(MODULE_SCOPE, ref)}
        fn = self.m.functions.get(scope)
        if fn is None:
            return {"maybe"}
        head = _head(ref)
        is_param = head in fn.params or head in ("self", "cls")
        if not is_param and self.m.assigns_locally(scope, head):
            return {self._initial(scope, ref)}
        sites = [s for s in self.call_sites(scope) if s.node not in seen]
        if not sites:
            if self.call_sites(scope):
                return {"maybe"}  # recursion
            if self._callers_elsewhere_switch(fn, ref):
                return {"eval"}  # every caller in another file switches it to eval mode first
            if self._passed_self_elsewhere(fn, ref):
                return {"maybe"}  # a model's own method hands itself over: its owner sets the mode
            if head in ("self", "cls"):
                found = self._initial_attr(scope, ref)
                if found == "none" and not self._unset_counts(scope, depth):
                    # as for a parameter below: a method that trains this model (itself or
                    # through a helper) and evaluates it through a helper runs it in the mode it
                    # trains it in, when nothing here switches it
                    found = "train" if self._trains_model_here(scope, ref) else "maybe"
                cls = self.m.class_scope_of(scope) or ""
                owner = f"{cls}.__init__"
                others = self.m.method_keys(cls)
                return self._settled(found, owner if owner in self.m.functions else None, others, scope, ref)
            if is_param:
                # Nobody in this file calls it: the caller may set the mode. Count that as
                # missing only for the evaluation routine itself, not for a helper of a helper,
                # nor for a method that a base class we cannot see may call (a template method).
                if fn.cls is not None and self._unseen_base(fn.cls):
                    return {"maybe"}
                if self._unset_counts(scope, depth):
                    return {"none"}
                if depth > 0 and self._evaluation_caller(scope):
                    # the evaluation routine's only callers are evaluation code themselves
                    # (``translate()`` running ``predict_s2s()`` on each sentence): nobody on the
                    # way sets the mode, as for the routine itself
                    return {"none"}
                # A function that trains this model (itself or through a helper) and evaluates
                # it through a helper: whatever mode its caller set, training mode is the one
                # the model is trained in, and nothing here switches it.
                return {"train" if self._trains_model_here(scope, ref) else "maybe"}
            parent = scope.rsplit(".", 1)[0] if "." in scope else MODULE_SCOPE
            if parent in self.m.classes:
                parent = MODULE_SCOPE
            others = [k for k in self.m.functions if self.m.functions[k].cls is None]
            return self._settled(self._initial(parent, ref), parent, others, scope, ref)
        out: Set[str] = set()
        for site in sites:
            new_ref = translate(ref, site.args or {}) if is_param else ref
            if new_ref == ANY:
                out.add("maybe")
                continue
            out |= self._mode(site.ctx.scope, site.order, site.ctx, new_ref, depth + 1, seen | {site.node})
        return out or {"maybe"}

    def _callers_elsewhere_switch(self, fn, ref: str) -> bool:
        """Whether function `fn` is called from other files of the project, and every such call
        passes, for parameter ``ref``, a model that the caller switched to eval mode before it."""
        if self.m.project is None:
            return False
        callers = self.m.project.callers(fn.key)
        head = _head(ref)
        if not callers and head == "self" and fn.cls is not None and "." not in fn.cls and fn.node.name.value != "forward":
            # a model's own method (``Model.test`` running ``self(data)``) that files importing this
            # one call on an object: ``model.test(seq)`` in ``eval_epoch()`` after ``model.eval()``
            found = self.m.project.method_calls_elsewhere(fn.node.name.value)
            if len(fn.params) > 1:  # (``net.eval(x, y)``, a method of the class, not nn.Module's ``eval()``)
                found = [(rel, call) for rel, call in found if call.args or call.kwargs]
            return bool(found) and all(self.m.project.evaluated_before(rel, call, call.callee.rpartition(".")[0])
                                       for rel, call in found)
        if not callers:
            return False
        if head in ("self", "cls") and fn.cls is not None:
            # a base class in another file calls ``self.<method>()`` after ``self.eval()`` (which
            # switches a module and its parts; a wrapper's own ``eval()`` switches the networks it
            # holds: ``self._network.eval()``), or after switching this very attribute
            # ... or the object it is called on is in eval mode there (``net.set_mode_train(False)``
            # then ``net.eval(x, y)`` in a training script)
            return all(call.callee.startswith("self.") and ("self" in call.evals_before or ref in call.evals_before)
                       or not call.callee.startswith("self.")
                       and self.m.project.evaluated_before(rel, call, call.callee.rpartition(".")[0])
                       for rel, call in callers)
        params = list(fn.params[1:] if fn.cls is not None else fn.params)
        if head not in params:
            return False
        index = params.index(head)
        for _, call in callers:
            arg = call.argument(head, index)
            if not arg or arg == "?" or arg not in call.evals_before:
                return False
        return True

    def _passed_self_elsewhere(self, fn, ref: str) -> bool:
        """Whether a method in another file of the project calls function `fn` handing itself
        (``eval_np(self, obs)`` in a policy's ``get_action``) for parameter ``ref``: the model's
        mode is then whatever its owner set, which this file cannot see."""
        if self.m.project is None or fn.cls is not None:
            return False
        head = _head(ref)
        if head not in fn.params:
            return False
        index = fn.params.index(head)
        return any(call.argument(head, index) == "self" for _, call in self.m.project.callers(fn.key))

    def training_callers_elsewhere(self, key: str) -> List[str]:
        """``path:line`` of the calls of function `key` from other files of the project that sit
        in a training loop which never calls ``.train()``: a mode switched in `key` stays for
        the training steps that follow."""
        if self.m.project is None:
            return []
        return [f"{rel}:{call.line}" for rel, call in self.m.project.callers(key)
                if call.train_loop and not call.loop_trains]

    def _trains_model_here(self, scope: str, ref: str) -> bool:
        """Whether ``scope`` runs a training step on ``ref``: a forward of it that feeds a
        backward pass, or a call handing it to a helper that backpropagates."""
        if not self.trains(scope):
            return False
        for effect in self.m.effects_in(scope):
            if effect.kind == FORWARD and related(effect.ref, ref) and self.feeds_backward(effect.node, scope):
                return True
            if effect.kind == CALL and effect.callee in self.backprop_functions:
                if any(arg and related(arg, ref) for arg in (effect.args or {}).values()):
                    return True
        return False

    def _settled(self, initial: str, owner: Optional[str], others: List[str], scope: str, ref: str) -> Set[str]:
        """The mode of a model a function uses but nobody in the file calls the function:
        how it was made, then the last switch in the code that owns it (``__init__`` for
        ``self.model``, the module for a global); a switch in another function may have
        run before (training mode: "train", anything else: "maybe")."""
        found = initial
        if owner is not None:
            settled = [e for e in self.events(owner) if self.same_model(e.ref, ref, owner) and e.ctx.loop is None]
            if settled:
                last = settled[-1]
                found = "maybe" if last.cond or self._conditions(last.ctx.conds, last.ref) else last.kind
        result = {found}
        for key in others:
            if key in (scope, owner):
                continue
            for event in self.events(key):
                if self.same_model(event.ref, ref, key):
                    result.add("train" if event.kind == "train" and not event.cond and not event.via else "maybe")
        return result

    def _unseen_base(self, name: str, seen: Optional[Set[str]] = None) -> bool:
        """Whether a class (or a class it derives from in this file) has a base defined elsewhere."""
        info = self.m.classes.get(name)
        if info is None:
            return False
        seen = seen or set()
        seen.add(name)
        for arg in info.node.bases:
            expr = arg.value.value if isinstance(arg.value, cst.Subscript) else arg.value
            short = (dotted(expr) or "").rsplit(".", 1)[-1]
            if short in ("object", "ABC", "Generic", "Protocol", "NamedTuple", ""):
                continue
            if short in self.m.classes:
                if short not in seen and self._unseen_base(short, seen):
                    return True
                continue
            return True
        return False

    def same_model(self, a: str, b: str, scope: str) -> bool:
        """``related`` after following aliases (``net = model.to(device)``) and models held by
        objects built from them (``trainer.model`` for ``trainer = Trainer(model)``)."""
        if related(a, b) or related(self.m.canonical(a, scope), self.m.canonical(b, scope)):
            return True
        held_a, held_b = self._resolved(a, scope), self._resolved(b, scope)
        return (held_a, held_b) != (a, b) and related(held_a, held_b)

    def _resolved(self, ref: str, scope: str) -> str:
        """``ref`` after following aliases and constructor arguments stored in attributes."""
        for _ in range(4):
            ref = self.m.canonical(ref, scope)
            held = self.held_argument(ref, scope)
            if held is None:
                break
            ref = held
        return ref

    def held_argument(self, ref: str, scope: str) -> Optional[str]:
        """The object ``obj.attr`` holds when ``obj = C(x, ...)`` (one assignment, in ``scope``
        or a scope enclosing it) and ``C.__init__`` stores its parameter in that attribute
        (``self.attr = param``, ``param.to(device)``, a wrapper of it): ``trainer.model`` is
        ``model`` for ``trainer = Trainer(model)``. None whenever that is not certain: the
        attribute is assigned anywhere else in the class, conditionally or in a loop, the
        argument is not passed (a default), or its name is rebound after the construction."""
        key = (ref, scope)
        if key in self._held:
            return self._held[key]
        self._held[key] = None
        found = self._held_argument(ref, scope)
        self._held[key] = found
        return found

    def _held_argument(self, ref: str, scope: str) -> Optional[str]:
        from mllint.semantics.builder import _source_ref

        head = _head(ref)
        if head in ("self", "cls") or not ref.startswith(head + "."):
            return None
        attr_chain = ref[len(head) + 1 :]
        attr = re.split(r"[.\[]", attr_chain, 1)[0]
        rest = attr_chain[len(attr) :]
        if not attr.isidentifier():
            return None
        cls = self.m.instance_of.get(scope, head)
        init = self.m.method_key(cls, "__init__") if cls else None
        if cls is None or init is None:
            return None
        fn = self.m.functions[init]
        owner = self.m.class_scope_of(init)
        target = f"self.{attr}"
        stores = [
            (targets, value, ctx)
            for targets, value, ctx in self.m.assignments
            if target in targets and ctx.scope != MODULE_SCOPE and self.m.class_scope_of(ctx.scope) in (owner, cls)
        ]
        if len(stores) != 1:
            return None
        targets, value, ctx = stores[0]
        if ctx.scope != init or ctx.loop is not None or ctx.conds or ctx.conditional:
            return None
        part = _part_for(targets, value, target)
        source = _source_ref(part) if part is not None else None
        if source is None:
            return None
        param = _head(source)
        params = [p for p in fn.params if p not in ("self", "cls")]
        if param not in params or self.m.assigns_locally(init, param):
            return None
        suffix = source[len(param) :]
        # the one assignment that built ``head``, in the nearest scope that assigns it
        current = scope
        while True:
            built = [(t, v, c) for t, v, c in self.m.assignments_in(current) if head in t]
            if built or current == MODULE_SCOPE:
                break
            if head in self.m.locals.get(current, ()):
                return None  # a parameter (or a local bound otherwise): made by the caller
            current = current.rsplit(".", 1)[0] if "." in current else MODULE_SCOPE
        if len(built) != 1:
            return None
        btargets, call, bctx = built[0]
        if len(btargets) != 1 or not isinstance(call, cst.Call) or dotted(call.func) != cls:
            return None
        arg_expr: Optional[cst.BaseExpression] = None
        index = 0
        for arg in call.args:
            if arg.star:
                return None
            if arg.keyword is not None:
                if arg.keyword.value == param:
                    arg_expr = arg.value
            else:
                if index < len(params) and params[index] == param:
                    arg_expr = arg.value
                index += 1
        argument = _source_ref(arg_expr) if arg_expr is not None else None
        if argument is None or _head(argument) in ("self", "cls"):
            return None
        built_line = self.m.position(call).start.line
        for t, v, c in self.m.assignments:
            if c.scope == current and _head(argument) in t and self.m.position(v).start.line > built_line:
                return None  # rebound after the construction: the object may hold the old one
        return argument + suffix + rest

    def _evaluation_caller(self, scope: str) -> bool:
        """Whether function ``scope`` (called by nobody in this file) is evaluation code by
        its own name and trains nothing."""
        found = self.function_evidence(scope)
        return found is not None and found.kind == "function" and not self.trains(scope)

    def _unset_counts(self, scope: str, depth: int) -> bool:
        return depth == 0 or self.loops_over_data(scope)

    def loops_over_data(self, scope: str) -> bool:
        """Whether the scope has a loop over a data loader or a dataset."""
        for loop in self.m.loops:
            if loop.scope != scope or not isinstance(loop.node, cst.For):
                continue
            if self.iterated_data(loop) is not None:
                return True
            ref = loop.iter_ref
            if ref and (self.m.has_role(ref, R.LOADER, scope) or set(name_tokens(ref.rsplit(".", 1)[-1])) & _LOADER_WORDS):
                return True
        return False

    def _initial_of_value(self, value: cst.BaseExpression, scope: str, depth: int = 0, bound: Optional[int] = None) -> str:
        """How a model made by ``value`` starts out; names it reads are looked up among the
        first ``bound`` assignments (``model = DataParallel(model)`` reads the earlier ``model``)."""
        if depth > 4:
            return "maybe"
        ref = ref_of(value)
        if ref is not None:
            return self._initial(scope, ref, depth + 1, bound)
        expr = value
        for _ in range(10):
            if not isinstance(expr, cst.Call):
                return "maybe"
            name = self.qual(expr.func)
            if name.split(".", 1)[0] in OTHER_MODULES:
                return "maybe"  # ``tf.keras.Model(...)`` in a notebook that uses torch too: no torch mode
            made = self.m.project.returned_model(name) if self.m.project is not None and name else None
            if made is not None:  # a factory of another file of the project: how it hands the model over
                return "eval" if made[0] else "train"
            factory = self.m.functions.get(expr.func.value) if isinstance(expr.func, cst.Name) else None
            if factory is not None and factory.cls is None:
                return self._initial_from_factory(factory, depth + 1)
            if _EVAL_INITIAL.search(name):
                return "eval_initial"
            if (
                isinstance(expr.func, cst.Attribute)
                and expr.func.attr.value in ("load_model", "load", "from_checkpoint", "from_file")
                and (dotted(expr.func.value) or "").rsplit(".", 1)[-1][:1].isupper()
                and not name.startswith("torch.")
            ):
                # ``DeepSpeech.load_model(path)``: the class builds a fresh model (training mode)
                # and loads weights into it, which does not change the mode
                return "train"
            if _MAYBE_INITIAL.search(name):
                return "maybe"
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "eval" and not expr.args:
                return "eval"  # teacher = Net().eval()
            if isinstance(expr.func, cst.Attribute) and (
                expr.func.attr.value in ("to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_", "share_memory")
                or (expr.func.attr.value == "type" and expr.args)
            ):
                # the same module, moved or cast in place, in whatever mode it had:
                # ``net = net.type(dtype)`` / ``net = net.to(device)`` rebinds the earlier ``net``
                expr = expr.func.value
                inner = ref_of(expr)
                if inner is not None:
                    return self._initial(scope, inner, depth + 1, bound)
                continue
            short = name.rsplit(".", 1)[-1]
            if short in ("DataParallel", "DistributedDataParallel", "compile", "prepare", "prepare_model") and expr.args:
                expr = expr.args[0].value
                inner = ref_of(expr)
                if inner is not None:
                    return self._initial(scope, inner, depth + 1, bound)
                continue
            if isinstance(expr.func, cst.Attribute):
                receiver = ref_of(expr.func.value)
                if receiver is None or _head(receiver) not in self.m.imports.aliases:
                    return "maybe"  # ``self.get_encoder()``: a part of an existing object, in its mode
            return "train"
        return "maybe"

    def _imported_instance(self, name: str) -> str:
        """How a model that another file of the project makes at module level, and this file
        imports, starts out (``CatfishModel = models.resnet50()`` there): a fresh module of a torch
        constructor or of a module class of the project is in training mode, when that file
        switches nothing by that name. "maybe" otherwise (made where we cannot see)."""
        if self.m.project is None:
            return "maybe"
        made = self.m.project.module_instance(self.m.imports.qualify(name) or name)
        if made is None:
            return "maybe"
        callee, project_module = made
        if _EVAL_INITIAL.search(callee):
            return "eval_initial"
        if _MAYBE_INITIAL.search(callee) or "load" in callee.rsplit(".", 1)[-1]:
            return "maybe"
        if project_module or (project_module is None and R.role_of_constructor(callee) == R.MODEL):
            return "train"
        return "maybe"

    def _initial_from_factory(self, fn, depth: int) -> str:
        """How a model that a function of this file makes and returns starts out (``def
        load_model(): m = Net(); m.load_state_dict(...); return m``): how it was made there, or
        the last switch of it there when that runs on every call. "maybe" when the returns
        disagree, or return something handed in, or what the function does not make."""
        from mllint.semantics.phases.evaluation import _returned_values

        if depth > 4:
            return "maybe"
        found: Set[str] = set()
        for value in _returned_values(self.m, fn.node):
            ref = ref_of(value)
            if ref is None:
                found.add(self._initial_of_value(value, fn.key, depth))
                continue
            head = _head(ref)
            if ref in ("None", "__yield__") or head in fn.params or head in ("self", "cls") or not self.m.assigns_locally(fn.key, head):
                return "maybe"
            events = [e for e in self.events(fn.key) if self.same_model(e.ref, ref, fn.key)]
            if events:
                last = events[-1]
                settled = not last.cond and last.ctx.loop is None and not self._conditions(last.ctx.conds, last.ref)
                found.add(last.kind if settled else "maybe")
                continue
            initial = self._initial(fn.key, ref, depth)
            found.add("maybe" if initial == "none" else initial)
        return found.pop() if len(found) == 1 else "maybe"

    def _initial(self, scope: str, ref: str, depth: int = 0, bound: Optional[int] = None) -> str:
        """How the model ``ref`` starts out, from the (last) assignment that made it
        (among the first ``bound`` assignments of the file)."""
        if depth > 4:
            return "maybe"
        assignments = self.m.assignments if bound is None else self.m.assignments[:bound]
        current = scope
        while True:
            for index in range(len(assignments) - 1, -1, -1):
                targets, value, ctx = assignments[index]
                if ctx.scope == current and ref in targets:
                    part = _part_for(targets, value, ref)
                    if part is not None and len(targets) != 1:
                        targets, value = (ref,), part
                    if len(targets) != 1:
                        # model, optimizer = accelerator.prepare(model, optimizer)
                        if isinstance(value, cst.Call) and len(value.args) == len(targets) and self.qual(value.func).rsplit(".", 1)[-1] in ("prepare", "setup", "initialize"):
                            source = ref_of(value.args[targets.index(ref)].value)
                            if source is not None:
                                return self._initial(current, source, depth + 1, index)
                        return "maybe"
                    source = ref_of(value)
                    if source is not None:
                        return self._initial(current, source, depth + 1, index)
                    return self._initial_of_value(value, current, depth, index)
            fn = self.m.functions.get(current)
            if fn is not None and _head(ref) in fn.params:
                return "none"
            if current == MODULE_SCOPE:
                break
            current = current.rsplit(".", 1)[0] if "." in current else MODULE_SCOPE
        if "." in ref and not ref.startswith(("self.", "cls.")):
            return self._initial(scope, ref.split(".", 1)[0], depth + 1)
        if _head(ref) in self.m.imports.aliases:
            if ref == _head(ref):
                return self._imported_instance(ref)
            return "maybe"  # imported: made where we cannot see
        head = _head(ref)
        if head not in self.m.iteration_vars and head not in self.m.functions and head not in self.m.classes \
                and not any(head in names for names in self.m.locals.values()):
            return "maybe"  # bound nowhere in this file (a star import, a notebook cell left out)
        return "none"  # nothing in this file makes it (a fresh model is in training mode)

    def _initial_attr(self, scope: str, ref: str) -> str:
        cls = self.m.class_scope_of(scope)
        if cls is None or "." not in ref:
            return "none"
        name = cls.rsplit(".", 1)[-1]
        info = self.m.classes.get(name)
        plain = info is not None and all(b.rsplit(".", 1)[-1] == "object" for b in info.bases)
        if self.module_like(name, by_forward=not plain):
            return "maybe"  # a model's own part: in the mode its caller set (a class of no base
            # with a ``forward`` method, an inference wrapper, sets its models' modes itself)
        for targets, value, ctx in self.m.assignments:
            if ref in targets and self.m.class_scope_of(ctx.scope) == cls:
                value = _part_for(targets, value, ref)
                if value is None:
                    return "maybe"
                source = ref_of(value)
                fn = self.m.functions.get(ctx.scope)
                if source is not None and fn is not None and _head(source) in fn.params:
                    return "none"
                return self._initial_of_value(value, ctx.scope)
        project = self.m.project
        if project is not None and "." not in cls and ref.startswith("self.") and ref.count(".") == 1:
            if project.inherited_attribute(cls, ref) == "handed in":
                return "none"  # ``self.model = model`` in a project base's __init__: its caller's model
        return "maybe"  # set by a base class we cannot see

    def mode_cm_around(self, ctx: Context, ref: str) -> bool:
        """An unknown context manager around this point that may set the model's mode
        (``with eval_mode(model):``, ``with ema.swap(model):``)."""
        for with_node in ctx.withs:
            for item in with_node.items:
                expr = item.item
                call = expr if isinstance(expr, cst.Call) else None
                name = self.qual(call.func if call else expr)
                if call is not None and self._local_callable(call.func, ctx.scope) is not None:
                    continue  # local: its mode switches are events
                if _HARMLESS_CM.search(name) or self._with_grad(item, ctx.scope) == "off":
                    continue
                if _MODE_HINT.search(name):
                    return True
                if call is not None and any(related(r, ref) for a in call.args for r in [ref_of(a.value) or ""] if r):
                    return True
                if call is None:
                    return True  # ``with ctx:``: unknown
        return False

    def unknown_cm_around(self, withs: Tuple[cst.With, ...], scope: str) -> bool:
        """Any context manager that is neither known harmless nor local (for eval() in a
        training loop: it may restore the mode when it exits)."""
        for with_node in withs:
            for item in with_node.items:
                expr = item.item
                call = expr if isinstance(expr, cst.Call) else None
                name = self.qual(call.func if call else expr)
                if call is not None and self._local_callable(call.func, scope) is not None:
                    continue
                if _HARMLESS_CM.search(name) or self._with_grad(item, scope) == "off":
                    continue
                return True
        return False

    # --- a shared training/evaluation function called with its flag off ---------------------------------
    def flag_evaluations(self) -> List[FlagEvaluation]:
        """Evaluations through one function for training and evaluation: a call with the
        training flag off (``training_flag``, ``flag_off_at``: False, an evaluation phase name,
        a default of those) is evaluation code, and each forward of the function that runs
        then (conditions on the flag settled by its value) is evaluated in the mode the
        function leaves the model in with that value (``if train: model.train() else:
        model.eval()``, ``model.train(train)``), else in the mode the caller left it in."""
        found: List[FlagEvaluation] = []
        forwards: Dict[str, List[Effect]] = {}
        for effect in self.forwards():
            forwards.setdefault(effect.ctx.scope, []).append(effect)
        for key in forwards:
            fn = self.m.functions.get(key)
            if fn is None or self.managed(fn) or self.unit_test(fn) or self.module_method(fn):
                continue
            flag = self.training_flag(key)
            if flag is None:
                continue
            for site in self.call_sites(key):
                if not self.flag_off_at(key, site, flag):
                    continue
                bindings = self.constant_arguments(key, site.node)
                for effect in forwards[key]:
                    item = self._flag_evaluation(key, flag, site, effect, bindings)
                    if item is not None:
                        found.append(item)
        return found

    def _flag_evaluation(self, key: str, flag: str, site: Effect, effect: Effect, bindings: Dict[str, object]) -> Optional[FlagEvaluation]:
        for cond in effect.ctx.conds:
            if set(_words(cond.text)) & set(bindings):
                truth = _truth(cond.node, bindings) if cond.node is not None and cond.branch in ("if", "else") else None
                if truth is None or truth != (cond.branch == "if"):
                    return None  # runs only in training, or we cannot tell
        ref = effect.ref
        if ref == ANY or self.overrides_mode(ref, key) or self.mode_cm_around(effect.ctx, ref):
            return None
        outer = translate(ref, site.args or {})
        if outer == ANY or self.overrides_mode(outer, site.ctx.scope) or self.mode_cm_around(site.ctx, outer):
            return None
        if self.feeds_backward(site.node, site.ctx.scope):
            return None
        settled = []
        for event in self.events(key):
            if not self.same_model(event.ref, ref, key):
                continue
            event = self.settled_event(event, bindings)
            if event is not None:
                settled.append(event)
        modes: Set[str] = set()
        before = [e for e in settled if e.order < effect.order]
        loop = effect.ctx.loop
        decided = False
        while loop is not None and not decided:
            inside = [e for e in before if loop.encloses(e.ctx.loop)]
            if inside:
                modes.add(self._kind(inside[-1], effect.ctx))
                decided = True
                break
            after = [e for e in settled if e.order > effect.order and loop.encloses(e.ctx.loop)]
            if after:
                modes.add(self._kind(after[-1], effect.ctx))
            loop = loop.parent
        if not decided and before:
            modes.add(self._kind(before[-1], effect.ctx))
            decided = True
        in_function = bool(modes)
        if not decided:
            modes |= self._mode(site.ctx.scope, site.order, site.ctx, outer, 1, frozenset({site.node}))
        if "train" not in modes or not modes <= {"train", "none"}:
            return None
        return FlagEvaluation(site, effect, key, flag, outer, in_function)

    # --- eval() never undone --------------------------------------------------------------------------
    def eval_not_undone(self) -> List[NotUndone]:
        found: List[NotUndone] = []
        reported: Set[cst.CSTNode] = set()
        for loop in sorted(self.m.loops, key=lambda l: (-l.depth, l.order)):
            fn = self.m.functions.get(loop.scope)
            if fn is not None and self.managed(fn):
                continue
            if not self.loop_trains(loop):
                continue
            events = [e for e in self.events(loop.scope) if loop.encloses(e.ctx.loop)]
            for event in events:
                if event.kind != "eval" or event.node in reported or event.ref == ANY:
                    continue
                if self._inner_training_loop(loop, event.ctx.loop):
                    continue  # the nested training loop reports it
                ref = event.ref
                if any(e.kind in ("train", "maybe") and self.same_model(e.ref, ref, loop.scope) for e in events):
                    continue
                if self.overrides_mode(ref, loop.scope) or not self._trained_in(loop, ref):
                    continue
                if self.unknown_cm_around(event.ctx.withs, loop.scope) or self.unknown_cm_around(
                    event.withs, self._event_scope(event)
                ):
                    continue
                if self._stops_after(event):
                    continue
                if self._last_round_then_trained(event, loop, ref):
                    continue
                reported.add(event.node)
                found.append(NotUndone(event, loop, ref))
        return found

    def _event_scope(self, event: ModeEvent) -> str:
        if event.via:
            return event.via[-1].callee or MODULE_SCOPE
        return event.ctx.scope

    def _inner_training_loop(self, loop: Loop, inner: Optional[Loop]) -> bool:
        while inner is not None and inner is not loop:
            if self.loop_trains(inner):
                return True
            inner = inner.parent
        return False

    def _last_round_then_trained(self, event: ModeEvent, loop: Loop, ref: str) -> bool:
        """The switch runs only in the last round of the training loop (``if i == len(steps) - 1:
        model.eval(); ...`` in ``for i, batch in enumerate(steps)``), and the loop around that one
        switches the model back to training mode before it runs the training loop again."""
        inner = event.ctx.loop
        if inner is None or not isinstance(inner.node, cst.For) or inner.parent is None:
            return False
        target = inner.node.target
        first = target.elements[0].value if isinstance(target, cst.Tuple) and target.elements else target
        if not isinstance(first, cst.Name):
            return False
        index = first.value

        def last_round(node: Optional[cst.CSTNode]) -> bool:
            if not (isinstance(node, cst.Comparison) and len(node.comparisons) == 1
                    and isinstance(node.comparisons[0].operator, cst.Equal)):
                return False
            left, right = node.left, node.comparisons[0].comparator
            if isinstance(right, cst.Name) and right.value == index:
                left, right = right, left
            return (isinstance(left, cst.Name) and left.value == index and isinstance(right, cst.BinaryOperation)
                    and isinstance(right.operator, cst.Subtract) and isinstance(right.right, cst.Integer)
                    and right.right.value == "1")

        if not any(c.branch == "if" and c.loop is inner and last_round(c.node) for c in event.ctx.conds):
            return False
        outer = inner.parent
        return any(e.kind == "train" and not e.cond and self.same_model(e.ref, ref, outer.scope)
                   and outer.encloses(e.ctx.loop) and not inner.encloses(e.ctx.loop)
                   for e in self.events(outer.scope))

    def _stops_after(self, event: ModeEvent) -> bool:
        """The loop ends right after this evaluation (``break``/``return`` later in its block)."""
        ctx = event.ctx
        block, stmt = ctx.block, ctx.statement
        if not isinstance(block, cst.IndentedBlock) or stmt is None:
            return False
        after = False
        for item in block.body:
            if item is stmt:
                after = True
                continue
            if after and isinstance(item, cst.SimpleStatementLine) and any(isinstance(s, (cst.Break, cst.Return)) for s in item.body):
                return True
        return False

    def _factory_owners(self, optimizer: str, scope: str) -> Optional[FrozenSet[str]]:
        """Models handed to the call that made the optimizer (``build_optimizer(cfg, model)``)."""
        value = self._assigned_value(optimizer, scope)
        if not isinstance(value, cst.Call):
            return None
        found = {r for r in _reads(*[a.value for a in value.args]).refs if self.m.has_role(r, R.MODEL, scope)}
        return frozenset(found) or None

    def _trained_in(self, loop: Loop, ref: str) -> bool:
        """Whether the loop trains this model: an optimizer it steps holds its parameters, or
        (owners unknown) it runs a forward of it with grad on."""
        owners_known = []
        for step in self.loop_steps(loop):
            if step == ANY:
                continue
            owners = self.m.optimizer_owners(step, loop.scope) or self._factory_owners(step, loop.scope)
            if owners:
                owners_known.append(owners)
        canonical = self.m.canonical(ref, loop.scope)
        if owners_known:
            return any(
                related(ref, o) or related(canonical, self.m.canonical(o, loop.scope)) for owners in owners_known for o in owners
            )
        if set(name_tokens(ref.rsplit(".", 1)[-1])) & _TEACHER_WORDS or self.frozen(ref, loop.scope):
            return False
        for effect in self.m.effects_in(loop.scope):
            if not loop.encloses(effect.ctx.loop):
                continue
            if effect.kind == FORWARD and related(effect.ref, ref) and effect.ctx.grad != "off":
                return True
            if effect.kind == CALL:
                summary = self.m.summaries.get(effect.callee or "")
                if summary is not None and any(related(translate(f, effect.args or {}), ref) for f in summary.forwards):
                    return True
        return False


def _picked_mode(fn, params: List[str], call: cst.Call) -> Optional[str]:
    """"train" / "eval" when the call passes a literal for the function's ``mode_param``
    (``self.set_mode_train(train=False)``, ``net.set_mode_train(False)``); None otherwise."""
    param = getattr(fn, "mode_param", "")
    if not param or param not in params:
        return None
    value = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == param), None)
    positional = [a for a in call.args if a.keyword is None]
    index = params.index(param)
    if value is None and index < len(positional) and not any(a.star for a in positional[: index + 1]):
        value = positional[index].value
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return "train" if value.value == "True" else "eval"
    return None
