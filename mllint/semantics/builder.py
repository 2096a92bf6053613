"""One walk over the tree that fills a FileModel."""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from mllint.project.facts import SELF_RETURNING
from mllint.semantics import roles as R
from mllint.semantics.model import (
    ANY,
    BACKWARD,
    CALL,
    CLEAR,
    EACH_GRAD,
    EVAL,
    FORWARD,
    FRESH,
    MODE_UNKNOWN,
    MODULE_SCOPE,
    STEP,
    TRAIN,
    ClassInfo,
    Cond,
    Context,
    Effect,
    FileModel,
    Function,
    Loop,
)
from mllint.semantics.names import dotted, ref_of, target_names
from mllint.semantics.tree import TRIVIA_FIELDS, children as tree_children, visit as tree_visit

# Entering one starts an empty store of gradients (torch.distributed.autograd).
DIST_AUTOGRAD_CONTEXTS = {"torch.distributed.autograd.context"}
GRAD_OFF_CONTEXTS = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"}
GRAD_ON_CONTEXTS = {"torch.enable_grad", "torch.autograd.enable_grad"}
SET_GRAD_ENABLED = {"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"}
# Calls that return (a wrapper of) their first argument when iterated or used as a model.
_ITER_WRAPPERS = {"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "iter", "zip", "list", "rich.progress.track", "track"}
# Methods of a model that run it on an input (a forward by another name).
_INFERENCE_METHOD = re.compile(
    r"^(predict|predict_step|infer|inference|encode|decode|translate|transcribe|embed|extract_features|classify|"
    r"detect|segment|reconstruct|beam_search|greedy_decode|forward_\w+)$"
)
_MODEL_WRAPPERS = ("DistributedDataParallel", "DataParallel", "compile", "FullyShardedDataParallel", "prepare")
# Module methods that return the module itself (the project facts' list, one place for both);
# ``.type(...)`` only with its one argument (without, it returns a string)
_MODEL_RETURNING_METHODS = SELF_RETURNING - {"type"}
_CONDITIONAL_NODES = (cst.If, cst.Try, cst.Match) if hasattr(cst, "Match") else (cst.If, cst.Try)
try:
    _CONDITIONAL_NODES = _CONDITIONAL_NODES + (cst.TryStar,)  # type: ignore[attr-defined]
except AttributeError:
    pass


def _positional_and_keywords(call: cst.Call) -> Tuple[List[cst.BaseExpression], Dict[str, cst.BaseExpression]]:
    positional, keywords = [], {}
    for arg in call.args:
        if arg.keyword is not None:
            keywords[arg.keyword.value] = arg.value
        elif not arg.star:
            positional.append(arg.value)
    return positional, keywords


def grad_mode_of(qualname: Optional[str], call: Optional[cst.Call]) -> Optional[str]:
    """Grad mode set by a context manager or decorator expression (None if not one)."""
    if qualname in GRAD_OFF_CONTEXTS:
        if qualname == "torch.inference_mode" and call is not None and call.args:
            value = call.args[0].value
            if isinstance(value, cst.Name) and value.value == "False":
                return "on"
        return "off"
    if qualname in GRAD_ON_CONTEXTS:
        return "on"
    if qualname in SET_GRAD_ENABLED and call is not None and call.args:
        value = call.args[0].value
        if isinstance(value, cst.Name) and value.value in ("True", "False"):
            return "on" if value.value == "True" else "off"
        name = dotted(value)
        return f"flag:{name}" if name else "flag:?"
    return None


def _condition_text(module: cst.Module, test: cst.BaseExpression) -> str:
    """An ``if`` test as a Cond compares it: its code on one line, one kind of quote."""
    return " ".join(module.code_for_node(test).split()).replace('"', "'")


class _Builder(cst.CSTVisitor):
    def __init__(self, model: FileModel) -> None:
        super().__init__()
        self.m = model
        self.scope = MODULE_SCOPE
        self.cls: Optional[str] = None
        self.loop: Optional[Loop] = None
        self.conditional = False
        self.grad: Optional[str] = None
        self.statement: Optional[cst.CSTNode] = None
        self.block: Optional[cst.CSTNode] = model.module
        self.withs: Tuple[cst.With, ...] = ()
        self.order = 0
        self.guard: Optional[cst.BaseExpression] = None
        self.conds: Tuple[Cond, ...] = ()
        self.pending_calls: List[Tuple[cst.Call, Context, int]] = []
        self.lambdas: List[cst.Lambda] = []  # the lambdas being walked, innermost last
        self._following: set = set()  # callables whose calls are being followed (no recursion)
        # ref -> (scope, position, what it adds, innermost loop) for each in-place growth of a
        # collection seen so far (``params.append(p)``, ``params += [...]``): see _grown
        self.growth: Dict[str, List[Tuple[str, float, cst.BaseExpression, Optional[Loop]]]] = {}

    # --- the walk ----------------------------------------------------------------------
    def walk(self, node: cst.CSTNode) -> None:
        """Visit ``node`` and its descendants in source order, calling ``visit_<Type>`` and
        ``leave_<Type>`` like ``node.visit(self)`` does, without LibCST's generic visit
        machinery (which rebuilds and re-validates every node and dispatches per attribute:
        most of the cost of building the model)."""
        hooks = _HOOKS.get(type(node))
        if hooks is None:
            hooks = _HOOKS[type(node)] = _hooks_for(type(self), type(node))
        enter, leave, fields = hooks
        if enter is not None and enter(self, node) is False:
            if leave is not None:
                leave(self, node)
            return
        for name in fields:
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                self.walk(value)
            elif isinstance(value, (tuple, list)):
                for item in value:
                    if isinstance(item, cst.CSTNode):
                        self.walk(item)
        if leave is not None:
            leave(self, node)

    # --- context ---------------------------------------------------------------------
    def ctx(self) -> Context:
        return Context(
            self.scope, self.loop, self.conditional, self.grad, self.statement, self.block, self.withs, self.guard, self.conds
        )

    def _bind_local(self, name: str) -> None:
        if "." not in name and "[" not in name and self.scope != MODULE_SCOPE:
            self.m.locals.setdefault(self.scope, set()).add(name)

    def _next(self) -> int:
        self.order += 1
        return self.order

    def _visit_block(self, suite: cst.BaseSuite) -> None:
        saved = self.block
        self.block = suite
        self.walk(suite)
        self.block = saved

    def _visit_in(self, node: Optional[cst.CSTNode], **changes) -> None:
        if node is None:
            return
        saved = {k: getattr(self, k) for k in changes}
        for k, v in changes.items():
            setattr(self, k, v)
        if isinstance(node, cst.BaseSuite):
            self._visit_block(node)
        else:
            self.walk(node)
        for k, v in saved.items():
            setattr(self, k, v)

    # --- statements ------------------------------------------------------------------
    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.statement = node

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.statement = None

    def visit_Import(self, node: cst.Import) -> bool:
        self.m.imports.add_import(node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.m.imports.add_import_from(node)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        for decorator in node.decorators:
            self.walk(decorator)
        bases = tuple(self.m.imports.qualname(b.value) or "" for b in node.bases)
        name = node.name.value
        info = ClassInfo(name, node, bases, is_module=False)
        for stmt in node.body.body:
            if isinstance(stmt, cst.FunctionDef):
                info.methods.add(stmt.name.value)
        self.m.classes[name] = info
        saved_cls = self.cls
        self.cls = name
        self._visit_in(node.body, scope=name if self.scope == MODULE_SCOPE else f"{self.scope}.{name}", loop=None, conditional=False, statement=node)
        self.cls = saved_cls
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        decorators = []
        grad = None
        for decorator in node.decorators:
            expr = decorator.decorator
            call = expr if isinstance(expr, cst.Call) else None
            qual = self.m.imports.qualname(call.func if call else expr) or ""
            decorators.append(qual)
            grad = grad_mode_of(qual, call) or grad
            self._visit_in(decorator, statement=node)
        for param in node.params.params + node.params.kwonly_params + node.params.posonly_params:
            if param.default is not None:
                self._visit_in(param.default, statement=node)
        name = node.name.value
        if self.scope == MODULE_SCOPE:
            key = name
        else:
            key = f"{self.scope}.{name}"
        params = tuple(p.name.value for p in list(node.params.posonly_params) + list(node.params.params))
        kwonly = tuple(p.name.value for p in node.params.kwonly_params)
        in_class_body = self.cls is not None and self.scope.rsplit(".", 1)[-1] == self.cls
        func = Function(key, node, self.cls if in_class_body else None, params + kwonly, tuple(decorators), grad)
        self.m.functions[key] = func
        local_names = self.m.locals.setdefault(key, set())
        local_names.update(params + kwonly)
        for star in (node.params.star_arg, node.params.star_kwarg):
            if isinstance(star, cst.Param):
                local_names.add(star.name.value)
        for param in list(node.params.params) + list(node.params.kwonly_params) + list(node.params.posonly_params):
            if param.annotation is not None:
                annotation = self.m.imports.qualname(param.annotation.annotation)
                role = R.role_of_annotation(annotation)
                if role:
                    self.m.roles.setdefault(key, param.name.value, set()).add(role)
                if role == R.OPTIMIZER:
                    self.m.optimizer_kinds.put(key, param.name.value, frozenset({annotation or ""}))
        self._visit_in(node.body, scope=key, loop=None, conditional=False, grad=grad, statement=None, withs=(), guard=None, conds=())
        return False

    def visit_Lambda(self, node: cst.Lambda) -> Optional[bool]:
        self.lambdas.append(node)
        return True  # a lambda's calls are treated as happening where it is written

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self.lambdas.pop()

    # --- control flow ------------------------------------------------------------------
    def _loop_targets(self, target: cst.BaseExpression) -> Tuple[str, ...]:
        names = []
        for n in target_names(target):
            names.append(n)
            self.m.iteration_vars.add(n)
            self._bind_local(n)
        return tuple(names)

    def visit_For(self, node: cst.For) -> bool:
        self.walk(node.iter)
        iter_ref, iter_call = self._iterated(node.iter)
        loop = Loop(node, self.scope, self.loop, self._loop_targets(node.target), iter_ref, iter_call, node.body, self._next(),
                    _trip_count(node.iter), self.conds)
        self.m.loops.append(loop)
        self._visit_in(node.body, loop=loop, conditional=False, statement=None, guard=None)
        self._visit_in(node.orelse, statement=None, conditional=True)
        return False

    def visit_While(self, node: cst.While) -> bool:
        loop = Loop(node, self.scope, self.loop, (), None, None, node.body, self._next())
        self.m.loops.append(loop)
        self._visit_in(node.test, loop=loop, conditional=False, statement=node, guard=None)
        self._visit_in(node.body, loop=loop, conditional=False, statement=None, guard=None)
        self._visit_in(node.orelse, statement=None, conditional=True)
        return False

    def visit_If(self, node: cst.If) -> bool:
        self._visit_in(node.test, statement=node)
        # the test is rendered when a condition is first compared; the else branch reads the if's
        yes = Cond(None, "if", self.loop, node.test, functools.partial(_condition_text, self.m.module, node.test))
        self._visit_in(node.body, conditional=True, statement=None, guard=node.test, conds=self.conds + (yes,))
        # else / elif: under the negation of this test (an elif adds its own test inside)
        no = Cond(None, "else", self.loop, node.test, lambda: yes.text)
        self._visit_in(node.orelse, conditional=True, statement=None, guard=node.test, conds=self.conds + (no,))
        return False

    def visit_Else(self, node: cst.Else) -> bool:
        self._visit_in(node.body, conditional=True, statement=None)
        return False

    def visit_Try(self, node: cst.Try) -> bool:
        # The try body runs unconditionally in the normal case; handlers do not.
        self._visit_in(node.body, statement=None)
        for handler in node.handlers:
            kind = self.m.module.code_for_node(handler.type) if handler.type is not None else ""
            cond = Cond(f"except {kind}".strip(), "except", self.loop, handler.type)
            self._visit_in(handler.body, conditional=True, statement=None, conds=self.conds + (cond,))
        self._visit_in(node.orelse, statement=None)
        self._visit_in(node.finalbody, statement=None)
        return False

    def visit_With(self, node: cst.With) -> bool:
        grad = self.grad
        for item in node.items:
            self._visit_in(item.item, statement=node)
            expr = item.item
            call = expr if isinstance(expr, cst.Call) else None
            mode = grad_mode_of(self.m.imports.qualname(call.func if call else expr), call)
            if mode is not None:
                grad = mode
            if item.asname is not None:
                for name in target_names(item.asname.name):
                    self._bind_local(name)
        self._visit_in(node.body, grad=grad, statement=None, withs=self.withs + (node,))
        return False

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._loop_targets(node.target)

    # --- assignments -------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        targets: List[str] = []
        for target in node.targets:
            targets.extend(target_names(target.target))
        for name in targets:
            self._bind_local(name)
            self._maybe_clear_by_assignment(target.target, node)
            if self.scope == MODULE_SCOPE and name in self.m.imports.aliases and len(targets) == 1 \
                    and isinstance(node.value, cst.Call) and (dotted(node.value.func) or "").split(".", 1)[0] == name:
                # ``import model`` then ``model = model.mnist(...)``: from here on the name holds
                # what the module built, not the module
                del self.m.imports.aliases[name]
                self.m.rebinding_import_calls.add(node.value)
        self._record_assignment(tuple(targets), node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        targets = tuple(target_names(node.target))
        role = R.role_of_annotation(self.m.imports.qualname(node.annotation.annotation))
        for t in targets:
            if role:
                self.m.roles.setdefault(self.scope, t, set()).add(role)
            self._bind_local(t)
        if node.value is not None:
            self._maybe_clear_by_assignment(node.target, node)
            self._record_assignment(targets, node.value)

    def _maybe_clear_by_assignment(self, target: cst.BaseExpression, node: cst.CSTNode) -> None:
        # ``p.grad = None`` (or ``= torch.zeros_like(p)``) clears a gradient.
        if isinstance(target, cst.Attribute) and target.attr.value == "grad":
            tensor = ref_of(target.value)
            self._effect(CLEAR, self._grad_clear_ref(tensor, self.loop), node)

    def _grad_clear_ref(self, tensor: Optional[str], loop: Optional[Loop]) -> str:
        """What clearing ``tensor.grad`` clears: every parameter's gradient when ``tensor``
        runs over parameters (``for p in model.parameters(): p.grad = None``), else only
        that tensor's (``delta.grad.zero_()`` in an adversarial attack), written ``x.grad``."""
        if tensor is None:
            return ANY
        head = tensor.split(".")[0].split("[")[0]
        if "param" in tensor.lower() or tensor.rsplit(".", 1)[-1] in ("weight", "bias"):
            return ANY
        while loop is not None:
            if head in loop.targets:
                if "param" in f"{loop.iter_ref} {loop.iter_call}".lower():
                    return ANY
                if tensor == head and loop.iter_ref is not None and len(loop.targets) == 1:
                    return f"{loop.iter_ref}{EACH_GRAD}"  # for t in tensors: t.grad.zero_()
                return f"{tensor}.grad"
            loop = loop.parent
        return f"{tensor}.grad"

    def _record_assignment(self, targets: Tuple[str, ...], value: cst.BaseExpression) -> None:
        ctx = self.ctx()
        self.m.assignments.append((targets, value, ctx))
        self.m.assignment_order[value] = self._next()
        role, source = self._value_role(value) if len(targets) == 1 else (None, None)
        kind = ""
        if role == R.OPTIMIZER and isinstance(value, cst.Call):
            kind = self.m.imports.qualname(value.func) or dotted(value.func) or ""
        elif source is not None:
            kind = None  # an alias: what it holds is what the source holds (FileModel.canonical)
        for name in targets:
            if kind is not None:
                known = self.m.optimizer_kinds.data.get((self.m.optimizer_kinds.home(self.scope, name), name), frozenset())
                self.m.optimizer_kinds.put(self.scope, name, known | {kind})
        if len(targets) != 1:
            return
        target = targets[0]
        if role is not None:
            self.m.roles.setdefault(self.scope, target, set()).add(role)
            if role == R.OPTIMIZER and isinstance(value, cst.Call):
                self.m.optimizer_params.put(self.scope, target, _parameter_owners(value, self._assigned_value, self._grown))
        if isinstance(value, cst.Call) and dotted(_unwrap_moves(value).func) in self.m.classes:
            self.m.instance_of.setdefault(self.scope, target, dotted(_unwrap_moves(value).func))
        elif isinstance(value, cst.Call) and self.m.project is not None:
            qual = self.m.imports.qualname(_unwrap_moves(value).func)
            if qual and self.m.project.class_named(qual) is not None:
                self.m.project_instance_of.setdefault(self.scope, target, qual)
        if source is not None and source != target:
            self.m.aliases.setdefault(self.scope, target, source)

    def _assigned_value(self, ref: str) -> Optional[cst.BaseExpression]:
        """The value last assigned (so far in the walk) to ``ref`` alone, in this scope or the module."""
        for targets, value, ctx in reversed(self.m.assignments):
            if targets == (ref,) and ctx.scope in (self.scope, MODULE_SCOPE):
                return value
        return None

    def _grown(self, ref: str, value: cst.BaseExpression) -> Optional[List[Optional[FrozenSet[str]]]]:
        """What ``ref`` grew by in place (in this scope or the module) since ``value`` was assigned
        to it, one entry per growth: the models whose parameters it added, from
        ``model.parameters()`` in it or in what the loop whose variable it adds iterates
        (``for p in filter(f, m.parameters()): params.append(p)``), None when neither or when
        the model is itself a loop variable there. None when it did not grow."""
        since = self.m.assignment_order.get(value, 0)
        found: List[Optional[FrozenSet[str]]] = []
        for scope, order, added, loop in self.growth.get(ref, ()):
            if order <= since or scope not in (self.scope, MODULE_SCOPE):
                continue
            owners = _parameter_owners_of(added)
            around: set = set()  # the variables of the loops around the growth
            outer = loop
            while outer is not None:
                if owners is None and isinstance(added, cst.Name) and added.value in outer.targets and isinstance(outer.node, cst.For):
                    owners = _parameter_owners_of(outer.node.iter)  # for p in filter(f, m.parameters()): ...
                around.update(outer.targets)
                outer = outer.parent
            if owners is not None and any(o.split(".", 1)[0].split("[", 1)[0] in around for o in owners):
                owners = None  # for m in models: params += list(m.parameters()): which models is not followed
            found.append(owners)
        return found or None

    def _value_role(self, value: cst.BaseExpression) -> Tuple[Optional[str], Optional[str]]:
        """(role, aliased ref) of an assigned value."""
        ref = ref_of(value)
        if ref is not None:
            return None, ref
        if isinstance(value, cst.Call):
            func = value.func
            qual = self.m.imports.qualname(func)
            name = dotted(func)
            if name is not None and name in self.m.classes:
                cls = self.m.classes[name]
                return (R.MODEL if self._is_module_class(cls) else R.OTHER), None
            if qual and self.m.project is not None and name not in self.m.locals.get(self.scope, ()):
                verdict = self.m.project.is_module(qual)  # a class of another file of the project
                if verdict is not None:
                    return (R.MODEL if verdict else R.OTHER), None
                if self.m.project.returned_model(qual) is not None:
                    return R.MODEL, None  # a factory of another file that builds and returns a module
            role = R.role_of_constructor(qual)
            if role is not None:
                if role == R.MODEL and qual and qual.endswith(_MODEL_WRAPPERS) and value.args:
                    return role, _source_ref(value.args[0].value)
                return role, None
            return None, _source_ref(value)
        return None, None

    def _is_module_class(self, cls: ClassInfo, seen=None) -> bool:
        seen = seen or set()
        if cls.name in seen:
            return False
        seen.add(cls.name)
        for base in cls.bases:
            parent = self.m.classes.get(base)  # a class of this file first: a numpy ``class Module(object)``
            if parent is None and R.is_module_base(base):
                return True
            if parent is not None and self._is_module_class(parent, seen):
                return True
            if parent is None and self.m.project is not None and self.m.project.is_module(base):
                return True  # a base class defined in another file of the project
        return False

    # --- calls -------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        for lam in self.lambdas:
            self.m.lambda_calls.setdefault(lam, []).append(node)
        ctx = self.ctx()
        self.m.calls.append((node, ctx))
        self.pending_calls.append((node, ctx, self._next()))
        self.m.call_order[node] = self.order
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _GROWING_METHODS and node.args:
            collection = ref_of(func.value)
            if collection is not None:
                self._grow(collection, node.args[-1].value)
        elif isinstance(func, cst.Attribute) and func.attr.value == "add_param_group" and node.args:
            self._add_param_group(ref_of(func.value), node.args[0].value)

    def _add_param_group(self, optimizer: Optional[str], group: cst.BaseExpression) -> None:
        """``opt.add_param_group({"params": head.parameters()})``: ``opt`` now holds ``head``'s
        parameters too (its owners become unknown when the group's are)."""
        table = self.m.optimizer_params
        if optimizer is None:
            return
        scope = table.home(self.scope, optimizer)
        while (scope, optimizer) not in table.data:
            if scope == MODULE_SCOPE:
                return
            scope = scope.rsplit(".", 1)[0] if "." in scope else MODULE_SCOPE
        owners = table.data[(scope, optimizer)]
        added = _parameter_owners_of(group)
        # an empty set reads as unknown (FileModel.optimizer_owners)
        table.data[(scope, optimizer)] = frozenset(owners | added) if owners and added else frozenset()

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        collection = ref_of(node.target)
        if collection is not None and isinstance(node.operator, cst.AddAssign):
            self._grow(collection, node.value)

    def _grow(self, collection: str, added: cst.BaseExpression) -> None:
        """Record that ``collection`` grows in place by ``added`` here (after everything
        numbered so far), in the loops around (see _grown)."""
        self.growth.setdefault(collection, []).append((self.scope, self.order + 0.5, added, self.loop))

    def _effect(self, kind: str, ref: str, node: cst.CSTNode, ctx: Optional[Context] = None, **extra) -> None:
        self.m.effects.append(Effect(kind, ref, node, ctx or self.ctx(), self._next(), **extra))

    def visit_Module(self, node: cst.Module) -> None:
        pass

    def leave_Module(self, original_node: cst.Module) -> None:
        # Calls are classified after the walk, when every class and function is known,
        # and after roles have flowed from arguments into the parameters of local helpers.
        # every class is known now: which are modules decides what a call of an instance does
        for cls in self.m.classes.values():
            cls.is_module = self._is_module_class(cls)
        self._roles_from_returns()
        self._roles_from_use()
        self._propagate_roles_to_parameters()
        self._collect_callables()
        for call, ctx, order in self.pending_calls:
            self._classify_call(call, ctx, order)
        self._fresh_optimizers()
        self.m.effects.sort(key=lambda e: e.order)

    def _roles_from_returns(self) -> None:
        """``self.optim = self._get_optim("sgd")`` where the method of the same class returns an
        optimizer it builds (``torch.optim.SGD(self.parameters())``) on some path and, on the
        others, what it was handed: the attribute holds an optimizer over the models the built
        ones hold (a handed-in optimizer is the caller's, over the same model as a rule)."""
        returns_of: Dict[str, List[Optional[cst.BaseExpression]]] = {}
        for targets, value, ctx in list(self.m.assignments):
            if len(targets) != 1 or not isinstance(value, cst.Call) \
                    or self.m.optimizer_params.get(ctx.scope, targets[0]) is not None:
                continue
            name = dotted(value.func) or ""
            if not name.startswith("self.") or name.count(".") != 1:
                continue
            cls = self._enclosing_class(ctx.scope)
            key = self.m.method_key(cls, name.split(".", 1)[1]) if cls else None
            fn = self.m.functions.get(key) if key else None
            if fn is None:
                continue
            owners: set = set()
            built = False
            returns = returns_of.get(key)
            if returns is None:
                returns = returns_of[key] = _returns(fn.node)  # once per method, however often it is called
            for ret in returns:
                ref = ref_of(ret) if ret is not None else None
                if ref is not None and _head(ref) in fn.params:
                    continue  # handed in
                roles = self.m.roles.get(key, ref) if ref else None
                if ref is None or not roles or R.OPTIMIZER not in roles:
                    built = False
                    break
                found = self.m.optimizer_params.get(key, ref)
                if found is None:
                    built = False
                    break
                built = True
                owners |= set(found)
            if built:
                self.m.roles.setdefault(ctx.scope, targets[0], set()).add(R.OPTIMIZER)
                self.m.optimizer_params.put(ctx.scope, targets[0], frozenset(owners))

    def _classify_call(self, call: cst.Call, ctx: Context, order: int) -> None:
        func = call.func
        positional, keywords = _positional_and_keywords(call)

        def emit(kind, ref, **extra):
            self.m.effects.append(Effect(kind, ref, call, ctx, order, **extra))

        qual = self.m.imports.qualname(func)
        if qual in ("torch.autograd.backward",):
            emit(BACKWARD, ANY)
            return
        if qual in DIST_AUTOGRAD_CONTEXTS:
            emit(FRESH, ANY)  # a new distributed autograd context: the gradients of its backward passes live in it
            return
        local = self._resolve_local(func, ctx)
        if local is not None:
            emit(CALL, local, callee=local, args=self._bind_arguments(local, call, func))
            if isinstance(func, cst.Attribute) and func.attr.value == "zero_grad":
                emit(CLEAR, self._clear_ref(ref_of(func.value) or ANY))  # wrapper.zero_grad() of a class in the file
            if (
                isinstance(func, cst.Attribute) and func.attr.value == "forward" and ref_of(func.value) == "self"
                and self._self_is_model(ctx.scope) and not ctx.scope.endswith((".forward", "._forward"))
            ):
                emit(FORWARD, "self")  # self.forward(batch) in a model's own predict(): a forward pass too
            elif isinstance(func, cst.Attribute) and func.attr.value == "forward" and local.endswith(".forward"):
                receiver = ref_of(func.value)
                info = self.m.classes.get(local.rsplit(".", 1)[0])
                if receiver and receiver != "self" and info is not None and (info.is_module or self._is_module_class(info)):
                    emit(FORWARD, receiver)  # model.forward(x) on a module class of this file: a forward pass too
            return
        if self._call_of_callable(call, ctx, order):
            return
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = ref_of(func.value) or ANY
            if method in ("backward", "manual_backward"):
                emit(BACKWARD, receiver)
                return
            if method == "zero_grad" or method == "clear_grad":
                emit(CLEAR, self._clear_ref(receiver))
                return
            parts = receiver.replace("[", ".").split(".")
            if method in ("zero_", "fill_", "mul_") and "grad" in parts:
                tensor = receiver[: receiver.index(".grad")] if ".grad" in receiver else None
                emit(CLEAR, self._grad_clear_ref(tensor, ctx.loop))  # p.grad.zero_(), p.grad.data.zero_()
                return
            if method == "step":
                if self.m.has_role(receiver, R.SCALER, ctx.scope) and positional:
                    emit(STEP, ref_of(positional[0]) or ANY)
                elif self.m.has_role(receiver, R.OPTIMIZER, ctx.scope):
                    emit(STEP, receiver)
                # step(closure): the closure runs inside the step
                for arg in positional[:1] + ([keywords["closure"]] if "closure" in keywords else []):
                    closure = self._resolve_local(arg, ctx) if isinstance(arg, (cst.Name, cst.Attribute)) else None
                    if closure is not None:
                        emit(CALL, closure, callee=closure, args={})
                return
            if method == "optimizer_step" and positional:  # torch_xla's xm.optimizer_step(optimizer)
                emit(STEP, ref_of(positional[0]) or ANY)
                return
            if method == "eval" and not call.args:
                emit(EVAL, receiver)
                return
            if (
                _INFERENCE_METHOD.match(method) and receiver != ANY and not self._parameter(receiver, ctx.scope)
                and self.m.has_role(receiver, R.MODEL, ctx.scope, by_name=False)
                and not self._project_method(receiver, method, ctx.scope)
            ):
                emit(FORWARD, receiver)  # model.predict_step(batch): the model runs (ML005 reads these); known models only, not by name
                return
            if method == "forward" and receiver != ANY and (
                self.m.has_role(receiver, R.MODEL, ctx.scope) or (receiver == "self" and self._self_is_model(ctx.scope))
            ):
                emit(FORWARD, receiver)  # model.forward(x), self.model.forward(x): a forward that skips hooks
                return
            if method == "train":
                mode = TRAIN
                if positional and isinstance(positional[0], cst.Name) and positional[0].value == "False":
                    mode = EVAL
                if "mode" in keywords and isinstance(keywords["mode"], cst.Name) and keywords["mode"].value == "False":
                    mode = EVAL
                if positional or keywords:
                    if mode == TRAIN and not (positional and isinstance(positional[0], cst.Name) and positional[0].value == "True"):
                        emit(MODE_UNKNOWN, receiver)  # train(flag): unknown mode
                        return
                emit(mode, receiver)
                return
        name = dotted(func) or ""
        last = name.rsplit(".", 1)[-1].lower()
        if "zero_grad" in last or (("clear" in last or "reset" in last or "zero" in last) and "grad" in last):
            emit(CLEAR, ANY)  # an unseen helper that clears gradients
            return
        ref = ref_of(func)
        if ref is not None and self.m.has_role(ref, R.MODEL, ctx.scope):
            emit(FORWARD, ref)
        elif ref == "self" and self._self_is_model(ctx.scope):
            emit(FORWARD, ref)  # self(x) in a model's own method (predict, infer)

    # --- optimizers built afresh -------------------------------------------------------------
    def _fresh_optimizers(self) -> None:
        """``opt = SGD(model.parameters())`` inside a loop (or a function, run per call) where
        ``model`` (or the tensors handed over) were also just built in that same pass: the
        optimizer's gradients start empty there, as if cleared (FRESH). An optimizer rebuilt over
        a model that lives on is not fresh: the model's ``.grad`` carries over."""
        for targets, value, ctx in self.m.assignments:
            if len(targets) != 1 or not isinstance(value, cst.Call) or (ctx.loop is None and ctx.scope == MODULE_SCOPE):
                continue
            target = targets[0]
            if "[" in target or not self.m.has_role(target, R.OPTIMIZER, ctx.scope):
                continue
            role, source = self._value_role(value)
            if source is not None:
                continue  # opt = accelerator.prepare(opt): the same optimizer
            if role == R.OPTIMIZER:
                owners = self.m.optimizer_params.get(ctx.scope, target)
            else:  # a factory: build_optimizer(model, cfg)
                refs = [ref_of(a.value) for a in value.args]
                owners = frozenset(r for r in refs if r and self.m.has_role(r, R.MODEL, ctx.scope)) or None
            order = self.m.assignment_order[value]
            if owners is None or all(self._built_before(owner, ctx, order) for owner in owners):
                self.m.effects.append(Effect(FRESH, target, value, ctx, order))

    def _built_before(self, ref: str, ctx: Context, order: int) -> bool:
        """Whether ``ref`` is (re)built from a new object in the same pass as ``ctx`` (same scope and
        innermost loop, under no extra condition), before ``order``."""
        branches: Dict[int, Set[str]] = {}  # an if's test -> its branches that build it
        here = set(ctx.conds)
        for targets, value, other in self.m.assignments:
            if ref not in targets or other.scope != ctx.scope or other.loop is not ctx.loop:
                continue
            if self.m.assignment_order[value] >= order:
                continue
            if len(targets) == 1 and self._value_role(value)[1] is not None:
                continue  # an alias of an object that lives on (model = base.to(device))
            extra = [c for c in other.conds if c not in here]
            if not extra:
                return True
            if len(extra) == 1 and extra[0].branch in ("if", "else") and extra[0].node is not None:
                branches.setdefault(id(extra[0].node), set()).add(extra[0].branch)
        # built in both branches of one if/else: built whichever way the test goes
        return any(found == {"if", "else"} for found in branches.values())

    # --- callables held in variables -------------------------------------------------------
    def _collect_callables(self) -> None:
        """What names hold callables we can follow: ``zero = opt.zero_grad``, ``clear = lambda:
        opt.zero_grad()``, ``reset = reset_grads`` (a function of the file), ``hooks = [opt.zero_grad,
        log]`` or ``hooks.append(...)``, loop variables over such lists, and a parameter every
        call site of its function hands such a callable."""
        table = self.m.callables

        def add(scope: str, name: str, values) -> None:
            values = tuple(v for v in values if isinstance(v, (cst.Attribute, cst.Name, cst.Lambda)))
            if values:
                table.put(scope, name, tuple(table.data.get((table.home(scope, name), name), ())) + values)

        def elements(value):
            if isinstance(value, (cst.List, cst.Tuple)):
                return [e.value for e in value.elements if not isinstance(e, cst.StarredElement)]
            return [value]

        for targets, value, ctx in self.m.assignments:
            if len(targets) == 1 and not isinstance(value, cst.Call):
                add(ctx.scope, targets[0], elements(value))
        for call, ctx, _order in self.pending_calls:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend") and len(call.args) == 1:
                receiver = ref_of(func.value)
                if receiver is not None:
                    value = call.args[0].value
                    add(ctx.scope, receiver, [value] if func.attr.value == "append" else elements(value))
        for loop in self.m.loops:
            if loop.iter_ref and len(loop.targets) == 1 and loop.iter_call is None:
                held = table.get(loop.scope, loop.iter_ref)
                if held:
                    add(loop.scope, loop.targets[0], held)
        # Parameters: only when every call site in the file hands over a callable.
        handed: Dict[Tuple[str, str], List] = {}
        for call, ctx, _order in self.pending_calls:
            local = self._resolve_local(call.func, ctx)
            if local is None:
                continue
            fn = self.m.functions[local]
            params = list(fn.params)
            if fn.cls and params and params[0] in ("self", "cls"):
                params = params[1:]
            positional = [a for a in call.args if a.keyword is None and not a.star]
            for param in fn.params:
                arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == param), None)
                if arg is None and param in params and params.index(param) < len(positional):
                    arg = positional[params.index(param)].value
                handed.setdefault((local, param), []).append(arg)
        function_names = {key.rsplit(".", 1)[-1] for key in self.m.functions}
        for (key, param), args in handed.items():
            if args and all(isinstance(a, (cst.Attribute, cst.Lambda)) or (isinstance(a, cst.Name) and a.value in function_names) for a in args):
                add(key, param, args)

    def _call_of_callable(self, call: cst.Call, ctx: Context, order: int) -> bool:
        """``zero()`` where ``zero`` holds callables we can follow: emit what calling them does
        (the clearing, for bound methods and lambdas; a call of the local function). False when
        ``call`` is not such a call."""
        if not isinstance(call.func, cst.Name):
            return False
        name = call.func.value
        held = self.m.callables.get(ctx.scope, name)
        if not held or (ctx.scope, name) in self._following:
            return False
        fn = self.m.functions.get(ctx.scope)
        handed_in = fn is not None and name in fn.params  # the caller's names mean nothing here
        self._following.add((ctx.scope, name))
        emitted = False
        values, seen = list(held), {name}
        for value in values:  # hooks = [clear] with clear = lambda: ...: follow names to what they hold
            if isinstance(value, cst.Name) and value.value not in seen and self._resolve_local(value, ctx) is None:
                seen.add(value.value)
                values.extend(self.m.callables.get(ctx.scope, value.value) or ())
        for value in values:
            if isinstance(value, cst.Lambda):
                for inner in self.m.lambda_calls.get(value, ()):
                    emitted |= self._emit_clearing(inner, ctx, order, call, handed_in)
                continue
            local = self._resolve_local(value, ctx)
            if local is not None:
                self.m.effects.append(Effect(CALL, local, call, ctx, order, callee=local, args={p: ANY for p in self.m.functions[local].params}))
                emitted = True
            elif isinstance(value, cst.Attribute):
                emitted |= self._emit_clearing(cst.Call(func=value), ctx, order, call, handed_in)
        self._following.discard((ctx.scope, name))
        return emitted

    def _emit_clearing(self, call: cst.Call, ctx: Context, order: int, node: cst.CSTNode, anonymous: bool) -> bool:
        """Emit at ``node`` the gradient clearing that ``call`` does, if it is one (nothing else);
        ``anonymous``: the cleared object is named in another scope, so it becomes ANY."""
        before = len(self.m.effects)
        self._classify_call(call, ctx, order)
        clears = [e for e in self.m.effects[before:] if e.kind == CLEAR]
        del self.m.effects[before:]
        for effect in clears:
            effect.node = node
            if anonymous:
                effect.ref = ANY
        self.m.effects.extend(clears)
        return bool(clears)

    _PROPAGATED_ROLES = (R.OPTIMIZER, R.MODEL, R.SCALER, R.SCHEDULER, R.LOADER)
    # Methods only torch models have (``.eval()``/``.train()`` without arguments or with a
    # literal flag, ``.parameters()``): an object they are called on is a model. Not
    # ``state_dict()``, which optimizers and schedulers have too.
    _MODEL_ONLY_METHODS = frozenset(("eval", "train", "parameters", "named_parameters", "modules", "named_modules", "children"))

    def _roles_from_use(self) -> None:
        """``thing.eval()`` / ``thing.parameters()`` on a name nothing else says anything
        about: ``thing`` is a model in that scope (``self._net``, ``self.module_``, a
        parameter named ``m``)."""
        for call, ctx, _order in self.pending_calls:
            func = call.func
            if not isinstance(func, cst.Attribute) or func.attr.value not in self._MODEL_ONLY_METHODS:
                continue
            if func.attr.value in ("eval", "train") and not (
                not call.args or (len(call.args) == 1 and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value in ("True", "False"))
            ):
                continue  # ``df.eval("a + b")``, ``model.train(flag)`` says nothing new
            receiver = ref_of(func.value)
            if receiver is None or receiver in ("self", "cls") or receiver.split(".", 1)[0] in self.m.imports.aliases:
                continue
            if self.m.roles.get(ctx.scope, receiver) is None and self.m.instance_of.get(ctx.scope, receiver) is None:
                self.m.roles.setdefault(ctx.scope, receiver, set()).add(R.MODEL)

    def _project_method(self, receiver: str, method: str, scope: str) -> bool:
        """``model.evaluate(loader)`` where ``model`` is an instance of a class of another file of
        the project that defines ``evaluate``: what the call does is that method's own code
        (judged where it is written, with its own eval()/no_grad), not a bare forward here."""
        if self.m.project is None:
            return False
        qual = self.m.project_instance_of.get(scope, receiver) or self.m.project_instance_of.get(
            scope, self.m.canonical(receiver, scope))
        return qual is not None and self.m.project.function_named(f"{qual}.{method}") is not None

    def _parameter(self, ref: str, scope: str) -> bool:
        """A parameter of the function (its roles may have been guessed from the callers' names)."""
        fn = self.m.functions.get(scope)
        return fn is not None and ref.split(".", 1)[0].split("[", 1)[0] in fn.params and not ref.startswith("self.")

    def _self_is_model(self, scope: str) -> bool:
        cls = self._enclosing_class(scope)
        info = self.m.classes.get(cls) if cls else None
        return info is not None and (info.is_module or self._is_module_class(info) or "forward" in info.methods)

    def _propagate_roles_to_parameters(self) -> None:
        """``step(o)`` called as ``step(optimizer)``: the parameter ``o`` holds an optimizer."""
        bindings = []
        mappings = []  # per binding, the whole call's parameter -> argument mapping
        for call, ctx, _order in self.pending_calls:
            local = self._resolve_local(call.func, ctx)
            if local is not None:
                mapping = self._bind_arguments(local, call, call.func)
            else:
                local, mapping = self._started_with(call, ctx)
            if local is not None:
                for param, arg in mapping.items():
                    bindings.append((local, param, ctx.scope, arg))
                    mappings.append(mapping)
        for _ in range(3):  # helpers handing arguments on to helpers
            changed = False
            for (callee, param, caller_scope, arg), mapping in zip(bindings, mappings):
                if not arg or arg == ANY:
                    continue
                if not self.m.roles.get(callee, param):
                    found = {role for role in self._PROPAGATED_ROLES if self.m.has_role(arg, role, caller_scope)}
                    if found:
                        self.m.roles.put(callee, param, found)
                        changed = True
                cls = self.m.instance_of.get(caller_scope, arg)
                if cls is not None and self.m.instance_of.get(callee, param) is None:
                    self.m.instance_of.put(callee, param, cls)  # train(agent) with agent = SAC(...)
                    changed = True
                owners = self._owners_in_callee(self.m.optimizer_owners(arg, caller_scope), mapping, caller_scope, callee)
                if owners and self.m.optimizer_params.get(callee, param) is None:
                    self.m.optimizer_params.put(callee, param, owners)
            if not changed:
                break
        # A parameter holds a torch optimizer when every call site in the file hands one over.
        handed: Dict[Tuple[str, str], List[Tuple[str, Optional[str]]]] = {}
        for callee, param, caller_scope, arg in bindings:
            handed.setdefault((callee, param), []).append((caller_scope, arg))
        for _ in range(3):
            for (callee, param), args in handed.items():
                if (callee, param) not in self.m.optimizer_kinds.data and all(
                    arg and self.m.is_torch_optimizer(arg, scope) for scope, arg in args
                ):
                    self.m.optimizer_kinds.put(callee, param, frozenset({"torch.optim.Optimizer"}))

    def _owners_in_callee(self, owners, mapping: Dict[str, Optional[str]], caller_scope: str, callee: str):
        """The models an optimizer handed to ``callee`` holds, named as ``callee`` sees them:
        ``train(net, opt)`` with ``opt`` over ``net.parameters()`` gives ``model`` in ``def
        train(model, optimizer)``. A model handed over by no argument keeps its name only when
        it is a module-level name the callee does not shadow; otherwise None (unknown)."""
        if not owners:
            return None
        out = set()
        for owner in owners:
            named = set()
            for param, arg in mapping.items():
                if not arg or arg == ANY:
                    continue
                if owner == arg or owner.startswith(arg + "."):
                    named.add(param + owner[len(arg):])
                elif arg.startswith(owner + "."):
                    named.add(param)  # a part of the model handed over (``model.encoder``)
            if not named:
                head = owner.split(".", 1)[0].split("[", 1)[0]
                if caller_scope != MODULE_SCOPE or head in ("self", "cls") or self._shadowed(callee, head):
                    return None
                named.add(owner)
            out |= named
        return frozenset(out)

    def _shadowed(self, scope: str, name: str) -> bool:
        """Whether ``name`` is a parameter or local of ``scope`` or of a function around it."""
        while scope != MODULE_SCOPE:
            if name in self.m.locals.get(scope, ()):
                return True
            scope = scope.rsplit(".", 1)[0] if "." in scope else MODULE_SCOPE
        return False

    def _clear_ref(self, receiver: str) -> str:
        head = receiver.split(".")[0].split("[")[0]
        if head in self.m.iteration_vars or "[" in receiver:
            return ANY  # for opt in optimizers: opt.zero_grad(); optimizers[name].zero_grad()
        return receiver

    def _resolve_local(self, func: cst.BaseExpression, ctx: Context) -> Optional[str]:
        """Scope key of the function defined in this file that ``func`` calls, if any."""
        if isinstance(func, cst.Name):
            name = func.value
            scope = ctx.scope
            while True:
                key = name if scope == MODULE_SCOPE else f"{scope}.{name}"
                if key in self.m.functions:
                    return key
                if scope == MODULE_SCOPE:
                    return None
                scope = scope.rsplit(".", 1)[0] if "." in scope else MODULE_SCOPE
        if isinstance(func, cst.Attribute):
            receiver = ref_of(func.value)
            method = func.attr.value
            cls = None
            if receiver in ("self", "cls"):
                cls = self._enclosing_class(ctx.scope)
                if cls and self.m.method_key(cls, method) is None:
                    return self.m.subclass_method_key(cls, method)  # a template method of a base class
            elif receiver is not None:
                cls = self.m.instance_of.get(ctx.scope, receiver)
            key = self.m.method_key(cls, method) if cls else None
            if key is not None and any(d.rsplit(".", 1)[-1] in ("property", "cached_property") for d in self.m.functions[key].decorators):
                return None  # ``self.model(x)`` with ``model`` a property: a call of what it returns
            return key
        return None

    def _enclosing_class(self, scope: str) -> Optional[str]:
        parts = scope.split(".")
        for end in range(len(parts) - 1, 0, -1):
            if parts[end - 1] in self.m.classes:
                return parts[end - 1]
        return None

    def _started_with(self, call: cst.Call, ctx: Context) -> Tuple[Optional[str], Dict[str, Optional[str]]]:
        """``mp.Process(target=test, args=(model,))`` / ``threading.Thread(...)``: the local function
        a process or thread runs, and what its parameters get from ``args=`` (a literal tuple)."""
        if (dotted(call.func) or "").rsplit(".", 1)[-1] not in ("Process", "Thread"):
            return None, {}
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        target = keywords.get("target")
        local = self._resolve_local(target, ctx) if isinstance(target, cst.Name) else None
        if local is None or self.m.functions[local].cls is not None:
            return None, {}
        args = keywords.get("args")
        values = [e.value for e in args.elements] if isinstance(args, (cst.Tuple, cst.List)) else []
        if any(isinstance(e, cst.StarredElement) for e in getattr(args, "elements", ())):
            return None, {}
        params = list(self.m.functions[local].params)
        mapping: Dict[str, Optional[str]] = {p: ANY for p in params}
        for param, value in zip(params, values):
            mapping[param] = ref_of(value) or ANY
        return local, mapping

    def _bind_arguments(self, key: str, call: cst.Call, func: cst.BaseExpression) -> Dict[str, Optional[str]]:
        fn = self.m.functions[key]
        params = list(fn.params)
        mapping: Dict[str, Optional[str]] = {}
        if fn.cls and params and params[0] in ("self", "cls"):
            receiver = ref_of(func.value) if isinstance(func, cst.Attribute) else None
            mapping[params[0]] = receiver or ANY
            params = params[1:]
        index = 0
        for arg in call.args:
            if arg.star:
                return {p: ANY for p in fn.params}
            ref = ref_of(arg.value)
            if arg.keyword is not None:
                mapping[arg.keyword.value] = ref or ANY
            elif index < len(params):
                mapping[params[index]] = ref or ANY
                index += 1
        for p in fn.params:
            mapping.setdefault(p, ANY)  # defaults: unknown
        return mapping


# Per node type: (visit hook, leave hook, the fields that can hold nodes, in source order).
_HOOKS: Dict[type, Tuple] = {}
# Fields that never hold code: whitespace, punctuation, comments, parentheses.
_SKIP_FIELDS = re.compile(
    rf"^({TRIVIA_FIELDS}|indent|asynchronous|operator|default_newline|default_indent|encoding|has_trailing_newline)$"
)


def _hooks_for(builder: type, node_type: type) -> Tuple:
    name = node_type.__name__
    enter = getattr(builder, f"visit_{name}", None)
    leave = getattr(builder, f"leave_{name}", None)
    fields = tuple(f.name for f in dataclasses.fields(node_type) if not _SKIP_FIELDS.match(f.name))
    return enter, leave, fields


def _source_ref(value: cst.BaseExpression) -> Optional[str]:
    """The object an expression returns when it returns (a wrapper of) an existing one:
    ``model.to(device)``, ``DDP(model)``, ``torch.compile(model)``, ``accelerator.prepare(model)``."""
    for _ in range(10):
        ref = ref_of(value)
        if ref is not None or not isinstance(value, cst.Call):
            return ref
        func = value.func
        name = dotted(func) or ""
        if isinstance(func, cst.Attribute) and (
            func.attr.value in _MODEL_RETURNING_METHODS or (func.attr.value == "type" and len(value.args) == 1)
        ):
            value = func.value  # ``net.type(dtype)``: nn.Module.type casts in place and returns the module
        elif (name.rsplit(".", 1)[-1] in _MODEL_WRAPPERS or name.endswith(("prepare", "setup"))) and len(value.args) == 1:
            value = value.args[0].value
        else:
            return None
    return None


def _trip_count(iterable: cst.BaseExpression) -> Optional[int]:
    """How many times a loop over ``range(<literals>)`` or a literal list/tuple runs."""
    if isinstance(iterable, (cst.List, cst.Tuple)) and not any(isinstance(e, cst.StarredElement) for e in iterable.elements):
        return len(iterable.elements)
    if isinstance(iterable, cst.Call) and dotted(iterable.func) == "range" and 1 <= len(iterable.args) <= 2:
        values = []
        for arg in iterable.args:
            if arg.keyword is not None or not isinstance(arg.value, cst.Integer):
                return None
            values.append(int(arg.value.value, 0))
        start, stop = (0, values[0]) if len(values) == 1 else values
        return max(stop - start, 0)
    return None


_GROWING_METHODS = frozenset(("append", "extend", "insert"))


def _parameter_owners(call: cst.Call, assigned=None, grown=None):
    """Models whose ``.parameters()`` an optimizer constructor receives, or the plain tensors
    (and the list holding them) it is given (None: unknown). ``assigned(ref)`` looks up the
    value of a name handed over (``params = [w, b]; SGD(params)``), ``grown(ref, value)`` what
    that collection grew by in place since (``params.append(p)``, ``groups += [...]``)."""
    params = None
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "params":
            params = arg.value
            break
    if params is None:
        return None
    collection = ref_of(params) if isinstance(params, (cst.Name, cst.Attribute)) else None
    growth = None
    if collection is not None and assigned is not None:
        value = assigned(collection)
        if value is None:
            return None
        params = value
        growth = grown(collection, value) if grown is not None else None
    if growth is not None:
        # Built up in place: the models each growth adds, and what the first value held.
        if any(owners is None for owners in growth):
            return None
        found = set().union(*growth)
        if isinstance(params, (cst.List, cst.Tuple)) and all(isinstance(e.value, (cst.Name, cst.Attribute)) for e in params.elements):
            found |= {ref_of(e.value) for e in params.elements} | {collection}
        else:
            first = _parameter_owners_of(params)
            if first is None:
                return None
            found |= first
        return frozenset(found) or None
    if isinstance(params, (cst.List, cst.Tuple)) and not params.elements:
        return None  # filled where we do not look (an optimizer over nothing would raise)
    if isinstance(params, (cst.List, cst.Tuple)) and all(isinstance(e.value, (cst.Name, cst.Attribute)) for e in params.elements):
        tensors = frozenset(ref_of(e.value) for e in params.elements)  # SGD([delta], lr=...): plain tensors
        return tensors | {collection} if collection else tensors
    return _parameter_owners_of(params)


def _parameter_owners_of(expr: cst.BaseExpression) -> Optional[FrozenSet[str]]:
    """The models whose ``.parameters()`` / ``.named_parameters()`` an expression takes
    (through ``filter``, ``list``, ``itertools.chain``, comprehensions, param-group dicts);
    None when none, or when one is a comprehension's own variable (``[p for m in (enc, dec)
    for p in m.parameters()]``: which models ``m`` runs over is not followed)."""
    owners = set()
    bound = set()

    class Finder(cst.CSTVisitor):
        def visit_CompFor(self, node: cst.CompFor) -> None:
            bound.update(target_names(node.target))

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("parameters", "named_parameters"):
                ref = ref_of(node.func.value)
                if ref:
                    owners.add(ref)

    tree_visit(expr, Finder())
    if any(owner.split(".", 1)[0].split("[", 1)[0] in bound for owner in owners):
        return None
    return frozenset(owners) or None


def _iter_unwrap(builder: _Builder, expr: cst.BaseExpression) -> Tuple[Optional[str], Optional[str]]:
    call_name = None
    while isinstance(expr, cst.Call):
        qual = builder.m.imports.qualname(expr.func) or dotted(expr.func) or ""
        call_name = call_name or qual
        if (qual in _ITER_WRAPPERS or qual.endswith("tqdm")) and expr.args:
            expr = expr.args[0].value
            continue
        return None, call_name
    return ref_of(expr), call_name


def _iterated(self: _Builder, expr: cst.BaseExpression) -> Tuple[Optional[str], Optional[str]]:
    return _iter_unwrap(self, expr)


_Builder._iterated = _iterated  # type: ignore[attr-defined]


def build(module: cst.Module, source: str, path: str, project=None) -> FileModel:
    model = FileModel(module, source, path)
    model.project = project
    builder = _Builder(model)
    builder.walk(module)
    return model


def _returns(fn: cst.FunctionDef) -> List[Optional[cst.BaseExpression]]:
    """The values a function's own ``return`` statements give (None for a bare return).

    A walk of the one function, not a question to FileModel.index: the builder runs before
    any module asks for the index, and building it here (for one method of most model files:
    ``x = self.forward_features(x)``) cost more than the walks it saved."""
    out: List[Optional[cst.BaseExpression]] = []
    stack = [fn.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Return):
            out.append(node.value)
            continue
        stack.extend(tree_children(node))
    return out


def _head(ref: str) -> str:
    return ref.split(".", 1)[0].split("[", 1)[0]



def _unwrap_moves(call: cst.Call) -> cst.Call:
    """``Net(...).to(device).eval()`` -> ``Net(...)``."""
    while isinstance(call.func, cst.Attribute) and call.func.attr.value in SELF_RETURNING \
            and isinstance(call.func.value, cst.Call):
        call = call.func.value
    return call
