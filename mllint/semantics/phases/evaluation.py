"""Is this evaluation code? Functions named and used like evaluation, loops over validation/test
data, forwards on evaluation data, inference scripts; and the code that never is (framework
hooks, unit tests, model internals)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics.model import (
    BACKWARD,
    CALL,
    EVAL,
    FORWARD,
    MODULE_SCOPE,
    Context,
    Effect,
    FileModel,
    Function,
    Loop,
)
from mllint.semantics.names import dotted, ref_of, shorten
from mllint.semantics.phases.flow import _hits, _reads
from mllint.semantics.phases.words import (
    MOVES,
    RESHAPES,
    _BUILTINS,
    _FRAMEWORK_BASES,
    _LIGHTNING_EVAL_HOOKS,
    _LOAD_CALLS,
    _MAIN_NAMES,
    _MODEL_BASE_NAMES,
    _NO_VALUE,
    _asserts,
    _constant,
    _head,
    _part_for,
    _truth,
    _words,
    GRADIENT_CUTS,
    eval_name_strength,
    is_eval_data_ref,
    name_tokens,
    related,
)


def _iterates(m: FileModel, node: cst.FunctionDef) -> bool:
    """Whether a function (not one nested in it) has a ``for`` loop or a comprehension."""
    return m.index.has((cst.For, cst.CompFor), node.body, skip=(cst.FunctionDef,))


# Calls that may train out of sight (Pyro's SVI, a framework's fit): a function making them
# never takes @torch.no_grad() as a whole.
_HIDDEN_TRAINING = frozenset("step fit train_step training_step backward optimize update".split())


# Tensors made up for a check, not data.
_SYNTHETIC = frozenset(
    "torch." + n for n in "randn rand randint randn_like rand_like zeros ones empty full zeros_like ones_like arange".split()
)


# Methods of a module that return the module itself: ``net = net.eval()`` rebinds nothing new.
_SAME_MODULE_METHODS = frozenset("to cuda cpu float double half bfloat16 eval train requires_grad_".split())


# Methods whose result no gradient flows through.
_NO_GRADIENT_METHODS = frozenset(
    "argmax argmin item tolist numpy detach round sign nonzero argsort bool int long eq ne gt lt ge le isnan".split()
)


def _returned_values(m: FileModel, node: cst.FunctionDef) -> List[cst.BaseExpression]:
    """The values a function returns (not functions nested in it); a bare return or falling
    off the end returns None, which carries no gradient."""
    found: List[cst.BaseExpression] = []
    for n in m.index.nodes((cst.Return, cst.Yield), node.body, skip=(cst.FunctionDef, cst.Lambda)):
        if isinstance(n, cst.Return):
            found.append(n.value if n.value is not None else cst.Name("None"))
        else:
            found.append(cst.Name("__yield__"))  # a generator: its values are unknown
    return found


def _string_value(expr: Optional[cst.BaseExpression]) -> Optional[str]:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _selects_by(m: FileModel, node: cst.FunctionDef, param: str) -> bool:
    """Whether a function picks its data by the parameter ``param``: compares it with a
    string (``if split == "train":``, ``train_data if split == "train" else val_data``),
    indexes with it (``self.data[split]``), builds a name or path from it (``f"{split}.bin"``)
    or hands it on as ``split=``; and never rebinds it."""
    found: List[bool] = []

    def is_param(expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value == param

    def is_text(expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return bool(expr.elements) and all(_string_value(e.value) is not None for e in expr.elements)
        return _string_value(expr) is not None

    kinds = (cst.Comparison, cst.SubscriptElement, cst.FormattedStringExpression, cst.Arg, cst.AssignTarget,
             cst.AugAssign, cst.For)
    for n in m.index.nodes(kinds, node.body):
        if isinstance(n, cst.Comparison):
            sides = [n.left] + [c.comparator for c in n.comparisons]
            if any(is_param(a) for a in sides) and any(is_text(a) for a in sides):
                found.append(True)
        elif isinstance(n, cst.SubscriptElement):
            if isinstance(n.slice, cst.Index) and is_param(n.slice.value):
                found.append(True)
        elif isinstance(n, cst.FormattedStringExpression):
            if is_param(n.expression):
                found.append(True)
        elif isinstance(n, cst.Arg):
            if n.keyword is not None and n.keyword.value == "split" and is_param(n.value):
                found.append(True)
        elif isinstance(n, cst.AugAssign):
            if is_param(n.target):
                found.append(False)
        elif param in _reads(n.target).refs:  # AssignTarget, For
            found.append(False)
    return bool(found) and all(found)


def _pretrained_build(expr: cst.BaseExpression) -> bool:
    """A model built with trained weights by its constructor: ``resnet18(pretrained=True)``,
    ``timm.create_model(name, pretrained=True)``, torchvision's ``resnet50(weights="IMAGENET1K_V1")``
    or ``weights=ResNet50_Weights.DEFAULT``. Only literal values: ``pretrained=args.pretrained``
    says nothing either way."""
    if not isinstance(expr, cst.Call):
        return False
    for arg in expr.args:
        if arg.keyword is None:
            continue
        if arg.keyword.value == "pretrained" and isinstance(arg.value, cst.Name) and arg.value.value == "True":
            return True
        if arg.keyword.value == "weights":
            value = arg.value
            if isinstance(value, cst.SimpleString) and value.evaluated_value not in ("", None):
                return True
            chain = dotted(value) if isinstance(value, (cst.Attribute, cst.Name)) else None
            if chain and any(part.endswith("_Weights") for part in chain.split(".")):
                return True  # ResNet50_Weights.DEFAULT, models.ResNet50_Weights.IMAGENET1K_V2
    return False


def _unwrapped(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The value under indexing and device/dtype moves: ``get_batch("val")[0].to(device)``."""
    for _ in range(6):
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in MOVES:
            expr = expr.func.value
        else:
            break
    return expr



# --- results ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """Why a piece of code is evaluation code."""

    kind: str  # "function", "callers", "loop", "data", "script", "mode", "output" (ML002 only)
    text: str  # for messages: "in `evaluate()`", "in the loop over `val_loader`"
    function: Optional[str] = None  # the evaluation function (kind function/callers)
    loop: Optional[Loop] = field(default=None, compare=False, hash=False)  # the evaluation loop (kind loop)
    weak: bool = False  # only a generate/sample/score name says so (inference, not evaluation: ML002 only)

    @property
    def basis(self) -> str:
        """What the evidence rests on: "structure" (a mode switch before it, a weights load in a
        script that trains nothing) or "name" (only a function's, a loader's or a variable's
        spelling says the code evaluates)."""
        return "structure" if self.kind in ("script", "mode", "output") else "name"

    @property
    def brief(self) -> str:
        """``text`` for a one-line message: without its parenthesis (the reason why, which
        belongs to the detail) and with quoted code cut to 30 characters."""
        text = self.text.split(" (", 1)[0].replace("in the loop over ", "over ")
        return re.sub(r"`([^`]*)`", lambda m: f"`{shorten(m.group(1), 30)}`", text)




