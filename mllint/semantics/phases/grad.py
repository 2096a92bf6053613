"""Is grad on here? ``no_grad``/``inference_mode``/``set_grad_enabled`` blocks, decorators and
statements, local context managers, helpers only ever called with grad off, and frozen models."""

from __future__ import annotations

from typing import List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics.model import (
    MODULE_SCOPE,
    Context,
    Effect,
    FileModel,
)
from mllint.semantics.names import dotted, ref_of
from mllint.semantics.phases.flow import _reads
from mllint.semantics.phases.words import _GRAD_HINT, _HARMLESS_CM


class GradFacts:
    """Whether a forward runs with autograd off."""

    m: FileModel

    # --- grad ----------------------------------------------------------------------------------------
    def _with_grad(self, item: cst.WithItem, scope: str) -> Optional[str]:
        """"off" when a with-item turns grad off (or may: a flag), "ambiguous" when we cannot
        tell, None when it leaves grad alone."""
        from mllint.semantics.builder import grad_mode_of

        expr = item.item
        call = expr if isinstance(expr, cst.Call) else None
        qual = self.qual(call.func if call else expr)
        mode = grad_mode_of(qual, call)
        if mode is not None:
            return "off" if mode == "off" or mode.startswith("flag") else None
        inner = _reads(expr)
        if any(grad_mode_of(self.qual(c.func), c) not in (None, "on") for c in inner.calls):
            return "off"  # torch.no_grad() if not training else nullcontext()
        if call is not None:
            local = self._local_callable(call.func, scope)
            if local is not None:
                return "off" if self._local_cm_grad_off(local) else None
            if _GRAD_HINT.search(qual):
                return "ambiguous"
            return None
        name = dotted(expr)
        if name is None:
            return "ambiguous"
        value = self._assigned_value(name, scope)
        if value is None:
            return None if _HARMLESS_CM.search(name) else "ambiguous"
        found = _reads(value)
        if any(grad_mode_of(self.qual(c.func), c) not in (None, "on") for c in found.calls):
            return "off"
        if any(_GRAD_HINT.search(self.qual(c.func)) for c in found.calls):
            return "ambiguous"
        return None

    def _assigned_value(self, ref: str, scope: str) -> Optional[cst.BaseExpression]:
        current = scope
        while True:
            for targets, value, ctx in self.m.assignments:
                if ctx.scope == current and targets == (ref,):
                    return value
            if current == MODULE_SCOPE:
                return None
            current = current.rsplit(".", 1)[0] if "." in current else MODULE_SCOPE

    def _local_callable(self, func: cst.BaseExpression, scope: str) -> Optional[str]:
        """A function or class defined in this file that ``func`` names."""
        name = dotted(func)
        if name is None:
            return None
        short = name.rsplit(".", 1)[-1]
        if name.startswith("self.") and name.count(".") == 1:
            cls = self.m.class_scope_of(scope)
            if cls and f"{cls}.{short}" in self.m.functions:
                return f"{cls}.{short}"
        if name in self.m.functions:
            return name
        if name in self.m.classes:
            return name
        return None

    def _local_cm_grad_off(self, key: str) -> bool:
        """A local context manager (a @contextmanager function, or a class whose __enter__
        does it) that turns grad off."""
        keys = [key]
        if key in self.m.classes:
            keys = [f"{key}.__enter__", f"{key}.__init__"]
        for k in keys:
            fn = self.m.functions.get(k)
            if fn is None:
                continue
            if fn.grad == "off":
                return True
            for call, ctx in self.calls_in(k):
                from mllint.semantics.builder import grad_mode_of

                mode = grad_mode_of(self.qual(call.func), call)
                if mode == "off" or (mode or "").startswith("flag"):
                    return True
                if isinstance(call.func, cst.Attribute) and call.func.attr.value == "__enter__":
                    inner = call.func.value
                    if isinstance(inner, cst.Call) and grad_mode_of(self.qual(inner.func), inner) == "off":
                        return True
            for effect in self.m.effects_in(k):
                if effect.ctx.grad == "off" and k not in self.m.classes:
                    return True
        return False

    def _grad_off_statement_orders(self) -> List[Tuple[str, int]]:
        """``torch.set_grad_enabled(False)`` (or of a flag) used as a statement, or a grad-off
        context entered by hand (``torch.no_grad().__enter__()``): (scope, order) from where
        grad is (or may be) off."""
        if self._grad_off_statements is None:
            from mllint.semantics.builder import GRAD_OFF_CONTEXTS, SET_GRAD_ENABLED

            found = []
            helpers: List[Tuple[str, str]] = []
            for call, ctx in self.m.calls:
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "__enter__" and isinstance(func.value, cst.Call) \
                        and self.qual(func.value.func) in GRAD_OFF_CONTEXTS:
                    stmt = ctx.statement
                    if isinstance(stmt, cst.SimpleStatementLine) and any(
                            isinstance(s, cst.Expr) and s.value is call for s in stmt.body):
                        found.append((ctx.scope, self.m.call_order.get(call, 0)))
                    continue
                qual = self.qual(func)
                if qual in SET_GRAD_ENABLED or qual == "torch._C._set_grad_enabled":
                    # False, or a flag (``torch.set_grad_enabled(train_model)``: off in evaluation)
                    if call.args and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value != "True":
                        stmt = ctx.statement
                        if isinstance(stmt, cst.SimpleStatementLine) and any(
                            isinstance(s, cst.Expr) and s.value is call for s in stmt.body
                        ):
                            found.append((ctx.scope, self.m.call_order.get(call, 0)))
                            helpers.append((ctx.scope, call.args[0].value.value))
            # a helper that does it (``def set_grad(flag): torch.set_grad_enabled(flag)``), from
            # its calls on, unless the call passes True for that flag
            for scope, arg in helpers:
                fn = self.m.functions.get(scope)
                if fn is None or scope == MODULE_SCOPE:
                    continue
                for site in self.call_sites(scope):
                    if arg in fn.params and not self.m.assigns_locally(scope, arg):
                        value = self.argument_value(scope, site.node, arg)
                        if isinstance(value, cst.Name) and value.value == "True":
                            continue
                    found.append((site.ctx.scope, site.order))
            self._grad_off_statements = found
        return self._grad_off_statements

    def grad_off_functions(self) -> Set[str]:
        """Functions whose body always runs with grad off: decorated, or every call site in
        a grad-off region (helpers count), computed to a fixpoint."""
        if self._grad_off_fns is not None:
            return self._grad_off_fns
        off: Set[str] = set()
        for key, fn in self.m.functions.items():
            if fn.grad == "off" or any(_GRAD_HINT.search(d) for d in fn.decorators):
                off.add(key)
        changed = True
        while changed:
            changed = False
            for key in self.m.functions:
                if key in off:
                    continue
                sites = self.call_sites(key)
                if sites and all(self._site_grad_off(site, off) for site in sites):
                    off.add(key)
                    changed = True
                elif not sites and self._external_callers_grad_off(key):
                    off.add(key)
                    changed = True
        self._grad_off_fns = off
        return off

    def _external_callers_grad_off(self, key: str) -> bool:
        """Nobody in this file calls function `key`, and every call of it from other files of
        the project runs with autograd off (``with torch.no_grad(): predict_proba(model, x)``)."""
        if self.m.project is None:
            return False
        callers = self.m.project.callers(key)
        return bool(callers) and all(call.grad_off for _, call in callers)

    def callers_disagree(self, key: str) -> bool:
        """Function `key` runs with autograd off at some of its calls and on at others (in this
        file or in other files of the project): the callers that protect it show that it is
        inference code, and the calls that do not are where autograd is left on (ML002
        reports there, not in the helper)."""
        off = self.grad_off_functions()
        if key in off:
            return False
        if any(self._site_surely_off(site, off) for site in self.call_sites(key)):
            return True
        if self.m.project is None:
            return False
        return any(call.grad_off for _, call in self.m.project.callers(key))

    def _site_surely_off(self, effect: Effect, off_fns: Set[str]) -> bool:
        """Grad is off at a call for sure: not a flag, not a context manager we cannot read."""
        if effect.ctx.grad == "off" or effect.ctx.scope in off_fns:
            return True
        if any(self._with_grad(item, effect.ctx.scope) == "off" for w in effect.ctx.withs for item in w.items):
            return True
        return self._after_grad_off_statement(effect.ctx.scope, effect.order)

    def _site_grad_off(self, effect: Effect, off_fns: Set[str]) -> bool:
        grad = effect.ctx.grad
        if grad == "off" or (grad or "").startswith("flag"):
            return True
        if grad == "on":
            return False
        if self._withs_grad(effect.ctx) is not None:
            return True
        if self._after_grad_off_statement(effect.ctx.scope, effect.order):
            return True
        return effect.ctx.scope in off_fns

    def _withs_grad(self, ctx: Context) -> Optional[str]:
        found = None
        for with_node in ctx.withs:
            for item in with_node.items:
                mode = self._with_grad(item, ctx.scope)
                if mode == "off":
                    return "off"
                if mode == "ambiguous":
                    found = "ambiguous"
        return found

    def _after_grad_off_statement(self, scope: str, order: int) -> bool:
        for where, at in self._grad_off_statement_orders():
            if where == MODULE_SCOPE and scope == MODULE_SCOPE and at < order:
                return True
            if where == scope and at < order:
                return True
            if where == MODULE_SCOPE and scope != MODULE_SCOPE:
                return True  # set once for the whole program
        return False

    def protected(self, effect: Effect) -> bool:
        """Whether a forward runs with grad off (or may: a flag, an unknown context manager)."""
        return self._site_grad_off(effect, self.grad_off_functions())

    def certainly_grad_off(self, effect: Effect) -> bool:
        """Whether a forward (or call) runs with grad off on every path: inside ``with
        torch.no_grad()`` (not a flag or an unknown context manager), or in a function decorated
        so. What it computes carries no gradient."""
        if effect.ctx.grad == "off":
            return True
        if effect.ctx.grad == "on" or (effect.ctx.grad or "").startswith("flag"):
            return False
        return self._withs_grad(effect.ctx) == "off" or effect.ctx.scope in self.grad_off_functions()

    def frozen(self, ref: str, scope: str) -> bool:
        """Whether every parameter of the model is frozen (``requires_grad_(False)``), so a
        forward builds no graph."""
        if self._frozen is None:
            found: Set[str] = set()
            for call, ctx in self.m.calls:
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_" and call.args:
                    value = call.args[0].value
                    if isinstance(value, cst.Name) and value.value == "False":
                        receiver = self._receiver(func.value)
                        if receiver:
                            found.add(self._param_owner(receiver, ctx) or receiver)
            for targets, value, ctx in self.m.assignments:
                if isinstance(value, cst.Name) and value.value == "False":
                    for target in targets:
                        if target.endswith(".requires_grad"):
                            owner = self._param_owner(target[: -len(".requires_grad")], ctx)
                            if owner:
                                found.add(owner)
            self._frozen = found
        canonical = self.m.canonical(ref, scope)
        return any(ref == f or ref.startswith(f + ".") or canonical == f or canonical.startswith(f + ".") for f in self._frozen)

    def _param_owner(self, tensor: str, ctx: Context) -> Optional[str]:
        """``p`` bound by ``for p in model.parameters()``: ``model``."""
        loop = ctx.loop
        while loop is not None:
            if tensor in loop.targets or (loop.targets and tensor == loop.targets[-1]):
                node = loop.node
                if isinstance(node, cst.For):
                    expr = node.iter
                    for _ in range(5):
                        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in (
                            "parameters",
                            "named_parameters",
                        ):
                            return self._receiver(expr.func.value)
                        if isinstance(expr, cst.Call) and expr.args:
                            expr = expr.args[0].value
                            continue
                        break
                return None
            loop = loop.parent
        return None

    def _receiver(self, expr: cst.BaseExpression) -> Optional[str]:
        """The model a call chain acts on: ``model.to(dev).eval()`` -> ``model``."""
        for _ in range(10):
            ref = ref_of(expr)
            if ref is not None:
                return ref
            if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
                expr = expr.func.value
                continue
            return None
        return None

