"""Does this output reach a backward pass? Training facts (which functions and loops backpropagate
or step an optimizer) and the data flow of each scope's statements from a forward's output to
``backward()`` / ``torch.autograd.grad``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics.model import (
    ANY,
    BACKWARD,
    CALL,
    MODULE_SCOPE,
    Effect,
    STEP,
    FileModel,
    Loop,
    translate,
)
from mllint.semantics.names import dotted, ref_of
from mllint.semantics.phases.words import _head
from mllint.semantics.tree import children as tree_children
from mllint.semantics.tree import visit as tree_visit

# --- data flow: the statements of one scope ----------------------------------------------------------


class _Reads(cst.CSTVisitor):
    """References read by an expression (maximal dotted chains and names) and its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: Set[str] = set()
        self.calls: List[cst.Call] = []
        self.yields = False

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        name = dotted(node)
        if name is not None:
            self.refs.add(name)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        self.refs.add(node.value)

    def visit_Arg(self, node: cst.Arg) -> bool:
        tree_visit(node.value, self)
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_Yield(self, node: cst.Yield) -> None:
        self.yields = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def _reads(*nodes: Optional[cst.CSTNode]) -> _Reads:
    visitor = _Reads()
    for node in nodes:
        if node is not None:
            tree_visit(node, visitor)
    return visitor