class EvaluationFacts:
    """Why a forward is evaluation code, or that it is not."""

    m: FileModel

    def module_method(self, fn: Function) -> bool:
        """A method of an nn.Module subclass that is model internals, run in whatever mode the
        caller set: ``forward`` and what it calls, and every other method except the model's
        own inference methods (``own_inference_method``)."""
        return fn.cls is not None and self.module_like(fn.cls, by_forward=False) and not self.own_inference_method(fn)

    def own_inference_method(self, fn: Function) -> bool:
        """A model's own inference method (``def predict(self, x): return self(x).argmax(1)``):
        named for evaluation (predict, infer, evaluate; not generate/sample, which may feed a
        loss) and not reached from ``forward``."""
        strength = eval_name_strength(fn.node.name.value) if fn.cls is not None else None
        if strength is None or fn.key in self.methods_forward_runs(fn.cls or ""):
            return False
        # generate/sample: only when nothing it returns can carry a gradient (a policy's
        # sample() returning log-probabilities is a training building block)
        return strength == "strong" or self.gradient_free_result(fn)

    def backpropagated_by_bases(self, scope: str) -> bool:
        """Whether method ``scope``'s result reaches a backward pass in a project base class of
        another file: the base's training step (``loss_v = self.validation_loss(...)``,
        ``loss_v.backward()``) calls it, or a method of the class that returns what it computes
        from it (``validation_loss`` returning the loss of ``self.prediction(x)``). Its forward
        is then a piece of training, whatever its name."""
        fn = self.m.functions.get(scope)
        project = self.m.project
        if fn is None or fn.cls is None or project is None or "." in fn.cls:
            return False
        trained = project.backpropagated_by_bases(fn.cls)
        if not trained:
            return False
        # the class's methods that return something, with the ``self.<m>`` methods each calls
        returning = {}
        for key in self.m.method_keys(fn.cls):
            method = self.m.functions[key]
            if any(not (isinstance(v, cst.Name) and v.value == "None") for v in _returned_values(self.m, method.node)):
                returning[method.node.name.value] = {dotted(c.func) for c, _ in self.calls_in(key)}
        reached = {fn.node.name.value}
        changed = True
        while changed and not reached & trained:
            changed = False
            for name, calls in returning.items():
                if name not in reached and any(f"self.{r}" in calls for r in reached):
                    reached.add(name)
                    changed = True
        return bool(reached & trained)

    def gradient_free_result(self, fn: Function) -> bool:
        """Whether nothing a caller gets back from ``fn`` can carry a gradient, so no caller
        anywhere trains on it: it switches its model to eval mode itself, or returns only
        argmax, ``.item()``, ``.tolist()``, comparisons and the like."""
        for call, _ctx in self.calls_in(fn.key):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "eval" and not call.args:
                if dotted(call.func.value) == "self":
                    return True
        returns = _returned_values(self.m, fn.node)
        if not returns:
            return False
        tainted = self._forward_outputs(fn.key)
        forwards = self._graph_forwards(fn.key)

        def free(value: cst.BaseExpression) -> bool:
            if self._no_gradient(value, fn.key, 2):
                return True
            reads = _reads(value)
            return not _hits(reads.refs, tainted) and not (set(reads.calls) & forwards)

        return all(free(value) for value in returns)

    def _graph_forwards(self, scope: str) -> Set[cst.CSTNode]:
        """The forwards and calls of ``scope`` that may record an autograd graph (not those
        certainly under ``no_grad``: ``with torch.no_grad(): h = model(x)``)."""
        return {e.node for e in self.m.effects_in(scope) if e.kind in (FORWARD, CALL) and not self.certainly_grad_off(e)}

    def _forward_outputs(self, scope: str) -> Set[str]:
        """Names in ``scope`` that may hold a value computed by a forward pass (what a
        forward's statement assigns or appends to, and what is computed from those), less
        values no gradient flows through (``pred = out.argmax(1)``)."""
        forwards = self._graph_forwards(scope)
        tainted: Set[str] = set()
        for _ in range(6):
            before = len(tainted)
            for stmt in self.flow(scope):
                targets = list(stmt.writes) + list(stmt.mutates)
                if not targets:
                    continue
                value = getattr(stmt.node, "value", None)
                if isinstance(value, cst.BaseExpression) and self._no_gradient(value, scope, 0):
                    continue
                if stmt.calls & forwards or _hits(stmt.reads, tainted):
                    tainted.update(targets)
            if len(tainted) == before:
                break
        return tainted

    def _building_block(self, fn: Function, sites: List[Effect]) -> bool:
        """A method named for prediction that other code builds on, not an evaluation
        routine: a filter's ``predict`` step (``EKFState.predict``, which ``log_prob`` calls
        and training differentiates through). It returns what may carry a gradient, and
        nothing in it says evaluation: no loop or comprehension over data, no eval(), no
        grad-off region, no evaluation data, and no call of it in evaluation code."""
        if fn.cls is None or self.gradient_free_result(fn) or self.module_like(fn.cls, by_forward=False):
            return False  # a model's own predict() is its inference method (forward and what it calls aside)
        if not set(name_tokens(fn.node.name.value)) & {"predict", "prediction", "infer", "inference"}:
            return False  # ``validate``/``evaluate``/``test`` are never a filter's step
        if fn.grad == "off" or any(e.kind == EVAL for e in self.m.effects_in(fn.key)):
            return False
        if any(ctx.grad == "off" or ctx.withs for _call, ctx in self.calls_in(fn.key)):
            return False
        reads = _reads(fn.node.body)
        if any(is_eval_data_ref(r) for r in reads.refs) or _iterates(self.m, fn.node):
            return False
        return all(self.evidence(site) is None for site in sites)

    def in_model_class(self, scope: str) -> bool:
        """Code in a method of a torch model class (its own predict(), say)."""
        fn = self.m.functions.get(scope)
        return fn is not None and fn.cls is not None and self.module_like(fn.cls, by_forward=False)

    def methods_forward_runs(self, cls: str) -> Set[str]:
        """Methods of ``cls`` that its ``forward`` runs (through ``self.method()`` calls)."""
        cache = self._forward_reach
        if cls not in cache:
            reached = {k for k in (f"{cls}.forward", f"{cls}._forward", f"{cls}.__call__") if k in self.m.functions}
            changed = True
            while changed:
                changed = False
                for effect in self.m.effects:
                    if effect.kind == CALL and effect.ctx.scope in reached and effect.callee and effect.callee not in reached:
                        reached.add(effect.callee)
                        changed = True
            cache[cls] = reached
        return cache[cls]

    def _no_gradient(self, expr: cst.BaseExpression, scope: str, depth: int) -> bool:
        """Whether a returned expression cannot carry a gradient."""
        if isinstance(expr, (cst.Comparison, cst.BooleanOperation, cst.Integer, cst.Float, cst.SimpleString)):
            return True
        if isinstance(expr, cst.Name) and expr.value == "None":
            return True
        if isinstance(expr, (cst.Tuple, cst.List)):
            return bool(expr.elements) and all(self._no_gradient(e.value, scope, depth) for e in expr.elements)
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Call) and isinstance(expr.value.func, cst.Attribute):
            # ``out.max(1)[1]``: the indices
            index = expr.slice[0].slice if len(expr.slice) == 1 else None
            if expr.value.func.attr.value in ("max", "min", "topk", "sort") and isinstance(index, cst.Index):
                return isinstance(index.value, cst.Integer) and index.value.value == "1"
        if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            return True  # ``out.data``: the tensor without its history
        if isinstance(expr, cst.Subscript) and self._no_gradient(expr.value, scope, depth):
            return True  # ``out.max(1)[1][0]``: part of what carries none
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value in _NO_GRADIENT_METHODS:
                return True
            if expr.func.attr.value in ("cpu", "cuda", "to", "squeeze", "view", "reshape", "flatten", "float", "long"):
                return self._no_gradient(expr.func.value, scope, depth)
            if isinstance(expr.func.value, (cst.Call, cst.Attribute)) and all(
                    isinstance(a.value, (cst.Integer, cst.Float, cst.SimpleString)) for a in expr.args):
                # ``out.data.div(1.0).exp()``: a method with literal arguments of what carries none
                return self._no_gradient(expr.func.value, scope, depth)
        if isinstance(expr, cst.Name) and depth > 0:
            values = [v for t, v, ctx in self.m.assignments_to(expr.value) if ctx.scope == scope]
            return bool(values) and self._no_gradient(values[-1], scope, depth - 1)
        return False

    def module_like(self, name: str, seen: Optional[Set[str]] = None, by_forward: bool = True) -> bool:
        """A class that is (very likely) a torch model: an nn.Module subclass, a class with a
        ``forward`` method (unless ``by_forward`` is False: skorch's ``NeuralNet`` has one and
        is no model), a subclass of a project class of another file that is one (or may be), or
        a subclass of an imported class we cannot see named like a model part."""
        info = self.m.classes.get(name)
        if info is None:
            return False
        if info.is_module or (by_forward and ("forward" in info.methods or "_forward" in info.methods)):
            return True
        seen = seen or set()
        seen.add(name)
        bases = []
        for arg in info.node.bases:
            expr = arg.value
            if isinstance(expr, cst.Subscript):
                expr = expr.value  # ``Classifier[DT]``
            bases.append(self.qual(expr))
        project = self.m.project
        for base in bases:
            short = base.rsplit(".", 1)[-1]
            if short in self.m.classes:
                if short not in seen and self.module_like(short, seen, by_forward):
                    return True
                continue
            if project is not None:
                found = project.class_named(base)
                if found is not None:  # a class of another file of the project: what it is, not its name
                    verdict = project.project.is_module(*found)
                    if verdict or by_forward and {"forward", "_forward"} & found[1].methods:
                        return True
                    if verdict is False:
                        continue
                    # (None: a base of it we cannot see; its name says what little is known)
            if short and _MODEL_BASE_NAMES.search(short):
                return True
        return False

    def managed(self, fn: Function) -> bool:
        """Framework code that sets eval mode and grad off by itself: Lightning's evaluation
        hooks, HF ``Trainer`` and skorch ``NeuralNet`` subclasses (and functions nested in them)."""
        key = fn.key
        while True:
            current = self.m.functions.get(key)
            if current is not None:
                if current.cls is not None and current.node.name.value in _LIGHTNING_EVAL_HOOKS and self._lightning_class(current.cls):
                    return True
                if current.cls is not None and self._framework_class(current.cls):
                    return True
            if "." not in key:
                return False
            key = key.rsplit(".", 1)[0]

    def _lightning_class(self, name: str) -> bool:
        """A class Lightning may run: it derives from Lightning (through bases in this file
        too), or from a class imported from elsewhere that may."""
        seen: Set[str] = set()
        todo = [name]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            info = self.m.classes.get(current)
            if info is None:
                continue
            for base in info.bases:
                short = base.rsplit(".", 1)[-1]
                if "lightning" in base.lower() or short.startswith("Lightning"):
                    return True
                if short in self.m.classes:
                    todo.append(short)
                elif short not in ("object", "ABC", "Generic", "Protocol", "Module", "nn.Module") and not base.startswith("torch."):
                    return True  # a base we cannot see may derive from Lightning
        return False

    def _framework_class(self, name: str, seen: Optional[Set[str]] = None) -> bool:
        seen = seen or set()
        if name in seen:
            return False
        seen.add(name)
        info = self.m.classes.get(name)
        if info is None:
            return False
        for base in info.bases:
            short = base.rsplit(".", 1)[-1]
            if short in self.m.classes:
                if self._framework_class(short, seen):
                    return True
            elif base and _FRAMEWORK_BASES.search(base):
                return True
        return False

    def _harness_class(self, name: str, seen: Optional[Set[str]] = None) -> bool:
        """A class an evaluation harness drives (its bases reach ``lm_eval``'s abstract ``LM``):
        every method of it serves evaluation (``loglikelihood``, ``generate_until``). Not a
        subclass of lm-eval's ``HFLM``, whose own code runs the overridden hooks under no_grad."""
        seen = seen or set()
        info = self.m.classes.get(name)
        if info is None or name in seen:
            return False
        seen.add(name)
        for base in info.bases:
            short = base.rsplit(".", 1)[-1]
            if short in self.m.classes:
                if self._harness_class(short, seen):
                    return True
            elif (self.m.imports.qualify(base) or "") in _HARNESS_INTERFACES:
                return True
        return False

    def unit_test(self, fn: Function) -> bool:
        """A unit test (forward passes there check the model, they do not evaluate it): a
        ``test`` function in a test suite (pytest/unittest imported, a ``Test`` class), or a
        ``test*()`` function that asserts, or one with no parameters that nothing calls.
        Judged by the code, not by the file's name: ``test.py`` is often the evaluation
        script, and its ``test(model, loader)`` counts correct predictions, it does not
        assert."""
        name = fn.node.name.value
        tokens = name_tokens(name)
        if fn.cls is not None and fn.cls in self.m.classes and any("TestCase" in b for b in self.m.classes[fn.cls].bases):
            return True  # any method of a unittest TestCase (a helper of its tests: ``embeddings_forward``)
        if "test" not in tokens and "tests" not in tokens:
            return False
        if self.m.imports.imports_module("pytest") or self.m.imports.imports_module("unittest"):
            return True
        if fn.cls is not None and fn.cls.startswith("Test"):
            return True
        if not name.startswith("test"):
            return False
        return (not fn.params and not self.call_sites(fn.key)) or _asserts(self.m, fn.node)

    # --- evaluation code --------------------------------------------------------------------------------
    def function_evidence(self, key: str) -> Optional[Evidence]:
        """Why the whole of function ``key`` is evaluation code (None: it is not)."""
        if key in self._fn_eval:
            return self._fn_eval[key]
        self._fn_eval[key] = None  # recursion guard
        result = self._function_evidence(key)
        self._fn_eval[key] = result
        return result

    def _function_evidence(self, key: str) -> Optional[Evidence]:
        fn = self.m.functions.get(key)
        if fn is None or self.managed(fn) or self.unit_test(fn) or self.trains(key) or self.module_method(fn):
            return None
        if isinstance(fn.node, cst.FunctionDef) and fn.node.asynchronous is not None:
            return None
        name = fn.node.name.value
        sites = self.call_sites(key)
        if any(self.feeds_backward(site.node, site.ctx.scope) for site in sites) and not self.gradient_free_result(fn):
            return None  # (what it returns reaches a backward pass: unless no gradient can flow back through it,
            # as from features a frozen encoder computes under no_grad for a classifier trained on them)
        if fn.cls is not None and name != "__init__" and self._harness_class(fn.cls):
            return Evidence("function", f"in `{name}()` of an evaluation-harness model", key)
        runs = self.engine_run_data(key)
        if runs and all(self._evaluation_data(data, key) for data in runs):
            data = shorten(self.m.code_of(runs[0]), 30)
            return Evidence("function", f"in `{name}()` (an engine runs it on `{data}`)", key)
        strength = eval_name_strength(name)
        if strength and self._building_block(fn, sites):
            strength = None
        if strength and not self.module_method(fn):
            if strength == "strong" or not self.referenced_as_value(key) or sites:
                return Evidence("function", f"in `{name}()`", key, weak=strength == "weak")
        # nested in an evaluation function
        if "." in key:
            outer = key.rsplit(".", 1)[0]
            if outer in self.m.functions:
                found = self.function_evidence(outer)
                outer_name = self.m.functions[outer].node.name.value
                if found is not None and found.kind == "function" and not sites and eval_name_strength(outer_name) == "strong":
                    return found
        if sites and not self.referenced_as_value(key):
            found_at_sites = [self.evidence(site) for site in sites]
            if all(e is not None for e in found_at_sites):
                weak = any(e.weak for e in found_at_sites if e is not None)
                return Evidence("callers", f"in `{name}()` (only evaluation code calls it)", key, weak=weak)
        return None

    def evidence(self, effect: Effect) -> Optional[Evidence]:
        """Why the forward (or call) ``effect`` is evaluation code, or None."""
        if effect.node in self._evidence:
            return self._evidence[effect.node]
        self._evidence[effect.node] = None
        result = self._evidence_of(effect)
        self._evidence[effect.node] = result
        return result

    def _evidence_of(self, effect: Effect) -> Optional[Evidence]:
        scope = effect.ctx.scope
        fn = self.m.functions.get(scope)
        if fn is not None and (self.managed(fn) or self.unit_test(fn) or self.module_method(fn)):
            return None  # framework hooks, unit tests, model internals (run in the caller's mode)
        found = self.loop_evidence(effect.ctx) or (self.function_evidence(scope) if fn is not None else None)
        found = found or self.data_evidence(effect) or self.script_evidence(effect) or self.grad_off_evidence(effect) \
            or self.wrapper_evidence(effect)
        if found is None:
            return None
        if self.smoke_test(effect):
            return None
        if not self.certainly_grad_off(effect) and self.feeds_backward(effect.node, scope):
            return None  # (under no_grad, nothing it computes can reach a backward pass)
        return found

    def loop_evidence(self, ctx: Context) -> Optional[Evidence]:
        loop = ctx.loop
        while loop is not None:
            if self.loop_backprops(loop):
                return None
            source = self.iterated_data(loop)
            if source is not None:
                return Evidence("loop", f"in the loop over `{source}`", None, loop)
            loop = loop.parent
        return None

    def iterated_data(self, loop: Loop) -> Optional[str]:
        """The evaluation data a loop iterates (``val_loader``, ``self.get_test_dataloader()``)."""
        node = loop.node
        if not isinstance(node, cst.For):
            return None
        exprs = [node.iter]
        for _ in range(6):
            nxt = []
            for expr in exprs:
                if isinstance(expr, cst.Call):
                    name = self.qual(expr.func)
                    short = name.rsplit(".", 1)[-1]
                    if short in ("enumerate", "tqdm", "iter", "zip", "list", "track", "islice", "sorted", "reversed") or name.endswith("tqdm"):
                        args = [a.value for a in expr.args if a.keyword is None]
                        nxt.extend(args if short == "zip" else args[:1])
                        continue
                    ref = dotted(expr.func)
                    if ref and is_eval_data_ref(ref.rsplit(".", 1)[-1].replace("get_", "")):
                        return self.m.code_of(expr.func) + "()"
                    fetched = self.eval_split_call(expr, loop.scope) or self._batches_of_eval_data(expr, loop.scope)
                    if fetched is not None:
                        return fetched  # for x, y in make_loader("test"), get_batches(val_data, 32):
                    continue
                ref = ref_of(expr)
                if ref and is_eval_data_ref(ref):
                    return ref
                if isinstance(expr, cst.Attribute):
                    attr = dotted(expr)
                    if attr and is_eval_data_ref(attr):
                        return attr
                if isinstance(expr, cst.Name) and expr.value not in loop.targets:
                    value = self._iterable_bound_before(expr.value, loop)
                    if value is not None:
                        nxt.append(value)  # pbar = tqdm(iter(valid_loader)); for i, b in enumerate(pbar):
            if not nxt:
                break
            exprs = nxt
        return None

    def _iterable_bound_before(self, name: str, loop: Loop) -> Optional[cst.BaseExpression]:
        """What the variable ``name`` a loop iterates certainly holds when the loop starts: the
        value of the last assignment to it alone before the loop, in the same scope, that runs
        whenever the loop does (not in an inner loop or another branch). None otherwise."""
        best = None
        for targets, value, actx in self.m.assignments_to(name):
            if targets != (name,) or actx.scope != loop.scope:
                continue
            at = self.m.assignment_order.get(value)
            if at is None or at >= loop.order:
                continue
            if actx.loop is not None and not actx.loop.encloses(loop.parent):
                continue
            if not set(actx.conds) <= set(loop.conds):
                continue
            if best is None or at > best[0]:
                best = (at, value)
        return best[1] if best is not None else None

    def eval_split_call(self, expr: cst.BaseExpression, scope: str) -> Optional[str]:
        """The text of a call that fetches evaluation data by naming its split, as in
        ``get_batch("val")``: a function of this file given a string naming an evaluation
        split (val, valid, validation, test, eval, holdout) for a parameter it picks its data
        by (``_selects_by``). A function that ignores the name (every split is the training
        data) is not one. None otherwise."""
        call = _unwrapped(expr)
        if not isinstance(call, cst.Call):
            return None
        local = self._local_callable(call.func, scope)
        fn = self.m.functions.get(local or "")
        if fn is None:
            return None
        from mllint.pyast import EVAL_SPLITS

        for param, value in self._bind_exprs(fn.key, call).items():
            if _string_value(value) in EVAL_SPLITS and _selects_by(self.m, fn.node, param):
                return self.m.code_of(call)
        return None

    def _batches_of_eval_data(self, call: cst.Call, scope: str) -> Optional[str]:
        """A call that makes batches out of evaluation data handed to it: a DataLoader
        (``DataLoader(val_set, batch_size=64)``), or a function of this file that returns or
        yields what it makes of that parameter (``get_batches(val_data, batch_size, seq_len)``).
        Not when training data is handed over too."""
        from mllint.semantics import roles as R

        refs = [ref_of(arg.value) for arg in call.args]
        data = next((r for r in refs if r and is_eval_data_ref(r)), None)
        if data is None:
            return None
        if any(r and "train" in name_tokens(r.rsplit(".", 1)[-1]) for r in refs):
            return None
        text = f"{self.m.code_of(call.func)}({data}{', ...' if len(call.args) > 1 else ''})"  # for messages
        if R.role_of_constructor(self.qual(call.func)) == R.LOADER:
            return text
        local = self._local_callable(call.func, scope)
        fn = self.m.functions.get(local or "")
        if fn is None:
            return None
        values = _returned_values(self.m, fn.node)
        generator = any(isinstance(v, cst.Name) and v.value == "__yield__" for v in values)
        if not values or not generator and any(isinstance(v, cst.Name) and v.value == "None" for v in values):
            return None  # returns nothing (or sometimes nothing): not a maker of batches
        read = _reads(fn.node.body).refs
        for param, expr in self._bind_exprs(fn.key, call).items():
            ref = ref_of(expr)
            if ref and is_eval_data_ref(ref) and any(_head(r) == param for r in read):
                return text
        return None

    def data_evidence(self, effect: Effect) -> Optional[Evidence]:
        """A forward on evaluation data (``model(X_val)``), or on values derived from it
        (also fetched by split: ``xb, yb = get_batch("val")``, ``eval_split_call``)."""
        node = effect.node
        if not isinstance(node, cst.Call):
            return None
        for arg in node.args:
            fetched = self.eval_split_call(arg.value.value if isinstance(arg.value, cst.StarredElement) else arg.value, effect.ctx.scope)
            if fetched is not None:
                return Evidence("data", f"on `{fetched}`")
            for ref in _reads(arg.value).refs:
                if self._eval_data(ref, effect.ctx, 2, effect.order) or self._reaching_eval_data(ref, effect.ctx, effect.order, 4):
                    return Evidence("data", f"on `{ref}`")
        return None

    def _evaluation_data(self, expr: cst.BaseExpression, scope: str) -> bool:
        """Whether an expression handed to a runner is evaluation data: a reference that names it
        (``val_loader``) or a call that makes batches of it (``DataLoader(test_set)``)."""
        ref = ref_of(expr)
        if ref is not None:
            return is_eval_data_ref(ref)
        return isinstance(expr, cst.Call) and self._batches_of_eval_data(_unwrap_to(expr), scope) is not None

    def _reaching_eval_data(self, ref: str, ctx: Context, order: int, depth: int) -> bool:
        """Whether the value `ref` holds where `order` runs was computed from evaluation data,
        following the assignment that reaches that point: the last one before it in the same
        pass (its loop, or a loop around it), on every path there. A name the training loop
        binds and a test block rebinds (``x = sample_batch(test_set)`` under ``if step % k ==
        0:``) holds the test batch in that block."""
        if is_eval_data_ref(ref):
            return True
        head = _head(ref)
        if depth <= 0 or head in ("self", "cls") or head in _BUILTINS or head in self.m.imports.aliases:
            return False
        here = set(ctx.conds)
        best = None
        for targets, value, actx in self.m.assignments_naming(head):
            if actx.scope != ctx.scope or head not in targets:
                continue
            at = self.m.assignment_order.get(value)
            if at is None or at >= order or not set(actx.conds) <= here:
                continue
            if actx.loop is not None and not actx.loop.encloses(ctx.loop):
                continue  # in a loop that has ended (or another branch's loop)
            if best is None or at > best[0]:
                best = (at, targets, value, actx)
        if best is None:
            return False
        at, targets, value, actx = best
        loop = ctx.loop
        while loop is not None and loop is not actx.loop:
            if head in loop.targets and (actx.loop is None or loop is not actx.loop and actx.loop.encloses(loop)):
                return False  # a loop between the assignment and here binds it afresh
            loop = loop.parent
        part = _part_for(targets, value, head)
        expr = part if part is not None else value
        if self.eval_split_call(expr, actx.scope) is not None:
            return True
        if isinstance(expr, cst.Call) and self._batches_of_eval_data(_unwrap_to(expr), actx.scope) is not None:
            return True
        refs = [r for r in _reads(expr).refs if _head(r) != head]
        return any(self._reaching_eval_data(r, actx, at, depth - 1) for r in refs)

    def _eval_data(self, ref: str, ctx: Context, depth: int, order: Optional[int] = None) -> bool:
        """Whether ``ref`` holds evaluation data where it is read (``ctx``, at ``order`` when
        known): named so, a variable of a loop over evaluation data, or assigned from such."""
        if is_eval_data_ref(ref):
            return True
        if depth <= 0:
            return False
        head = _head(ref)
        if order is not None:
            reaching = self._rebinding(head, ctx, order)
            if reaching is not None and self._assigned_eval_data(head, reaching, depth):
                return True
        loop = ctx.loop
        while loop is not None:
            if head in loop.targets:
                return self.iterated_data(loop) is not None
            loop = loop.parent
        for targets, value, actx in self.m.assignments_naming(head):
            if actx.scope == ctx.scope and head in targets:
                part = _part_for(targets, value, head)
                if self.eval_split_call(part if part is not None else value, actx.scope) is not None:
                    return True  # xb, yb = get_batch("val")
                refs = [
                    r for r in _reads(part if part is not None else value).refs
                    if _head(r) not in (head, "self", "cls") and _head(r) not in _BUILTINS and _head(r) not in self.m.imports.aliases
                ]
                if part is None:
                    # x, y = next(iter(val_loader)): every part comes from evaluation data
                    # only when all it reads is evaluation data.
                    if refs and all(self._eval_data(r, actx, depth - 1) for r in refs):
                        return True
                    continue
                if any(self._eval_data(r, actx, depth - 1) for r in refs):
                    return True
        return False

    def _rebinding(self, head: str, ctx: Context, order: int):
        """The assignment to ``head`` that the value read at ``order`` (in ``ctx``) certainly
        comes from, when the body of the loop that binds ``head`` (or the scope, outside such
        a loop) rebinds it first: the last one before, in the same scope, not in a loop or
        branch the read is outside of (``j, data = next(enumerate(test_loader))`` in the body
        of ``for i, data in enumerate(train_loader):``, then ``model(data)``). None when
        there is none (the loop variable, or whatever the looser search finds, is the value;
        that search also runs when this assignment gives no evaluation data)."""
        binding = ctx.loop
        while binding is not None and head not in binding.targets:
            binding = binding.parent
        best = None
        for targets, value, actx in self.m.assignments_naming(head):
            if head not in targets or actx.scope != ctx.scope:
                continue
            at = self.m.assignment_order.get(value)
            if at is None or at >= order or (actx.statement is not None and actx.statement is ctx.statement):
                continue
            if actx.loop is not None and not actx.loop.encloses(ctx.loop):
                continue  # in a loop the read is outside of: may not have run
            if binding is not None and not binding.encloses(actx.loop):
                continue  # before the loop that rebinds the name on every iteration
            if not set(actx.conds) <= set(ctx.conds):
                continue  # in a branch the read is outside of
            if best is None or at > best[0]:
                best = (at, targets, value, actx)
        return best[1:] if best is not None else None

    def _assigned_eval_data(self, head: str, assignment, depth: int) -> bool:
        """Whether the assignment ``head`` certainly comes from gives it evaluation data: all
        it reads for ``head`` is evaluation data (``x, y = next(iter(val_loader))``); what it
        reads of ``head`` itself (``x = x.to(device)``) is the value before it."""
        targets, value, actx = assignment
        if self.eval_split_call(value, actx.scope) is not None:
            return True
        part = _part_for(targets, value, head)
        refs = [
            r for r in _reads(part if part is not None else value).refs
            if _head(r) not in ("self", "cls") and _head(r) not in _BUILTINS and _head(r) not in self.m.imports.aliases
        ]
        order = self.m.assignment_order[value]
        verdicts = (
            # what it reads of ``head`` is the earlier value (the order decreases, so this ends)
            self._eval_data(r, actx, depth if _head(r) == head else depth - 1, order) for r in refs
        )
        if part is None:
            return bool(refs) and all(verdicts)  # x, y = next(iter(val_loader)): all it reads
        return any(verdicts)

    def grad_off_evidence(self, effect: Effect) -> Optional[Evidence]:
        """A forward that script code (module level, or main() and the like) runs under
        ``torch.no_grad()``/``inference_mode()`` after the model was trained there, outside any
        loop that backpropagates: the trained model's outputs looked at (RULES: "evaluated under
        no_grad"), e.g. a notebook's ``with torch.inference_mode(): pred = model(batch)``."""
        scope = effect.ctx.scope
        fn = self.m.functions.get(scope)
        if fn is not None and (fn.cls is not None or fn.node.name.value not in _MAIN_NAMES):
            return None
        if not self.certainly_grad_off(effect) or not self.trained_before(effect):
            return None
        loop = effect.ctx.loop
        while loop is not None:
            if self.loop_backprops(loop) or self.loop_trains(loop):
                return None
            loop = loop.parent
        return Evidence("grad", "under no_grad after training")

    def wrapper_evidence(self, effect: Effect) -> Optional[Evidence]:
        """A forward of ``self.<attr>`` under ``no_grad`` in a method of a class that is no model
        itself, loads trained weights into that attribute and trains nothing: an inference
        wrapper (``Adapter.__init__`` loads the state dict, ``Adapter.forward`` runs the model
        under ``torch.no_grad()``; a predictor built from a checkpoint)."""
        scope = effect.ctx.scope
        fn = self.m.functions.get(scope)
        ref = effect.ref
        if fn is None or fn.cls is None or "." in fn.cls or not ref.startswith("self.") or ref.count(".") != 1:
            return None
        if self.module_like(fn.cls, by_forward=False) or not self.certainly_grad_off(effect):
            return None
        methods = self.m.method_keys(fn.cls)
        if any(self.trains(k) for k in methods) or not any(self._weights_loaded(ref, k) for k in methods):
            return None
        if self.smoke_test(effect):
            return None
        return Evidence("script", f"in inference code (`{fn.cls}` loads trained weights into `{ref}` and trains nothing)")

    def script_evidence(self, effect: Effect) -> Optional[Evidence]:
        """A forward in an inference script: module level (or main()) of a file that trains
        nothing, where this scope loads weights."""
        scope = effect.ctx.scope
        fn = self.m.functions.get(scope)
        if fn is not None and (fn.cls is not None or fn.node.name.value not in _MAIN_NAMES):
            return None
        if self.file_trains():
            return None
        if self._weights_loaded(effect.ref, scope):
            return Evidence("script", "in inference code (weights are loaded and nothing is trained)")
        return None

    def loaded_here_evidence(self, effect: Effect) -> Optional[Evidence]:
        """A forward in a plain function of a file that trains nothing, of a model that function
        itself loads with trained weights (``model = AutoModel.from_pretrained(name)``, or built
        and given ``load_state_dict``) and keeps to itself: it returns, yields, stores or hands
        on neither the model nor its parameters, so nothing anywhere can train it (for ML002;
        ``script_evidence`` covers module level and main())."""
        scope = effect.ctx.scope
        fn = self.m.functions.get(scope)
        ref = effect.ref
        if fn is None or fn.cls is not None or fn.node.name.value in _MAIN_NAMES or ref != _head(ref):
            return None
        if ref in fn.params or not self.m.assigns_locally(scope, ref) or self.file_trains():
            return None
        if self.managed(fn) or self.unit_test(fn) or self.trains(scope):
            return None
        if not self._weights_loaded(ref, scope) or self._model_escapes(fn, ref):
            return None
        if self.smoke_test(effect) or self.feeds_backward(effect.node, scope):
            return None
        return Evidence("script", "in inference code (the model is loaded here and nothing is trained)")

    def after_training_evidence(self, effect: Effect) -> Optional[Evidence]:
        """A forward in a plain function that only the top level of the file calls, each time
        after something was trained there (a notebook or script that trains, then runs
        ``imagine_digit(model, 3)``), outside any loop that backpropagates, and whose result
        reaches no backward pass; the function itself trains nothing (for ML002)."""
        scope = effect.ctx.scope
        fn = self.m.functions.get(scope)
        if fn is None or fn.cls is not None or "." in scope or fn.node.asynchronous is not None:
            return None
        if self.managed(fn) or self.unit_test(fn) or self.trains(scope) or self.referenced_as_value(scope):
            return None
        calls = self.calls_in(scope)
        if any(self._autograd_call(c) or isinstance(c.func, cst.Attribute) and c.func.attr.value in _HIDDEN_TRAINING
               for c, _ in calls):
            return None
        sites = self.call_sites(scope)
        if not sites:
            return None
        for site in sites:
            if site.ctx.scope != MODULE_SCOPE or not self.trained_before(site):
                return None
            loop = site.ctx.loop
            while loop is not None:
                if self.loop_backprops(loop):
                    return None
                loop = loop.parent
            if self.feeds_backward(site.node, MODULE_SCOPE):
                return None
        if self.smoke_test(effect) or self.feeds_backward(effect.node, scope):
            return None
        name = fn.node.name.value
        return Evidence("callers", f"in `{name}()` (called after training, its result never backpropagated)", scope)

    def _model_escapes(self, fn: Function, ref: str) -> bool:
        """Whether function ``fn`` lets the model in its local ``ref`` out, where something could
        train it: returns or yields it, binds it to another name, an attribute or a container,
        hands it to a call (other than a load into it and builtins such as ``hasattr``), reads
        its parameters, declares it global, or reads it in a nested function or lambda."""
        index = self.m.index
        nested = list(index.nodes((cst.FunctionDef, cst.Lambda), fn.node.body))
        for found in index.nodes(cst.Name, fn.node.body):
            if found.value != ref:
                continue
            holder = index.get(found)
            if isinstance(holder, cst.Attribute) and holder.attr is found:
                continue
            if isinstance(holder, cst.Arg) and holder.keyword is found:
                continue
            if any(index.contains(inner, found) for inner in nested):
                return True
            if isinstance(holder, cst.AssignTarget):
                continue  # rebound (what it gets is checked as a load by _weights_loaded)
            if isinstance(holder, cst.Attribute):
                if holder.attr.value in ("parameters", "named_parameters", "state_dict", "requires_grad_", "train"):
                    return True
                continue  # ``model.config``, ``model.to(device)``, ``model.get_encoder()``
            if isinstance(holder, cst.Call) and holder.func is found:
                continue  # the forward itself
            if isinstance(holder, cst.Arg):
                call = index.get(holder)
                if isinstance(call, cst.Call) and (self._load_call(call) or self.qual(call.func) in _INSPECTING_BUILTINS):
                    continue
            return True  # returned, yielded, stored, handed on, global, in a container...
        return False

    def smoke_test(self, effect: Effect) -> bool:
        """A forward of a model built right there and not trained or loaded by then (``net = Net();
        y = net(torch.randn(2, 3, 32, 32)); print(y.shape)``): a shape check, not evaluation.
        Training that only runs later in the scope (a notebook that checks the shape of a fresh
        model, then builds and trains the real one) does not make it evaluation
        (``trained_before``)."""
        ref, scope = effect.ref, effect.ctx.scope
        if _head(ref) in ("self", "cls") or ref != _head(ref):
            return False
        if self._fresh_model(ref, scope, effect, effect):
            return True
        # A function without parameters that runs a module-level model (``def test(): y =
        # encoder(x); print(y.shape)``), called only at module level, each time right after the
        # model was built and before anything trains: the same shape check, one call away.
        fn = self.m.functions.get(scope)
        if fn is None or fn.params or fn.cls is not None or self.m.assigns_locally(scope, ref):
            return False
        sites = self.call_sites(scope)
        return bool(sites) and all(
            site.ctx.scope == MODULE_SCOPE and self._fresh_model(ref, MODULE_SCOPE, site, effect) for site in sites)

    def _fresh_model(self, ref: str, scope: str, at: Effect, forward: Effect) -> bool:
        """Whether model ``ref`` was built in ``scope`` before `at` runs (a forward, or the call
        that reaches it), with no weights put in and no training before `at`; `forward` is the
        forward itself (its inputs may be made up on the spot)."""
        effect = forward
        built = [
            (value, ctx) for targets, value, ctx in self.m.assignments
            if ctx.scope == scope and targets == (ref,) and self.m.position(value).start.line < self.m.position(at.node).start.line
        ]
        if not built:
            return False
        for value, built_ctx in reversed(built):
            call = value
            while isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in _SAME_MODULE_METHODS:
                call = call.func.value
            if not (isinstance(call, cst.Name) and call.value == ref):
                break  # (``net = net.cuda()`` under ``if cuda:`` moves the model built above it; ``net = net.eval()`` switches it)
        if not isinstance(call, cst.Call):
            return False
        qual = self.qual(call.func)
        name = qual.rsplit(".", 1)[-1]
        local_builder = qual in self.m.functions and not any(self._load_call(c) for c, _ in self.calls_in(qual))
        constructor = name in self.m.classes or name[:1].isupper() or local_builder or qual.startswith(("torchvision.models.", "timm.create_model"))
        if self._load_call(call) or not (constructor or self._synthetic_input(effect)):
            return False  # a load, or a factory that may load (unless it only ever sees made-up input)
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in ("pretrained", "weights", "checkpoint", "ckpt", "state_dict", "pretrained_path"):
                if not (isinstance(arg.value, cst.Name) and arg.value.value in ("False", "None")):
                    return False  # torchvision's resnet50(weights=...): trained weights
        if self._weights_loaded(ref, scope, before=at.node, since=value):
            return False
        return not self.trained_before(at, since=self.m.assignment_order.get(value), since_loop=built_ctx.loop)

    def _synthetic_input(self, effect: Effect) -> bool:
        """The forward's inputs are made up right there (``torch.randn``, ``torch.randint``,
        ``torch.zeros``...): a shape or parity check, whatever built the model."""
        node = effect.node
        if not isinstance(node, cst.Call) or not node.args:
            return False
        scope = effect.ctx.scope

        def made_up(expr: cst.BaseExpression) -> bool:
            if isinstance(expr, cst.Call):
                return self.qual(expr.func) in _SYNTHETIC
            if isinstance(expr, cst.Name):
                values = [v for t, v, ctx in self.m.assignments_to(expr.value) if ctx.scope == scope]
                return bool(values) and all(isinstance(v, cst.Call) and self.qual(v.func) in _SYNTHETIC for v in values)
            return False

        return all(made_up(arg.value) for arg in node.args if arg.keyword is None)

    def _load_call(self, call: cst.Call) -> bool:
        name = self.qual(call.func)
        return bool(_LOAD_CALLS.search(name) or (isinstance(call.func, cst.Attribute) and _LOAD_CALLS.search(call.func.attr.value)))

    def _weights_loaded(self, ref: str, scope: str, before: Optional[cst.CSTNode] = None,
                        since: Optional[cst.CSTNode] = None) -> bool:
        """Whether the scope puts trained weights into this model: ``model.load_state_dict(...)``,
        ``load_checkpoint(model, path)``, or the model made by a load (``torch.load``,
        ``from_pretrained``, ``load_from_checkpoint``). A smoke test of a freshly built model in
        a file that loads weights into something else is not inference. With `before`, only
        loads that may run before that node count (written above it, or in a loop): a notebook
        that checks a fresh model's output shape, trains it, and loads the best weights at the end.
        With `since` (the value the model was last bound to), loads above it are of what the name
        held before (``model = AutoModel.from_pretrained(...)``, then ``model = Siamese(...)``)."""
        canonical = self.m.canonical(ref, scope)
        limit = self.m.position(before).start.line if before is not None else None
        start = self.m.position(since).start.line if since is not None else None

        def outside(node: cst.CSTNode, ctx: Context) -> bool:
            if ctx.loop is not None:
                return False  # (a loop may run it before, again)
            line = self.m.position(node).start.line
            return (limit is not None and line >= limit) or (start is not None and line < start)

        def names_model(expr: cst.BaseExpression) -> bool:
            found = self._receiver(expr)
            return found is not None and (related(found, ref) or related(self.m.canonical(found, scope), canonical))

        for call, ctx in self.calls_in(scope):
            if not self._load_call(call):
                continue
            if outside(call, ctx):
                continue  # loaded only after it, or into what the name held before
            if isinstance(call.func, cst.Attribute) and names_model(call.func.value):
                return True
            if any(names_model(arg.value) for arg in call.args):
                return True
        for targets, value, ctx in self.m.assignments:
            if ctx.scope == scope and any(related(t, ref) or related(t, canonical) for t in targets):
                if outside(value, ctx):
                    continue
                if any(self._load_call(c) for c in _reads(value).calls) or (isinstance(value, cst.Call) and self._load_call(value)):
                    return True
                if _pretrained_build(_unwrapped(value)):
                    return True
        return False

    # --- one function for training and evaluation, under a flag ------------------------------------------
    def training_flag(self, key: str) -> Optional[str]:
        """The parameter every backward pass of function ``key`` is conditioned on
        (``if is_train: loss.backward()``): one epoch function for training and evaluation
        (``run_epoch(model, loader, is_train)``, ``_epoch(loader, train=False)``)."""
        fn = self.m.functions.get(key)
        if fn is None:
            return None
        backwards = [e for e in self.m.effects_in(key) if e.kind == BACKWARD]
        if not backwards:
            return None
        for param in fn.params:
            if param in ("self", "cls"):
                continue
            if all(any(param in _words(c.text) and c.branch == "if" for c in e.ctx.conds) for e in backwards):
                return param
        return None

    def argument_value(self, key: str, call: cst.CSTNode, param: str) -> Optional[cst.BaseExpression]:
        """The expression a call of function ``key`` passes for ``param``, or the parameter's
        default when the call leaves it out (None: unknown, or no default)."""
        if not isinstance(call, cst.Call):
            return None
        if any(arg.star for arg in call.args):
            return None
        found = self._bind_exprs(key, call).get(param)
        if found is not None:
            return found
        fn = self.m.functions[key]
        params = fn.node.params
        for p in list(params.params) + list(params.kwonly_params) + list(params.posonly_params):
            if p.name.value == param:
                return p.default
        return None

    def flag_off_at(self, key: str, site: Effect, flag: str) -> bool:
        """Whether a call of ``key`` turns its training flag off: the literal it passes (or
        the default it leaves) makes every backward pass's condition on the flag false
        (``is_train=False``, ``phase="val"`` for ``if phase == "train":``, ``optimizer=None``
        for ``if optimizer is not None:``); where a condition cannot be worked out, False,
        ``0`` or an evaluation phase name (``"val"``, ``"eval"``, ``"test"``)."""
        if self.m.assigns_locally(key, flag):
            return False  # the function rebinds its flag: its value at the call says little
        expr = self.argument_value(key, site.node, flag)
        value = _constant(expr)
        if value is _NO_VALUE:
            return False
        backwards = [e for e in self.m.effects_in(key) if e.kind == BACKWARD]
        settled = True
        for effect in backwards:
            runs = True
            for cond in effect.ctx.conds:
                if flag not in _words(cond.text) or cond.branch not in ("if", "else") or cond.node is None:
                    continue
                truth = _truth(cond.node, {flag: value})
                if truth is None:
                    settled = False
                elif truth != (cond.branch == "if"):
                    runs = False
            if runs and settled:
                return False  # this backward pass runs with that value: training
        if settled and backwards:
            return True
        if isinstance(value, bool) or isinstance(value, int):
            return not value
        return isinstance(value, str) and any(w in value.lower() for w in ("val", "eval", "test"))

    def mode_evidence(self, effect: Effect) -> Optional[Evidence]:
        """Code after ``.eval()`` that never calls backward (for ML002): the model is in eval
        mode here, no backward pass runs in an enclosing loop or later in the function."""
        scope = effect.ctx.scope
        fn = self.m.functions.get(scope)
        if fn is not None and (self.managed(fn) or self.unit_test(fn)):
            return None
        if self.overrides_mode(effect.ref, scope):
            return None
        loop = effect.ctx.loop
        while loop is not None:
            if self.loop_backprops(loop):
                return None
            loop = loop.parent
        for other in self.m.effects_in(scope):
            if other.order > effect.order and (other.kind == BACKWARD or (other.kind == CALL and other.callee in self.backprop_functions)):
                return None
        for call, _ctx in self.calls_in(scope):
            if self._autograd_call(call):
                return None
        modes = self.mode_at(effect, effect.ref)
        if modes != {"eval"}:
            return None
        switches = [e for e in self.events(scope) if e.kind == "eval" and e.order < effect.order and related(e.ref, effect.ref)]
        if not switches:
            return None  # eval mode set by a caller: too far away to call this evaluation code
        if self.feeds_backward(effect.node, scope):
            return None
        if (self._synthetic_input(effect) or self._checked_only(effect)) and self.smoke_test(effect):
            return None  # ``model = Net(); model.eval(); print(model(torch.randn(...)).shape)``: a shape check
        # the switch as written (``model.eval()`` before ``model.decoder(z)``)
        switched = max(switches, key=lambda e: e.order).ref
        return Evidence("mode", f"after `{switched}.eval()`")

    # --- a forward whose output no gradient can flow from (ML002 only) --------------------------------
    def output_evidence(self, effect: Effect) -> Optional[Evidence]:
        """A forward whose output is only ever read through what cuts it from autograd
        (``model(x).detach()``, ``out = model(x)`` and every later read of ``out`` is
        ``out.detach()``, ``out.argmax(1)``, ``out.item()``, ``out.cpu().numpy()``...), in code
        that runs no backward pass (not in a loop that backpropagates, nor in a function that
        does): nothing can ever use the graph it records, whatever its caller's grad mode or
        its name (for ML002; it says nothing about eval mode). Not in model internals that
        ``forward`` runs, framework hooks, unit tests or smoke tests."""
        # Every condition must hold; the cheap ones are asked first (reading how the output is
        # used needs the file's parent index, which most files never build otherwise).
        scope = effect.ctx.scope
        fn = self.m.functions.get(scope)
        if fn is not None:
            if self.managed(fn) or self.unit_test(fn) or self.trains(scope):
                return None
            if fn.cls is not None and self.module_like(fn.cls, by_forward=False) and (
                    fn.node.name.value in ("forward", "_forward", "__call__") or fn.key in self.methods_forward_runs(fn.cls)):
                return None  # a model's internals: ``self.encoder(x).detach()`` is its stop-gradient
        if any(e.kind == BACKWARD for e in self.m.effects_in(scope)):
            return None
        loop = effect.ctx.loop
        while loop is not None:
            if self.loop_backprops(loop):
                return None
            loop = loop.parent
        if self.gradient_cut_output(effect) is None:
            return None
        if any(self._autograd_call(c) for c, _ in self.calls_in(scope)):
            return None
        if fn is not None:
            if any(self.feeds_backward(site.node, site.ctx.scope) for site in self.call_sites(scope)):
                return None  # a piece of a training step (a DQN loss's ``argmax`` of the online net)
            if not self._returns_no_gradient(fn):
                return None  # it hands back what may carry a gradient: a caller (here or elsewhere) may train on it
        if self.smoke_test(effect):
            return None
        return Evidence("output", "whose output is only read detached from autograd")

    def _returns_no_gradient(self, fn: Function) -> bool:
        """Whether nothing ``fn`` returns can carry a gradient: it returns nothing, or only values
        computed from no forward (``_forward_outputs``) or cut from autograd (``argmax``,
        ``.item()``, ``.numpy()``...). A generator's values are unknown."""
        tainted = self._forward_outputs(fn.key)
        forwards = {e.node for e in self.m.effects_in(fn.key) if e.kind in (FORWARD, CALL)}
        for value in _returned_values(self.m, fn.node):
            if isinstance(value, cst.Name) and value.value == "__yield__":
                return False
            if self._no_gradient(value, fn.key, 2):
                continue
            reads = _reads(value)
            if _hits(reads.refs, tainted) or set(reads.calls) & forwards:
                return False
        return True

    def gradient_cut_output(self, effect: Effect) -> Optional[cst.CSTNode]:
        """The statement-level expression that holds a forward's output when every read of it is
        cut from autograd (see ``output_evidence``): the forward chained into a cutting method,
        or the forward assigned alone to a local name every read of which is cut. None
        otherwise."""
        node = effect.node
        if not isinstance(node, cst.Call):
            return None
        if self._cut_read(node):
            return node
        parent, uses = self._uses_of_assigned(self._moved(node), effect.ctx.scope)
        if parent is None:
            return None
        reads = 0
        for found in uses:
            holder = self.m.index.get(found)
            if isinstance(holder, (cst.Arg, cst.Param)) and getattr(holder, "keyword", None) is found:
                continue  # ``f(out=...)``
            if isinstance(holder, (cst.Global, cst.Nonlocal)) or isinstance(self.m.index.get(holder), (cst.Global, cst.Nonlocal)):
                return None
            if isinstance(holder, cst.AssignTarget) and holder.target is found:
                continue  # rebound: what it then holds is read the same way (checked as reads)
            if not self._cut_read(found):
                return None
            reads += 1
        return parent if reads else None

    def _uses_of_assigned(self, value: cst.CSTNode, scope: str) -> Tuple[Optional[cst.Assign], List[cst.Name]]:
        """When ``value`` is assigned alone to a plain name (``out = model(x)``): the assignment
        and every other use of that name in the scope's own body, in source order (rebinding
        targets included, attribute names such as ``x.out`` left out). (None, []) otherwise."""
        parent = self.m.index.get(value)
        if not (isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1
                and isinstance(parent.targets[0].target, cst.Name)):
            return None, []
        target = parent.targets[0].target
        body = self._scope_body(scope)
        if body is None:
            return None, []
        uses = []
        for found in self.m.index.nodes(cst.Name, body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if found.value != target.value or found is target:
                continue
            holder = self.m.index.get(found)
            if isinstance(holder, cst.Attribute) and holder.attr is found:
                continue  # ``x.out``: an attribute of that name
            uses.append(found)
        return parent, uses

    def _checked_only(self, effect: Effect) -> bool:
        """Whether a forward's output is only looked at, not used: its ``.shape``/``.size()``/
        ``.dtype``, or in ``assert`` statements (``assert out.shape == (5, 64)``,
        ``assert torch.allclose(out1, out2)``): a unit or shape test of the module."""
        index = self.m.index

        def looked_at(node: cst.CSTNode) -> bool:
            parent = index.get(node)
            if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in ("shape", "size", "dtype"):
                return True
            while parent is not None and not isinstance(parent, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                if isinstance(parent, cst.Assert):
                    return True
                parent = index.get(parent)
            return False

        node = effect.node
        if not isinstance(node, cst.Call):
            return False
        if looked_at(node):
            return True
        parent, uses = self._uses_of_assigned(node, effect.ctx.scope)
        if parent is None:
            return False
        reads = 0
        for found in uses:
            if isinstance(index.get(found), cst.AssignTarget):
                break  # rebound: what follows reads something else
            if not looked_at(found):
                return False
            reads += 1
        return reads > 0

    def _moved(self, node: cst.CSTNode) -> cst.CSTNode:
        """``node`` followed up through device and dtype moves (``model(x).to(device)``)."""
        index = self.m.index
        for _ in range(8):
            parent = index.get(node)
            call = index.get(parent) if isinstance(parent, cst.Attribute) and parent.value is node else None
            if isinstance(call, cst.Call) and call.func is parent and parent.attr.value in MOVES:
                node = call
                continue
            break
        return node

    def _cut_read(self, node: cst.CSTNode) -> bool:
        """Whether the value of ``node`` is read only through a method that cuts it from autograd,
        after indexing and shape-preserving moves: ``out[0].permute(1, 2, 0).detach()``,
        ``out.argmax(1)``, ``out.cpu().numpy()``, or through ``.data`` (``out.data * support``)."""
        index = self.m.index
        for _ in range(12):
            parent = index.get(node)
            if isinstance(parent, cst.Subscript) and parent.value is node:
                node = parent
                continue
            if not (isinstance(parent, cst.Attribute) and parent.value is node):
                return False
            attr = parent.attr.value
            call = index.get(parent)
            if not (isinstance(call, cst.Call) and call.func is parent):
                return attr == "data"  # ``model(x).data``: the tensor without its history
            if attr in GRADIENT_CUTS:
                return True
            if attr not in MOVES and attr not in RESHAPES:
                return False
            node = call
        return False

    def evaluation_only_function(self, key: str) -> bool:
        """A function that may take ``@torch.no_grad()``: it evaluates and nothing else."""
        fn = self.m.functions.get(key)
        if fn is None or self.trains(key) or self.module_method(fn) or self.managed(fn):
            return False
        if fn.node.asynchronous is not None:
            return False
        if any(d.endswith("property") or d.endswith("setter") for d in fn.decorators):
            return False
        if any(self.feeds_backward(site.node, site.ctx.scope) for site in self.call_sites(key)):
            return False
        if any(self._autograd_call(c) for c, _ in self.calls_in(key)):
            return False
        if any(isinstance(c.func, cst.Attribute) and c.func.attr.value in _HIDDEN_TRAINING for c, _ in self.calls_in(key)):
            return False  # ``svi.step(x)``: Pyro (or a framework) trains in there, out of sight
        for effect in self.m.effects_in(key):
            if effect.ctx.grad == "on":
                return False
        return True


# Builtins that only look at the object handed to them.
_INSPECTING_BUILTINS = frozenset("hasattr isinstance getattr callable type id print repr str len".split())


# lm-eval's abstract model interfaces (their subclasses write the whole evaluation themselves)
_HARNESS_INTERFACES = frozenset(("lm_eval.api.model.LM", "lm_eval.api.model.TemplateLM", "lm_eval.base.LM"))


def _unwrap_to(call: cst.Call) -> cst.Call:
    """``make_batch(val_set).to(device)`` -> ``make_batch(val_set)``."""
    while isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda", "cpu", "float", "half") \
            and isinstance(call.func.value, cst.Call):
        call = call.func.value
    return call
