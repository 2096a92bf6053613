"""The project as one of its files sees it: what the per-file model asks about names defined
elsewhere (classes it imports, callers of its own functions in other files)."""

from __future__ import annotations

import hashlib
from typing import Dict, FrozenSet, List, Optional, Tuple

from mllint.project.facts import CallFacts, ClassFacts, FunctionFacts
from mllint.project.index import Project

# Every word ``ProjectView.implied_words`` may return (the engine screens each file once for every
# set of them, see engine.screen_verdict).
IMPLIED_WORDS = ("torch", "softmax", "called-in-loop")
# The forwards that imply ``softmax`` (ML013's word: a model ending in a softmax, log_softmax or sigmoid).
_PROBABILITY_KINDS = ("softmax", "log_softmax", "sigmoid")


class ProjectView:
    def __init__(self, project: Project, rel: str) -> None:
        self.project = project
        self.rel = rel  # this file's path relative to the project root
        self._torch_imports: Optional[bool] = None

    @property
    def torch_through_imports(self) -> bool:
        """Whether this file imports torch models of the project: an ``nn.Module`` class of
        another file (``from models import Net``), or a module of the project that defines one
        (``from . import models``). A trainer that imports only those is torch code without an
        ``import torch`` of its own; a file that imports only the project's helpers is not
        judged as torch code on that account (a Pyro model function is no torch model)."""
        cached = self._torch_imports
        if cached is None:
            cached = False
            if self.rel in self.project.facts:
                for qualified in self.project.imports_of(self.rel).values():
                    found = self.project.resolve(qualified, self.rel)
                    if found is not None:
                        if found.kind == "class" and found.rel != self.rel and self.project.is_module(found.rel, found.facts):
                            cached = True
                            break
                        continue
                    module = self.project.module_file(qualified, self.rel)
                    if module is not None and module != self.rel and any(
                            self.project.is_module(module, cls) for cls in self.project.classes_of(module).values()):
                        cached = True
                        break
            if not cached and self.rel in self.project.facts and self.project.star_torch(self.rel):
                cached = True  # ``from ..network import *``, where the project's torch names come from
            self._torch_imports = cached
        return cached

    def implied_words(self) -> frozenset:
        """Words the rules' text triggers should count as present in this file because of what it
        imports from the project: ``torch`` (see torch_through_imports) and ``softmax`` when a
        class it imports has a forward that ends in softmax, log_softmax or sigmoid."""
        words = set()
        if self.torch_through_imports:
            words.add("torch")
        if self.rel in self.project.facts:
            for qualified in self.project.imports_of(self.rel).values():
                if self.forward_returns(qualified) in _PROBABILITY_KINDS:
                    words.add("softmax")
                    break
        if self.called_in_loops_elsewhere():
            words.add("called-in-loop")
        if "softmax" not in words and self.rel in self.project.facts:
            for fn in self.project.facts[self.rel].functions:  # models the callers elsewhere pass in
                if self.project.callers(self.rel, fn.key) and any(
                        (self.argument_forward_returns(fn.key, p) or ("",))[0] in _PROBABILITY_KINDS
                        for p in fn.params if p not in ("self", "cls")):
                    words.add("softmax")
                    break
        return frozenset(words)

    def screen_verdict(self) -> Optional[tuple]:
        """What the engine's screen hook computed for this file when its facts were read (from the
        same parse), or None. The verdict carries a digest of the text it was computed from: the
        engine uses it only for that text."""
        if self.rel not in self.project.facts:
            return None
        return self.project.screen_of(self.rel)

    def called_in_loops_elsewhere(self) -> bool:
        """Whether a function of this file is called inside a loop of another file of the project."""
        if self.rel not in self.project.facts:
            return False
        return any(call.in_loop for fn in self.project.facts[self.rel].functions
                   for _, call in self.project.callers(self.rel, fn.key))

    # --- classes named in this file -----------------------------------------------------------
    def class_named(self, qualified: str) -> Optional[Tuple[str, ClassFacts]]:
        """The project class that a qualified name (as this file's imports spell it) stands for;
        None for a class of this file itself (the per-file model knows those) or of no project file."""
        found = self.project.resolve(qualified, self.rel)
        if found is None or found.kind != "class" or found.rel == self.rel:
            return None
        return found.rel, found.facts  # type: ignore[return-value]

    def is_module(self, qualified: str) -> Optional[bool]:
        found = self.class_named(qualified)
        return None if found is None else self.project.is_module(*found)

    def mode_layers(self, qualified: str) -> Optional[FrozenSet[str]]:
        found = self.class_named(qualified)
        if found is None or self.project.is_module(*found) is False:
            return None
        return self.project.mode_layers(*found)

    def own_mode_layers(self, written: str) -> Optional[FrozenSet[str]]:
        """The mode-dependent layer kinds an ``nn.Module`` class of the project (of this file or
        another, named as this file writes it) builds itself, with its project bases and built
        submodules, leaving out the modules handed to it (``self.model = model``); an empty set
        when it builds none (a wrapper whose only layers are the model it is given); None when
        unknown or not a project module class."""
        if self.rel not in self.project.facts:
            return None
        found = self.project.class_in(self.rel, written)
        if found is None or self.project.is_module(*found) is not True:
            return None
        return self.project.mode_layers(*found, own=True)

    def forward_returns(self, qualified: str) -> Optional[str]:
        found = self.class_named(qualified)
        return None if found is None else self.project.forward_returns(*found)

    def module_instance(self, qualified: str) -> Optional[Tuple[str, Optional[bool]]]:
        """A module-level variable of another project file that this file imports (``from
        catfish_model import CatfishModel`` for ``CatfishModel = models.resnet50()`` there): the
        call that makes it, qualified as that file's imports spell it, and whether that names an
        ``nn.Module`` class of the project (None: not a project class). None unless that file
        binds the name once, to a call, and switches the mode of nothing by that name."""
        module, _, name = qualified.rpartition(".")
        if not module or not name:
            return None
        rel = self.project.module_file(module, self.rel)
        if rel is None or rel == self.rel:
            return None
        facts = self.project.facts[rel]
        made = [(scope, callee) for scope, bound, callee in facts.instances if bound == name]
        if len(made) != 1 or made[0][0] != "<module>" or name in self.project.classes_of(rel) \
                or name in self.project.functions_of(rel):
            return None
        if any(ref.split(".", 1)[0].split("[", 1)[0] == name for ref in facts.switched):
            return None
        callee = self.project.qualify(rel, made[0][1])
        found = self.project.resolve(callee, rel)
        if found is not None and found.kind == "class":
            return callee, self.project.is_module(found.rel, found.facts)
        return callee, None

    def function_named(self, qualified: str):
        """The `FunctionFacts` of a project function (of another file) named in this file."""
        found = self.project.resolve(qualified, self.rel)
        if found is None or found.kind != "function" or found.rel == self.rel:
            return None
        return found.facts

    def returned_model(self, qualified: str) -> Optional[Tuple[bool, Optional[FrozenSet[str]]]]:
        """For a project function of another file that builds and returns an ``nn.Module`` of the
        project on every path (a factory: ``model = load_model(path)``): (whether it switches
        that model to eval mode before returning it, its mode-dependent layers or None when
        unknown). None when the function is not such a factory."""
        found = self.project.resolve(qualified, self.rel)
        if found is None or found.kind != "function" or found.rel == self.rel:
            return None
        classes = self.project.returned_classes(found.rel, found.facts)  # type: ignore[arg-type]
        if not classes:
            return None
        layers = {self.project.mode_layers(rel, cls) for rel, cls in classes}
        known = None if None in layers else frozenset().union(*layers)
        return found.facts.returns_eval, known  # type: ignore[union-attr]
    def function_defined(self, qualified: str) -> Optional[Tuple[str, FunctionFacts]]:
        """(file, facts) of a project function of another file named in this file."""
        found = self.project.resolve(qualified, self.rel)
        if found is None or found.kind != "function" or found.rel == self.rel:
            return None
        return found.rel, found.facts  # type: ignore[return-value]

    def inherited_method(self, cls: str, method: str) -> Optional[Tuple[str, FunctionFacts]]:
        """(file, facts) of the method ``method`` that class ``cls`` of this file inherits from
        a project base class of another file (``self._forward(batch)`` in a trainer whose
        ``BaseTrainer`` defines ``_forward``); None when the class defines it or no project
        base of another file does."""
        if self.rel not in self.project.facts:
            return None
        facts = self.project.classes_of(self.rel).get(cls)
        if facts is None or method in facts.methods:
            return None
        found = self.project.method_of(self.rel, facts, method, set())
        if found is None or found.rel == self.rel:
            return None
        return found.rel, found.facts  # type: ignore[return-value]

    def method_of_class(self, qualified: str, method: str) -> Optional[Tuple[str, FunctionFacts]]:
        """(file, facts) of method ``method`` of the project class a qualified name (as this
        file's imports spell it) stands for, its own or inherited from project bases."""
        found = self.project.resolve(qualified, self.rel)
        if found is None or found.kind != "class":
            return None
        method_found = self.project.method_of(found.rel, found.facts, method, set())
        if method_found is None:
            return None
        return method_found.rel, method_found.facts  # type: ignore[return-value]

    def evaluated_before(self, rel: str, call: CallFacts, receiver: str) -> bool:
        """Whether ``receiver`` is in eval mode when `call` (a call in file `rel`) runs, as that
        file's own calls before it in the same function say: switched by ``receiver.eval()``,
        or last set by a project mode helper given a false literal
        (``net.set_mode_train(False)``, see ``FunctionFacts.mode_param``)."""
        if receiver in call.evals_before:
            return True
        last = None
        for other in self.project.facts[rel].calls:
            if other.caller != call.caller or other.line >= call.line or not other.callee.startswith(receiver + "."):
                continue
            helper = other.callee[len(receiver) + 1:]
            if "." in helper:
                continue
            for fn in self.project.mode_helpers(rel, helper):
                params = list(fn.params[1:])
                if fn.mode_param in params:
                    value = other.argument(fn.mode_param, params.index(fn.mode_param))
                    if value in ("True", "False") and (last is None or other.line >= last[0]):
                        last = (other.line, value)
        return last is not None and last[1] == "False"

    def inherited_attribute(self, cls: str, ref: str) -> Optional[str]:
        """How ``self.<attr>`` (`ref`) of class ``cls`` of this file is set when only a project
        base class of another file sets it: "handed in" (``self.model = model`` in the base's
        ``__init__``: whatever its caller built, in the mode the caller left it) when no method
        of those bases switches its mode; "switched" when one does; None when no project base
        sets it (a base we cannot see may)."""
        found = None
        for rel, current, methods in self._bases_elsewhere(cls):
            if any(ref in fn.evals or ref in fn.trains for fn in methods):
                return "switched"
            if ref in current.handed_in:
                found = "handed in"
        return found

    def backpropagated_by_bases(self, cls: str) -> FrozenSet[str]:
        """The methods of class ``cls`` of this file (``self.<name>`` calls) whose results a method
        of a project base class of another file backpropagates (``loss_v =
        self.validation_loss(...)``, ``loss_v.backward()`` in ``BaseLearner.train``): the pieces
        of the training step that the subclass defines."""
        out = set()
        for _rel, _current, methods in self._bases_elsewhere(cls):
            for fn in methods:
                out.update(c[len("self."):] for c in fn.backprop_calls if c.startswith("self.") and c.count(".") == 1)
        return frozenset(out)

    def _bases_elsewhere(self, cls: str):
        """(file, class facts, its methods' facts) of each project base class of another file
        that class ``cls`` of this file derives from, directly or through project classes."""
        if self.rel not in self.project.facts:
            return
        facts = self.project.classes_of(self.rel).get(cls)
        if facts is None:
            return
        seen: set = set()
        todo = [(self.rel, facts)]
        while todo and len(seen) < 16:
            rel, current = todo.pop()
            if (rel, current.name) in seen:
                continue
            seen.add((rel, current.name))
            if rel != self.rel:
                table = self.project.functions_of(rel)
                yield rel, current, [fn for fn in (table.get(f"{current.name}.{m}") for m in current.methods) if fn is not None]
            for base in current.bases:
                parent = self.project.class_in(rel, base)
                if parent is not None:
                    todo.append(parent)

    def overrides(self, cls: str, method: str) -> List[Tuple[str, FunctionFacts]]:
        """(file, facts) of each method ``method`` that a project class of another file defines
        while deriving from class ``cls`` of this file (directly, or through project classes):
        what a ``self.method()`` call in ``cls`` may run instead of its own (an abstract
        ``evaluate`` that subclasses implement). Only the files that import this one (directly,
        or through a package ``__init__``) are searched: a subclass names its base."""
        if self.rel not in self.project.facts or cls not in self.project.classes_of(self.rel):
            return []
        found = []
        for rel, name in self._subclasses().get(cls, ()):
            fn = self.project.functions_of(rel).get(f"{name}.{method}")
            if fn is not None:
                found.append((rel, fn))
        return found

    def _subclasses(self) -> Dict[str, List[Tuple[str, str]]]:
        """{class of this file: (file, class name) of each class of an importing file that derives
        from it}, from one pass over those files, kept per file (a file with many classes asks for
        many methods; each pass over a package's importers would decode their facts again)."""
        memo = self.project.memo("subclasses")
        table = memo.get(self.rel)
        if table is not None:
            return table
        files = set(self.project.importers(self.rel))
        for other in list(files):
            if other.endswith("__init__.py"):
                files |= self.project.importers(other)
        files.discard(self.rel)
        candidates = [(rel, facts) for rel in sorted(files) for facts in self.project.classes_of(rel).values()]
        table = {}
        for rel, facts in candidates:
            for name in self._derived_from_here(rel, facts, 0, set()):
                table.setdefault(name, []).append((rel, facts.name))
        memo[self.rel] = table
        return table

    def _derived_from_here(self, rel: str, facts: ClassFacts, depth: int, out: set) -> set:
        """The classes of this file that class `facts` of file `rel` derives from (up to 5 levels)."""
        if depth > 4:
            return out
        for base in facts.bases:
            parent = self.project.class_in(rel, base)
            if parent is None or parent[1] is facts:
                continue
            if parent[0] == self.rel:
                out.add(parent[1].name)
            self._derived_from_here(parent[0], parent[1], depth + 1, out)
        return out

    def calls_of(self, rel: str, key: str) -> List[Tuple[str, CallFacts]]:
        """Every call of function `key` of file `rel` in the project: the calls from other files,
        and, for a function of the module's top level, the calls in its own file."""
        found = list(self.project.callers(rel, key))
        if "." not in key and rel in self.project.facts:
            found.extend((rel, call) for call in self.project.facts[rel].calls if call.callee == key)
        return found

    def forward_grad_off(self, qualified: str) -> bool:
        """Whether the forward of a project class turns autograd off itself (some path of it)."""
        found = self.class_named(qualified)
        return found is not None and found[1].forward_grad_off

    def where(self, qualified: str) -> Optional[str]:
        """``path:line`` of a project class or function named in this file."""
        found = self.project.resolve(qualified, self.rel)
        if found is None:
            return None
        return f"{found.rel}:{found.facts.line}"  # type: ignore[union-attr]

    # --- this file's functions, called from elsewhere ----------------------------------------------
    def callers(self, key: str) -> List[Tuple[str, CallFacts]]:
        """Calls of this file's function `key` ("f", "Cls.method") from other files of the project."""
        return self.project.callers(self.rel, key)

    def method_calls_elsewhere(self, method: str) -> List[Tuple[str, CallFacts]]:
        """``<object>.<method>(...)`` calls in the files that import this one (see
        ``Project.method_calls_elsewhere``)."""
        if self.rel not in self.project.facts:
            return []
        return self.project.method_calls_elsewhere(self.rel, method)

    def argument_mode_layers(self, key: str, param: str) -> Optional[FrozenSet[str]]:
        """The mode-dependent layers of the model every caller elsewhere passes for parameter
        `param` of this file's function `key`, when they agree and are known; None otherwise."""
        classes = self.project.argument_classes(self.rel, key, param)
        if not classes or any(self.project.is_module(rel, cls) is not True for rel, cls in classes):
            return None
        answers = {self.project.mode_layers(rel, cls) for rel, cls in classes}
        return answers.pop() if len(answers) == 1 else None

    def argument_forward_returns(self, key: str, param: str) -> Optional[Tuple[str, str]]:
        """(kind, ``path:line``) when every caller elsewhere passes, for parameter `param` of this
        file's function `key`, an instance of a project class whose ``forward`` returns that one
        kind of probability (``softmax``, ``log_softmax``, ``sigmoid``); None otherwise."""
        classes = self.project.argument_classes(self.rel, key, param)
        if not classes:
            return None
        kinds = {self.project.forward_returns(rel, cls) for rel, cls in classes}
        if len(kinds) != 1 or None in kinds:
            return None
        rel, cls = classes[0]
        return kinds.pop(), f"{rel}:{cls.line}"

    # --- caching ----------------------------------------------------------------------------------
    def digest(self) -> str:
        """What this file's findings may depend on in the project: the content of the files it
        imports (transitively) and of the files that import it."""
        if self.rel not in self.project.facts:
            return ""
        seen = {self.rel}
        todo = [self.rel]
        while todo:
            for other in self.project.imported_files(todo.pop()):
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        importers = self.project.importers(self.rel)
        for other in list(importers):  # through a package's ``__init__`` that re-exports it
            if other.endswith("__init__.py"):
                importers |= self.project.importers(other)
        seen |= importers
        seen.discard(self.rel)
        h = hashlib.sha256(b"torch" if self.project.torch else b"-")
        for rel in sorted(seen):
            h.update(rel.encode() + b"\0" + self.project.hashes.get(rel, "").encode())
        return h.hexdigest()
