"""File-wide facts the phase questions share: torch or not, calls per scope, call sites of local
functions, forward sites, and where statements live (for fixes)."""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from mllint.semantics.model import (
    ANY,
    CALL,
    FORWARD,
    MODULE_SCOPE,
    Context,
    Effect,
    FileModel,
    Loop,
)
from mllint.semantics.names import dotted, ref_of
from mllint.semantics.phases.words import _FACTORY_WORDS, _NOT_MODEL_WORDS, _head, name_tokens


# Callables that run the function handed to them as ``target=`` (a process or a thread).
_RUNNERS = frozenset(("Process", "Thread", "Timer"))


class FileFacts:
    """Facts about the file as a whole."""

    m: FileModel

    # --- file -----------------------------------------------------------------------------------------
    @property
    def torch_file(self) -> bool:
        """Whether the file is PyTorch code (and not Keras/JAX/Paddle code that looks alike)."""
        imports = self.m.imports
        if any(imports.imports_module(p) for p in ("torch", "torchvision", "lightning", "pytorch_lightning", "timm", "transformers", "accelerate")):
            return True
        if any(imports.imports_module(p) for p in ("tensorflow", "keras", "jax", "flax", "paddle", "mxnet", "mindspore", "oneflow")):
            return False
        if self.m.project is not None and self.m.project.torch_through_imports:
            return True  # imports the project's own torch modules (a trainer importing ``models``)
        return any(c.is_module for c in self.m.classes.values())

    def torch_name(self) -> Optional[str]:
        """The local name the torch module is bound to (``torch``, ``T``), if any."""
        for local, full in self.m.imports.aliases.items():
            if full == "torch":
                return local
        return None

    def calls_in(self, scope: str) -> List[Tuple[cst.Call, Context]]:
        if self._calls_by_scope is None:
            table: Dict[str, List[Tuple[cst.Call, Context]]] = {}
            for call, ctx in self.m.calls:
                table.setdefault(ctx.scope, []).append((call, ctx))
            self._calls_by_scope = table
        return self._calls_by_scope.get(scope, [])

    def qual(self, node: cst.BaseExpression) -> str:
        return self.m.imports.qualname(node) or dotted(node) or ""

    # --- functions ---------------------------------------------------------------------------------------
    def call_sites(self, key: str) -> List[Effect]:
        """Calls of a local function. A method that overrides one of a base class in this
        file is also called where the base class calls ``self.method()`` (virtual dispatch:
        ``Base._gold_score`` calling ``self._score_target()`` runs ``Translator._score_target``)."""
        if self._call_sites is None:
            table: Dict[str, List[Effect]] = {}
            for effect in self.m.effects:
                if effect.kind == CALL and effect.callee:
                    table.setdefault(effect.callee, []).append(effect)
            for fn_key, fn in self.m.functions.items():
                if fn.cls is None or "." in fn_key[len(fn.cls) + 1:]:
                    continue
                name = fn.node.name.value
                info = self.m.classes.get(fn.cls)
                for base in info.bases if info else ():
                    overridden = self.m.method_key(base.rsplit(".", 1)[-1], name)
                    if overridden is None or overridden == fn_key:
                        continue
                    for site in table.get(overridden, []):
                        func = site.node.func if isinstance(site.node, cst.Call) else None
                        if isinstance(func, cst.Attribute) and dotted(func.value) == "self":
                            table.setdefault(fn_key, []).append(site)
                    break
            self._call_sites = table
        return self._call_sites.get(key, [])

    def engine_functions(self) -> Dict[str, List[Tuple[str, Context]]]:
        """Functions of the file an ignite ``Engine`` is built on (``trainer = Engine(train_step)``):
        the engine calls them once per batch, in a loop that does nothing else. Function key ->
        the engines' names (with where they are bound)."""
        if self._engines is None:
            found: Dict[str, List[Tuple[str, Context]]] = {}
            for targets, value, ctx in self.m.assignments:
                if len(targets) != 1 or not isinstance(value, cst.Call) or not value.args or value.args[0].keyword is not None:
                    continue
                qual = self.qual(value.func)
                if not (qual.startswith("ignite.") and qual.rsplit(".", 1)[-1] == "Engine"):
                    continue
                name = dotted(value.args[0].value)
                key = name if name in self.m.functions else None
                if key is None and name and name.startswith("self.") and name.count(".") == 1:
                    cls = self.m.class_scope_of(ctx.scope)
                    key = f"{cls}.{name[5:]}" if cls and f"{cls}.{name[5:]}" in self.m.functions else None
                if key is not None:
                    found.setdefault(key, []).append((targets[0], ctx))
            self._engines = found
        return self._engines

    def engine_run_data(self, key: str) -> List[cst.BaseExpression]:
        """What the engines built on function `key` are run on (``evaluator.run(val_loader)``)."""
        out: List[cst.BaseExpression] = []
        for engine, ctx in self.engine_functions().get(key, ()):
            for call, call_ctx in self.m.calls:
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "run" and dotted(func.value) == engine \
                        and call.args and call.args[0].keyword is None:
                    out.append(call.args[0].value)
        return out

    def referenced_as_value(self, key: str) -> bool:
        """Whether a local function's name is used other than by calling it (a callback)."""
        if self._value_refs is None:
            # Every name and attribute name of the file that is read as a value: not a called
            # function (``f(x)``, ``obj.f(x)``: the callee), not the attribute part of an
            # attribute (``obj.f``'s ``f``, counted as an attribute name), not a keyword
            # (``g(key=...)``), and not in what a definition declares: a function's name,
            # parameters and annotations, a class's name, bases and decorators (a parameter's
            # default and a function's decorators and body are read).
            index = self.m.index
            names: Set[str] = set()
            read: Dict[int, bool] = {}

            def is_read(node: cst.CSTNode) -> bool:
                path = []
                current, verdict = node, True
                while True:
                    known = read.get(id(current))
                    if known is not None:
                        verdict = known
                        break
                    parent = index.get(current)
                    if parent is None:
                        break
                    path.append(current)
                    if (isinstance(parent, cst.Attribute) and parent.attr is current) \
                            or (isinstance(parent, cst.FunctionDef) and parent.body is not current
                                and not any(d is current for d in parent.decorators)) \
                            or (isinstance(parent, cst.ClassDef) and parent.body is not current) \
                            or (isinstance(parent, cst.Arg) and parent.value is not current) \
                            or (isinstance(parent, cst.Param) and parent.default is not current):
                        verdict = False
                        break
                    current = parent
                for step in path:
                    read[id(step)] = verdict
                return verdict

            # a process or thread started on a function (``mp.Process(target=test, args=(m,))``,
            # ``mp.spawn(test, ...)``): the function is run, as a call would run it
            started: Set[int] = set()
            for call in index.nodes(cst.Call):
                last = (dotted(call.func) or "").rsplit(".", 1)[-1]
                for position, arg in enumerate(call.args):
                    if isinstance(arg.value, cst.Name) and (
                            (last in _RUNNERS and arg.keyword is not None and arg.keyword.value == "target")
                            or (last == "spawn" and position == 0 and arg.keyword is None)):
                        started.add(id(arg.value))
            for node in index.nodes((cst.Name, cst.Attribute)):
                parent = index.get(node)
                if (isinstance(parent, cst.Call) and parent.func is node) or id(node) in started:
                    continue  # called
                if is_read(node):
                    names.add(node.value if isinstance(node, cst.Name) else node.attr.value)
            self._value_refs = names
        return key.rsplit(".", 1)[-1] in self._value_refs

    # --- where statements live (for fixes) -------------------------------------------------------------
    def block_of(self, statement: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The IndentedBlock or Module whose body holds ``statement``."""
        if self._blocks is None:
            blocks: Dict[cst.CSTNode, cst.CSTNode] = {}

            owners = self._with_owner
            module = self.m.module
            for item in module.body:
                blocks[item] = module
            for node in self.m.index.nodes((cst.IndentedBlock, cst.With)):
                if isinstance(node, cst.With):
                    owners[node.body] = node
                else:
                    for item in node.body:
                        blocks[item] = node
            self._blocks = blocks
        return self._blocks.get(statement)

    def outside_withs(self, statement: cst.CSTNode, withs: Tuple[cst.With, ...]) -> cst.CSTNode:
        """The outermost of ``withs`` around ``statement`` in its scope (or ``statement``
        itself): where a statement goes that must run before those with-blocks."""
        current = statement
        while True:
            block = self.block_of(current)
            owner = self._with_owner.get(block) if block is not None else None
            if owner is None or owner not in withs:
                return current
            current = owner

    def valid_at(self, ref: str, scope: str, before: Optional[cst.CSTNode] = None, loop: Optional[Loop] = None) -> bool:
        """Whether the name ``ref`` means the model at a point of ``scope``: its start
        (``before`` None), or right before the statement ``before`` (``loop``: the loop that
        statement is, if it is one; names bound inside it are not bound yet)."""
        head = _head(ref)
        if ref == ANY or not head.isidentifier():
            return False
        fn = self.m.functions.get(scope)
        if head in ("self", "cls"):
            return fn is not None and self.m.class_scope_of(scope) is not None
        if fn is not None and head in fn.params:
            if before is None and self._param_rebound(head, scope):
                return False  # at the start it still holds what the caller handed in
            return True
        local = False
        for targets, _value, ctx in self.m.assignments:
            if ctx.scope == scope and head in targets:
                if before is None:
                    return False
                if ctx.statement is before or (loop is not None and loop.encloses(ctx.loop)):
                    continue
                local = True
        for other in self.m.loops:
            if other.scope == scope and head in other.targets:
                if before is None:
                    return False
                if loop is not None and loop.encloses(other):
                    continue
                local = True
        if local:
            return True
        if scope != MODULE_SCOPE and head in self.m.locals.get(scope, ()):
            return False  # a local of this function, not bound yet here
        return True  # a global, or a variable of an enclosing function (a closure sees it)

    def _param_rebound(self, name: str, scope: str) -> bool:
        """Whether the parameter ``name`` of function ``scope`` is assigned there something other
        than itself, moved or wrapped (``model = build(model)``, not ``model = model.to(dev)``)."""
        from mllint.semantics.builder import _source_ref

        for targets, value, ctx in self.m.assignments_in(scope):
            if name in targets and (len(targets) != 1 or _source_ref(value) != name):
                return True
        return False

    # --- forward sites ------------------------------------------------------------------------------------
    def forwards(self) -> List[Effect]:
        """Forward passes of models (not constructors or factories that look like models)."""
        seen: Set[cst.CSTNode] = set()
        out = []
        for effect in self.m.effects:
            if effect.kind != FORWARD or effect.node in seen or not self._is_model_call(effect.ref, effect.ctx.scope):
                continue
            if effect.node in self.m.rebinding_import_calls:
                continue  # ``net = net(n_actions)`` after ``from models import net``: the constructor
            if isinstance(effect.node, cst.Call) and not effect.node.args:
                continue  # ``model.fuse_model()``: a method, not a forward (a model needs an input)
            seen.add(effect.node)
            out.append(effect)
        return out

    def no_module_here(self, effect: Effect) -> bool:
        """A call of something the code itself shows is no ``nn.Module`` there, so it has no
        train/eval mode (it may still build an autograd graph: ML002 judges it, ML005 does
        not): under the negative branch of ``isinstance(net, torch.nn.Module)`` (``else:``, or
        ``if not isinstance(...)``); a name that holds a plain function of this file, also
        through a tuple assignment (``net, loss = linreg, squared_loss``); or, for a reference
        not known to hold a module, a call that hands the mode over as an argument
        (``net(X, is_training=False)``: a from-scratch function)."""
        head = _head(effect.ref)
        if effect.ref == head and self._holds_plain_function(head, effect.ctx.scope):
            return True
        for cond in effect.ctx.conds:
            node, negative = cond.node, cond.branch == "else"
            if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
                node, negative = node.expression, cond.branch == "if"
            if (negative and isinstance(node, cst.Call) and (dotted(node.func) or "") == "isinstance"
                    and len(node.args) == 2 and ref_of(node.args[0].value) in (effect.ref, head)
                    and (dotted(node.args[1].value) or "").rsplit(".", 1)[-1] == "Module"):
                return True
        node = effect.node
        if isinstance(node, cst.Call) and any(
                a.keyword is not None and a.keyword.value in ("is_training", "training", "train", "is_train")
                and isinstance(a.value, cst.Name) and a.value.value in ("False", "True") for a in node.args):
            from mllint.semantics import roles as R

            scope = effect.ctx.scope
            if not self.m.has_role(effect.ref, R.MODEL, scope, by_name=False) \
                    and self.m.instance_of.get(scope, effect.ref) is None:
                return True
        if effect.ref == "self" and self.plain_class_of(effect.ctx.scope) is not None:
            return True  # ``self.forward(x)`` of a from-scratch class (``class Perceptron():``)
        return False

    def plain_class_of(self, scope: str) -> Optional[str]:
        """The class whose method ``scope`` is, when the code shows it is no ``nn.Module``: no
        base class but ``object``, or only bases of this file that are such classes (a
        from-scratch ``class Perceptron():`` with a ``forward`` of its own). None otherwise
        (a module, or bases we cannot see)."""
        cls = self.m.class_scope_of(scope)
        if cls is None or "." in cls:
            return None
        seen: Set[str] = set()

        def plain(name: str) -> bool:
            info = self.m.classes.get(name)
            if info is None or info.is_module or name in seen:
                return False
            seen.add(name)
            for arg in info.node.bases:
                base = dotted(arg.value) or ""
                if base not in ("object", "builtins.object") and not plain(base):
                    return False
            return not info.node.keywords  # (a metaclass may make it anything)
        return cls if plain(cls) else None

    def _holds_plain_function(self, name: str, scope: str) -> bool:
        """Every assignment of ``name`` in ``scope`` (or, when it has none there, at module level)
        gives it a function of this file's top level: ``net = linreg``, ``net, loss = linreg,
        squared_loss``."""
        chain = [scope]
        while chain[-1] != MODULE_SCOPE:
            chain.append(chain[-1].rsplit(".", 1)[0] if "." in chain[-1] else MODULE_SCOPE)
        for where in chain:
            values = []
            for targets, value, ctx in self.m.assignments:
                if ctx.scope != where or name not in targets:
                    continue
                if len(targets) == 1:
                    values.append(value)
                elif isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(targets) \
                        and not any(isinstance(e, cst.StarredElement) for e in value.elements):
                    values.append(value.elements[targets.index(name)].value)
                else:
                    values.append(None)
            if values:
                return all(isinstance(v, cst.Name) and v.value in self.m.functions and v.value not in self.m.classes
                           for v in values)
        return False

    def generate_calls(self) -> List[Effect]:
        """HF ``model.generate(...)`` calls, as forward passes for the mode question (ML005):
        generation runs the model in whatever mode it is in, dropout included. The receiver is
        a known torch model (``from_pretrained``, a module class, ``.eval()``/``.parameters()``
        on it; not a guess from its name), or a parameter every caller of the function hands
        such a model; ``generate`` is not a method of a class of this file (a local
        ``generate()`` is a call of that function). Not forwards for ML002: HF's ``generate``
        runs under ``torch.no_grad()`` itself."""
        from mllint.semantics import roles as R

        if self._generate_calls is not None:
            return self._generate_calls
        with_effects = {e.node for e in self.m.effects}
        out: List[Effect] = []
        for call, ctx in self.m.calls:
            func = call.func
            if not isinstance(func, cst.Attribute) or func.attr.value != "generate" or call in with_effects:
                continue
            ref = dotted(func.value)
            if not ref or _head(ref) in ("self", "cls") or not self._is_model_call(ref, ctx.scope):
                continue
            if self._project_generate(ref, ctx.scope):
                continue  # the project's own class defines generate() (it may switch modes itself)
            if self._known_model(ref, ctx.scope, 0, R.MODEL):
                out.append(Effect(FORWARD, ref, call, ctx, self.m.call_order.get(call, 0)))
        self._generate_calls = out
        return out

    def _project_generate(self, ref: str, scope: str) -> bool:
        """Whether ``ref`` holds an instance of a class of another project file that defines
        ``generate`` itself or through a project base (``model = WaveRNN(...)``, whose
        ``generate`` runs ``self.eval()`` ... ``self.train()``): not HF's generate."""
        project = self.m.project
        if project is None:
            return False
        qualified = self.m.project_instance_of.get(scope, ref)
        fn = self.m.functions.get(scope)
        if qualified is None and fn is not None and ref in fn.params:  # ``def gen(model: WaveRNN, ...)``
            for param in list(fn.node.params.params) + list(fn.node.params.kwonly_params):
                if param.name.value == ref and param.annotation is not None:
                    qualified = self.m.imports.qualname(param.annotation.annotation)
        found = project.class_named(qualified) if qualified else None
        if found is None:
            return False
        rel, facts = found
        return project.project.method_of(rel, facts, "generate", set()) is not None

    def _known_model(self, ref: str, scope: str, depth: int, role: str) -> bool:
        """Whether ``ref`` holds a model by evidence other than its name; a parameter when
        every caller in the file hands it one (at least one caller)."""
        fn = self.m.functions.get(scope)
        if fn is not None and _head(ref) in fn.params and not ref.startswith(("self.", "cls.")):
            if ref == _head(ref) and self.m.has_role(ref, role, scope, by_name=False):
                return True  # annotated as one (``model: VisionEncoderDecoderModel``)
            sites = self.call_sites(scope)
            if not sites or depth > 3:
                return False
            for site in sites:
                outer = (site.args or {}).get(_head(ref))
                if not outer or outer == ANY:
                    return False
                if not self._known_model(outer + ref[len(_head(ref)):], site.ctx.scope, depth + 1, role):
                    return False
            return True
        return self.m.has_role(ref, role, scope, by_name=False)

    def _instance_of_module(self, ref: str, scope: str) -> bool:
        """Whether ``ref`` holds a module instance by evidence other than its spelling: built from
        a module class (of this file, of the project, or a known torch constructor), annotated
        as one, or used as one (``.parameters()``, ``.eval()``)."""
        from mllint.semantics import roles as R

        return self.m.has_role(ref, R.MODEL, scope, by_name=False)

    def _is_model_call(self, ref: str, scope: Optional[str] = None) -> bool:
        """Whether calling ``ref`` runs a model (not a constructor or a factory). A capitalised
        name (``Generator(z)``) reads as a class, unless the model knows by structure that it
        holds a module instance (``G = Generator(...)``, ``self.D = Net().to(dev)``, its
        ``.parameters()`` handed to an optimizer), as GAN code names its networks ``G``/``D``."""
        head = _head(ref)
        last = ref.rsplit(".", 1)[-1].split("[", 1)[0]
        if head in self.m.imports.aliases or head in self.m.classes or last in self.m.classes:
            return False  # a module's function or a class: a factory or a constructor
        if last[:1].isupper():
            return scope is not None and self._instance_of_module(ref, scope)
        tokens = name_tokens(last)
        return not (tokens and tokens[0] in _FACTORY_WORDS) and not (set(tokens) & _NOT_MODEL_WORDS)