def _target_refs(target: cst.BaseExpression) -> List[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        out: List[str] = []
        for element in target.elements:
            out.extend(_target_refs(element.value))
        return out
    if isinstance(target, cst.StarredElement):
        return _target_refs(target.value)
    if isinstance(target, cst.Subscript):
        base = ref_of(target.value)
        return [base] if base else []
    ref = dotted(target)
    return [ref] if ref else []


@dataclass
class _Stmt:
    node: cst.CSTNode
    reads: Set[str]
    writes: List[str]
    kill: bool  # a plain assignment: its targets lose what they held
    calls: Set[cst.Call]
    sink_reads: Set[str] = field(default_factory=set)  # what backward()/autograd.grad read
    sink_calls: Set[cst.Call] = field(default_factory=set)  # calls inside a backward()/autograd.grad expression
    returns: bool = False
    mutates: Set[str] = field(default_factory=set)  # receivers of method calls with arguments (outs.append(x))
    local_args: List[Tuple[str, str, Set[str], Set[cst.Call]]] = field(default_factory=list)  # callee, param, reads, calls
    # the branches it sits in, outermost first: (id of the if/loop/try, which part); a plain
    # assignment kills only for a statement whose branches start with these (see _feeds_in_scope)
    branches: Tuple[Tuple[int, str], ...] = ()


def _hits(reads: Iterable[str], tainted: Iterable[str]) -> bool:
    tainted = list(tainted)
    for r in reads:
        for t in tainted:
            if r == t or r.startswith(t + ".") or r.startswith(t + "["):
                return True
    return False




class BackwardFlow:
    """Which code trains, and whether a value reaches a backward pass."""

    m: FileModel

    # --- training -------------------------------------------------------------------------------------
    def _autograd_call(self, call: cst.Call) -> bool:
        qual = self.qual(call.func)
        return qual.endswith(("autograd.grad", "autograd.backward", "autograd.functional.jacobian", "autograd.functional.vjp"))

    def _closure(self, initial: Set[str]) -> Set[str]:
        found = set(initial)
        changed = True
        while changed:
            changed = False
            for effect in self.m.effects:
                if effect.kind == CALL and effect.callee in found and effect.ctx.scope not in found and effect.ctx.scope in self.m.functions:
                    found.add(effect.ctx.scope)
                    changed = True
        return found

    def _project_backward_call(self, call: cst.Call, scope: str) -> bool:
        """A call of a function of another file of the project that runs a backward pass: a
        method inherited from a project base class (``self._backward(loss)`` of a
        ``BaseTrainer``) or an imported function; what it is handed feeds that backward pass."""
        project = self.m.project
        if project is None:
            return False
        name = dotted(call.func)
        if not name:
            return False
        if name.startswith("self.") and name.count(".") == 1:
            cls = self.m.class_scope_of(scope)
            found = project.inherited_method(cls, name[len("self."):]) if cls and "." not in cls else None
        elif isinstance(call.func, cst.Name) or not name.startswith("self."):
            qual = self.qual(call.func)
            found = project.function_defined(qual) if qual else None
        else:
            found = None
        return found is not None and found[1].backward

    @property
    def backprop_functions(self) -> Set[str]:
        """Functions that run a backward pass or torch.autograd.grad (themselves or through helpers)."""
        if self._backprop_fns is None:
            initial = {e.ctx.scope for e in self.m.effects if e.kind == BACKWARD}
            initial |= {ctx.scope for call, ctx in self.m.calls
                        if self._autograd_call(call) or self._project_backward_call(call, ctx.scope)}
            self._backprop_fns = self._closure({s for s in initial if s in self.m.functions})
        return self._backprop_fns

    @property
    def step_functions(self) -> Set[str]:
        if self._step_fns is None:
            initial = {e.ctx.scope for e in self.m.effects if e.kind == STEP}
            self._step_fns = self._closure({s for s in initial if s in self.m.functions})
        return self._step_fns

    def trains(self, key: str) -> bool:
        return key in self.backprop_functions or key in self.step_functions

    def trained_before(self, effect: Effect, since: Optional[int] = None, since_loop: Optional[Loop] = None) -> bool:
        """Whether training may have run in ``effect``'s scope by the time it runs: a backward
        pass, an optimizer step, ``torch.autograd.grad`` or a call of a training helper
        (``train(model)``) earlier in program order, or anywhere in a loop around it (its next
        iteration comes after). Training that only comes later in straight-line code (a
        shape check of a fresh model, then the real model is built and trained) does not count.

        `since` (the order of the statement that built the model, in `since_loop`): only training
        after it counts. A model built after another one was trained (a notebook that trains
        one model, then builds a fresh layer and checks its output shape) has not been trained;
        in a loop around both the build and the forward, each iteration builds it afresh."""
        loops: List[Loop] = []
        loop = effect.ctx.loop
        while loop is not None:
            loops.append(loop)
            loop = loop.parent

        def before(order: int, other_loop: Optional[Loop]) -> bool:
            if since is None:
                return order < effect.order or any(outer.encloses(other_loop) for outer in loops)
            if since < order < effect.order:
                return True
            return any(outer.encloses(other_loop) and not outer.encloses(since_loop) for outer in loops)

        scope = effect.ctx.scope
        for other in self.m.effects_in(scope):
            training = other.kind in (BACKWARD, STEP) or (
                other.kind == CALL and (other.callee in self.backprop_functions or other.callee in self.step_functions)
            )
            if training and before(other.order, other.ctx.loop):
                return True
        for call, ctx in self.calls_in(scope):
            if self._autograd_call(call) and before(self.m.call_order.get(call, effect.order), ctx.loop):
                return True
        return False

    def file_trains(self) -> bool:
        return any(e.kind in (BACKWARD, STEP) for e in self.m.effects) or any(self._autograd_call(c) for c, _ in self.m.calls)

    def loop_backprops(self, loop: Loop) -> bool:
        """A backward pass (or autograd.grad) runs somewhere in the loop, helpers included."""
        key = id(loop.node)
        if key not in self._loop_backprops:
            found = False
            for effect in self.m.effects_in(loop.scope):
                if not loop.encloses(effect.ctx.loop):
                    continue
                if effect.kind == BACKWARD or (effect.kind == CALL and effect.callee in self.backprop_functions):
                    found = True
                    break
            if not found:
                found = any(loop.encloses(ctx.loop) and self._autograd_call(call) for call, ctx in self.calls_in(loop.scope))
            self._loop_backprops[key] = found
        return self._loop_backprops[key]

    def loop_steps(self, loop: Loop) -> List[str]:
        """Optimizers stepped somewhere in the loop (refs in the loop's scope; ANY when unknown)."""
        out = []
        for effect in self.m.effects_in(loop.scope):
            if not loop.encloses(effect.ctx.loop):
                continue
            if effect.kind == STEP:
                out.append(effect.ref)
            elif effect.kind == CALL and effect.callee in self.step_functions:
                summary = self.m.summaries.get(effect.callee or "")
                refs = []
                if summary is not None:
                    refs = [translate(s.ref, effect.args or {}) for s in summary.top_steps] + [
                        translate(r, effect.args or {}) for r in summary.loop_steps
                    ]
                out.extend(refs or [ANY])
        return out

    def loop_trains(self, loop: Loop) -> bool:
        return self.loop_backprops(loop) and bool(self.loop_steps(loop))

    # --- data flow --------------------------------------------------------------------------------------
    def _scope_body(self, scope: str) -> Optional[cst.CSTNode]:
        if scope == MODULE_SCOPE:
            return self.m.module
        fn = self.m.functions.get(scope)
        return fn.node.body if fn is not None else None

    def flow(self, scope: str) -> List[_Stmt]:
        """The statements of a scope in source order (compound statements: their header)."""
        if scope in self._flows:
            return self._flows[scope]
        stmts: List[_Stmt] = []
        call_effects = {e.node: e for e in self.m.effects_in(scope) if e.kind == CALL}
        module_names = set(self.m.imports.aliases)
        path: List[Tuple[int, str]] = []

        def add(node, reads: _Reads, writes, kill):
            stmt = _Stmt(node, set(reads.refs), list(writes), kill, set(reads.calls))
            stmt.branches = tuple(path)
            stmt.returns = reads.yields
            for call in reads.calls:
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value in ("backward", "manual_backward"):
                    inner = _reads(func.value, *[a.value for a in call.args])
                    stmt.sink_reads |= inner.refs
                    stmt.sink_calls |= set(inner.calls)
                elif self._autograd_call(call) or self._project_backward_call(call, scope):
                    inner = _reads(*[a.value for a in call.args])
                    stmt.sink_reads |= inner.refs
                    stmt.sink_calls |= set(inner.calls)
                effect = call_effects.get(call)
                if effect is not None and effect.callee in self.m.functions:
                    for param, expr in self._bind_exprs(effect.callee, call).items():
                        inner = _reads(expr)
                        stmt.local_args.append((effect.callee, param, inner.refs, set(inner.calls)))
            stmts.append(stmt)
            return stmt

        def small(node: cst.BaseSmallStatement):
            if isinstance(node, cst.Assign):
                writes = [r for t in node.targets for r in _target_refs(t.target)]
                add(node, _reads(node.value), writes, True)
            elif isinstance(node, cst.AnnAssign):
                if node.value is not None:
                    add(node, _reads(node.value), _target_refs(node.target), True)
            elif isinstance(node, cst.AugAssign):
                add(node, _reads(node.target, node.value), _target_refs(node.target), False)
            elif isinstance(node, cst.Return):
                stmt = add(node, _reads(node.value), [], False)
                stmt.returns = True
            else:
                stmt = add(node, _reads(node), [], False)
                # ``outs.append(out)``, ``metric.update(out, y)``: the receiver now holds the value
                value = node.value if isinstance(node, cst.Expr) else None
                if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.args:
                    receiver = dotted(value.func.value)
                    if receiver and _head(receiver) not in module_names and receiver not in ("self", "super"):
                        stmt.mutates.add(receiver)

        def branch(node, part, body, walk=None):
            path.append((id(node), part))
            try:
                (walk or suite)(body)
            finally:
                path.pop()

        def suite(body):
            if isinstance(body, (cst.SimpleStatementSuite,)):
                for item in body.body:
                    small(item)
            elif isinstance(body, (cst.IndentedBlock, cst.Module)):
                for item in body.body:
                    statement(item)

        def statement(node):
            if isinstance(node, cst.SimpleStatementLine):
                for item in node.body:
                    small(item)
            elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                return
            elif isinstance(node, cst.For):
                add(node, _reads(node.iter), _target_refs(node.target), True)
                branch(node, "body", node.body)
                if node.orelse is not None:
                    branch(node, "else", node.orelse.body)
            elif isinstance(node, cst.While):
                add(node, _reads(node.test), [], False)
                branch(node, "body", node.body)
                if node.orelse is not None:
                    branch(node, "else", node.orelse.body)
            elif isinstance(node, cst.If):
                add(node, _reads(node.test), [], False)
                branch(node, "if", node.body)
                orelse = node.orelse
                if isinstance(orelse, cst.If):
                    branch(node, "else", orelse, statement)  # ``elif``
                elif orelse is not None:
                    branch(node, "else", orelse.body)
            elif isinstance(node, cst.With):
                for item in node.items:
                    writes = _target_refs(item.asname.name) if item.asname is not None else []
                    add(node, _reads(item.item), writes, bool(writes))
                suite(node.body)
            elif isinstance(node, cst.Try) or type(node).__name__ == "TryStar":
                branch(node, "try", node.body)
                for handler in node.handlers:
                    branch(handler, "except", handler.body)
                if node.orelse is not None:
                    branch(node, "else", node.orelse.body)
                if node.finalbody is not None:
                    suite(node.finalbody.body)
            else:
                for child in tree_children(node):
                    if isinstance(child, cst.BaseSuite):
                        suite(child)

        body = self._scope_body(scope)
        if body is not None:
            suite(body)
        self._flows[scope] = stmts
        index: Dict[cst.Call, int] = {}
        for i, stmt in enumerate(stmts):
            for call in stmt.calls:
                index.setdefault(call, i)
        self._stmt_of[scope] = index
        return stmts

    def _bind_exprs(self, key: str, call: cst.Call) -> Dict[str, cst.BaseExpression]:
        fn = self.m.functions[key]
        params = list(fn.params)
        mapping: Dict[str, cst.BaseExpression] = {}
        if fn.cls and params and params[0] in ("self", "cls"):
            params = params[1:]
        index = 0
        for arg in call.args:
            if arg.star:
                return {}
            if arg.keyword is not None:
                mapping[arg.keyword.value] = arg.value
            elif index < len(params):
                mapping[params[index]] = arg.value
                index += 1
        return mapping

    def _sinks_possible(self) -> bool:
        """Whether the file may hold a backward pass for values to reach (`flow`'s sinks:
        ``.backward()``/``.manual_backward()`` calls and ``torch.autograd`` functions, whose
        qualified names come from imports that spell ``autograd``). Without one, every
        backward set is empty and no value feeds a backward pass: the data flow of the
        file's scopes need not be built at all. Read once per file."""
        if self._sinks is None:
            source = self.m.source
            self._sinks = "backward" in source or "autograd" in source
        return self._sinks

    def _backward_sets(self) -> Dict[str, Set[str]]:
        """For each scope, the references whose values reach a backward pass in it
        (flow-insensitive; through assignments, containers and local helpers)."""
        if self._backward_refs is not None:
            return self._backward_refs
        scopes = list(self.m.functions) + [MODULE_SCOPE]
        sets: Dict[str, Set[str]] = {s: set() for s in scopes}
        for _ in range(10 if self._sinks_possible() else 0):
            changed = False
            for scope in scopes:
                b = sets[scope]
                before = len(b)
                stmts = self.flow(scope)
                for stmt in stmts:
                    b |= stmt.sink_reads
                    for callee, param, reads, _calls in stmt.local_args:
                        if _hits(sets.get(callee, ()), [param]) or param in sets.get(callee, ()):
                            b |= reads
                grew = True
                while grew:
                    grew = False
                    for stmt in stmts:
                        targets = stmt.writes + list(stmt.mutates)
                        if targets and any(_hits([w], b) or _hits(b, [w]) for w in targets):
                            new = stmt.reads - b
                            if new:
                                b |= new
                                grew = True
                if len(b) != before:
                    changed = True
            if not changed:
                break
        self._backward_refs = sets
        attrs: Dict[str, Set[str]] = {}
        for key, fn in self.m.functions.items():
            if fn.cls is not None:
                attrs.setdefault(fn.cls, set()).update(r for r in sets[key] if r.startswith("self."))
        self._class_backward_attrs = attrs
        return sets

    def feeds_backward(self, node: cst.CSTNode, scope: str, _seen: Optional[Set[cst.CSTNode]] = None) -> bool:
        """Whether the value of call ``node`` (a forward, or a call of a local function)
        reaches a backward pass: in its scope after it, or through a return to a caller
        whose use of the result reaches one, or through a ``self`` attribute some method
        backpropagates."""
        if not self._sinks_possible():
            return False  # nothing in the file backpropagates: no value reaches a backward pass
        if node in self._feeds:
            return self._feeds[node]
        seen = _seen or set()
        if node in seen:
            return False
        seen.add(node)
        result = self._feeds_in_scope(node, scope, seen)
        if _seen is None:
            self._feeds[node] = result
        return result

    def _feeds_in_scope(self, node: cst.CSTNode, scope: str, seen: Set[cst.CSTNode]) -> bool:
        stmts = self.flow(scope)
        index = self._stmt_of[scope].get(node)  # type: ignore[arg-type]
        if index is None:
            return False
        sets = self._backward_sets()
        fn = self.m.functions.get(scope)
        cls_attrs = self._class_backward_attrs.get(fn.cls, set()) if fn is not None and fn.cls else set()  # type: ignore[union-attr]

        def local_feed(stmt: _Stmt, tainted: Set[str], source: Optional[cst.CSTNode]) -> bool:
            for callee, param, reads, calls in stmt.local_args:
                if (source is not None and source in calls) or (tainted and _hits(reads, tainted)):
                    if param in sets.get(callee, ()) or any(r.startswith(param + ".") for r in sets.get(callee, ())):
                        return True
            return False

        first = stmts[index]
        if node in first.sink_calls or local_feed(first, set(), node):
            return True
        tainted: Set[str] = set(first.writes) | first.mutates if first.writes or first.mutates else set()
        returned = first.returns
        if any(_hits([w], cls_attrs) for w in tainted if w.startswith("self.")):
            return True
        # A plain assignment kills what a name held. One in a branch the value's own statement
        # is not in (``else: pred = other(x)`` after ``if ...: pred = helper(x)``, a later loop's
        # body) kills it only inside that branch: after the branch, the path may have skipped it.
        killed: Dict[str, Tuple[Tuple[int, str], ...]] = {}
        for stmt in stmts[index + 1:]:
            if not tainted:
                break
            live = tainted
            if killed:
                live = {t for t in tainted if t not in killed or stmt.branches[:len(killed[t])] != killed[t]}
            if _hits(stmt.reads, live):
                if _hits(stmt.sink_reads, live) or local_feed(stmt, live, None):
                    return True
                if stmt.returns:
                    returned = True
                new = set(stmt.writes) | stmt.mutates
                if any(_hits([w], cls_attrs) for w in new if w.startswith("self.")):
                    return True
                tainted |= new
                for name in new:
                    killed.pop(name, None)
            elif stmt.kill:
                if first.branches[:len(stmt.branches)] == stmt.branches:
                    tainted -= set(stmt.writes)
                else:
                    for name in stmt.writes:
                        if name in tainted:
                            killed[name] = stmt.branches
        if returned and fn is not None:
            for site in self.call_sites(scope):
                if self.feeds_backward(site.node, site.ctx.scope, seen):
                    return True
        return False

