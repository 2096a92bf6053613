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
from mllint.semantics.tree import visit as tree_visit


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

    def referenced_as_value(self, key: str) -> bool:
        """Whether a local function's name is used other than by calling it (a callback)."""
        if self._value_refs is None:
            names: Set[str] = set()
            called: Set[int] = set()

            class Finder(cst.CSTVisitor):
                def visit_Call(self, node: cst.Call) -> None:
                    called.add(id(node.func))

                def visit_Name(self, node: cst.Name) -> None:
                    if id(node) not in called:
                        names.add(node.value)

                def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
                    if id(node) not in called:
                        names.add(node.attr.value)
                    tree_visit(node.value, self)
                    return False

                def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                    for d in node.decorators:
                        tree_visit(d, self)
                    tree_visit(node.body, self)
                    return False

                def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                    tree_visit(node.body, self)
                    return False

                def visit_Arg(self, node: cst.Arg) -> bool:
                    tree_visit(node.value, self)
                    return False

                def visit_Param(self, node: cst.Param) -> bool:
                    if node.default is not None:
                        tree_visit(node.default, self)
                    return False

            tree_visit(self.m.module, Finder())
            self._value_refs = names
        return key.rsplit(".", 1)[-1] in self._value_refs

    # --- where statements live (for fixes) -------------------------------------------------------------
    def block_of(self, statement: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The IndentedBlock or Module whose body holds ``statement``."""
        if self._blocks is None:
            blocks: Dict[cst.CSTNode, cst.CSTNode] = {}

            owners = self._with_owner

            class Finder(cst.CSTVisitor):
                def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
                    for item in node.body:
                        blocks[item] = node

                def visit_With(self, node: cst.With) -> None:
                    owners[node.body] = node

                def visit_Module(self, node: cst.Module) -> None:
                    for item in node.body:
                        blocks[item] = node

            tree_visit(self.m.module, Finder())
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

    # --- forward sites ------------------------------------------------------------------------------------
    def forwards(self) -> List[Effect]:
        """Forward passes of models (not constructors or factories that look like models)."""
        seen: Set[cst.CSTNode] = set()
        out = []
        for effect in self.m.effects:
            if effect.kind != FORWARD or effect.node in seen or not self._is_model_call(effect.ref):
                continue
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
        return False

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
            if not ref or _head(ref) in ("self", "cls") or not self._is_model_call(ref):
                continue
            if self._known_model(ref, ctx.scope, 0, R.MODEL):
                out.append(Effect(FORWARD, ref, call, ctx, self.m.call_order.get(call, 0)))
        self._generate_calls = out
        return out

    def _known_model(self, ref: str, scope: str, depth: int, role: str) -> bool:
        """Whether ``ref`` holds a model by evidence other than its name; a parameter when
        every caller in the file hands it one (at least one caller)."""
        fn = self.m.functions.get(scope)
        if fn is not None and _head(ref) in fn.params and not ref.startswith(("self.", "cls.")):
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

    def _is_model_call(self, ref: str) -> bool:
        head = _head(ref)
        last = ref.rsplit(".", 1)[-1].split("[", 1)[0]
        if head in self.m.imports.aliases or head in self.m.classes or last in self.m.classes:
            return False  # a module's function or a class: a factory or a constructor
        if last[:1].isupper():
            return False
        tokens = name_tokens(last)
        return not (tokens and tokens[0] in _FACTORY_WORDS) and not (set(tokens) & _NOT_MODEL_WORDS)
