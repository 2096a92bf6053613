"""The project model: every file's facts, imports resolved to the project's own modules,
classes and functions answered across files.

A ``Project`` is built from ``{relpath: FileFacts}`` (store.py). It maps module names to
files (``pkg/models.py`` is ``pkg.models``; a ``src/`` layout and a script's own directory,
which Python puts first on ``sys.path``, are tried too), resolves a qualified name as a file
writes it (``models.Net``, ``.utils.evaluate``, a name re-exported by a package's
``__init__``) to the class or function that defines it, and answers:

- ``is_module(cls)``: True / False / None (unknown) through bases anywhere in the project;
- ``mode_layers(cls)``: the mode-dependent layers of a class with its bases and submodules
  (a set, empty when known to have none, None when unknown);
- ``forward_returns(cls)``: "log_softmax" / "softmax" / "sigmoid" / None;
- ``callers(rel, key)``: the call sites of a file's function in OTHER files of the project.

A ``ProjectView`` is the project as one file sees it (see view.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from mllint.project.facts import BATCH_NORM, DROPOUT, TRAINING_FLAG, CallFacts, ClassFacts, FunctionFacts
from mllint.project.facts import is_module_base

_MAX_DEPTH = 12
_MEMO_FILES = 256  # files whose classes and functions are kept in dictionaries at once


@dataclass(frozen=True)
class Defined:
    """A class or function of the project: where it is and its facts."""

    rel: str
    kind: str  # "class" or "function"
    facts: object  # ClassFacts or FunctionFacts


def module_names(rel: str) -> List[str]:
    """The module names a file may be imported as (most specific first)."""
    path = rel[:-3] if rel.endswith(".py") else rel
    parts = path.replace(os.sep, "/").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    names = []
    for start in range(len(parts)):
        if parts[start:]:
            names.append(".".join(parts[start:]))
    return names


class Project:
    def __init__(self, root: str, facts, hashes: Optional[Dict[str, str]] = None, graph=None) -> None:
        from mllint.project.store import LazyFacts, in_memory

        self.root = root
        self.facts = facts if isinstance(facts, LazyFacts) else in_memory(facts)
        self.hashes = hashes or {}
        # module name -> files that may be that module (from the root, src/, any parent folder)
        self._modules: Dict[str, List[str]] = {}
        for rel in self.facts:
            if not rel.endswith(".py"):
                continue
            for name in module_names(rel):
                self._modules.setdefault(name, []).append(rel)
        self._classes: Dict[str, Dict[str, ClassFacts]] = {}
        self._functions: Dict[str, Dict[str, FunctionFacts]] = {}
        self._imports: Dict[str, Dict[str, str]] = {}
        self._module_files: Dict[Tuple[str, str], Optional[str]] = {}
        self._imported: Dict[str, FrozenSet[str]] = dict(graph) if isinstance(graph, dict) else {}
        self._importers: Optional[Dict[str, Set[str]]] = None
        self._mode_helpers: Dict[Tuple[str, str], List[FunctionFacts]] = {}
        self._callers: Dict[Tuple[str, str], List[Tuple[str, CallFacts]]] = {}
        self._indexed: Set[str] = set()  # files whose calls are in _callers
        self._instances: Dict[str, Dict[Tuple[str, str], str]] = {}
        self._memos: Dict[str, dict] = {}
        self.torch = any("torch" in self.facts.header(rel)[1] for rel in self.facts)

    def memo(self, name: str) -> dict:
        """A dictionary kept with the project for one kind of derived answer (views are made per
        file and question; what several of them ask again lives here)."""
        return self._memos.setdefault(name, {})

    def imports_of(self, rel: str) -> Dict[str, str]:
        table = self._imports.get(rel)
        if table is None:
            table = self._imports[rel] = dict(self.facts.header(rel)[0])
        return table

    def frameworks_of(self, rel: str) -> FrozenSet[str]:
        return self.facts.header(rel)[1]

    def screen_of(self, rel: str) -> Optional[tuple]:
        """The screen's verdict the facts were stored with (``store.set_screen``), or None."""
        header = self.facts.header(rel)
        return header[2] if len(header) > 2 else None

    # --- files and modules ------------------------------------------------------------------
    def classes_of(self, rel: str) -> Dict[str, ClassFacts]:
        table = self._classes.get(rel)
        if table is None:
            if len(self._classes) > _MEMO_FILES:
                self._classes.clear()  # bounded: a whole-package run asks about every file once
            table = self._classes[rel] = {c.name: c for c in self.facts[rel].classes}
        return table

    def functions_of(self, rel: str) -> Dict[str, FunctionFacts]:
        table = self._functions.get(rel)
        if table is None:
            if len(self._functions) > _MEMO_FILES:
                self._functions.clear()
            table = self._functions[rel] = {f.key: f for f in self.facts[rel].functions}
        return table

    def module_file(self, module: str, importer: Optional[str] = None) -> Optional[str]:
        """The file of ``module`` as `importer` (a relpath) would import it; None when it is not
        the project's, or ambiguous."""
        key = (module, os.path.dirname(importer) if importer is not None else "\0")
        if key not in self._module_files:
            self._module_files[key] = self._module_file(module, importer)
        return self._module_files[key]

    def _module_file(self, module: str, importer: Optional[str]) -> Optional[str]:
        if module.startswith("."):
            if importer is None:
                return None
            level = len(module) - len(module.lstrip("."))
            package = os.path.dirname(importer).replace(os.sep, "/")
            for _ in range(level - 1):
                package = os.path.dirname(package)
            rest = module.lstrip(".").replace(".", "/")
            base = f"{package}/{rest}" if package and rest else (package or rest)
            for candidate in (base + ".py", base + "/__init__.py"):
                if candidate in self.facts:
                    return candidate
            return None
        if importer is not None:  # a script's own folder comes first on sys.path
            folder = os.path.dirname(importer).replace(os.sep, "/")
            rest = module.replace(".", "/")
            for candidate in (f"{folder}/{rest}.py", f"{folder}/{rest}/__init__.py") if folder else (
                    f"{rest}.py", f"{rest}/__init__.py"):
                if candidate in self.facts:
                    return candidate
        found = self._modules.get(module)
        if not found:
            return None
        if len(found) == 1:
            return found[0]
        exact = [rel for rel in found if module_names(rel)[0] == module]  # from the root itself
        return exact[0] if len(exact) == 1 else None

    def resolve(self, qualified: str, importer: Optional[str], depth: int = 0) -> Optional[Defined]:
        """The class or function a qualified name (as `importer` writes it) stands for."""
        if depth > _MAX_DEPTH or not qualified:
            return None
        leading = len(qualified) - len(qualified.lstrip("."))
        parts = qualified[leading:].split(".")
        for cut in range(len(parts) - 1, -1, -1):
            module = "." * leading + ".".join(parts[:cut])
            if not module.strip("."):
                if not leading:
                    continue
            rel = self.module_file(module, importer) if module else None
            if rel is None:
                if not module and leading and importer is not None:
                    rel = self.module_file("." * leading, importer)
                if rel is None:
                    continue
            rest = parts[cut:]
            if not rest:
                return None  # a module, not a class or function
            return self._lookup(rel, rest, depth)
        if importer is not None and not leading and len(parts) == 1 and depth < _MAX_DEPTH:
            for star in self.star_modules(importer):  # a bare name a star import binds
                found = self._lookup(star, parts, depth + 1)
                if found is not None:
                    return found
        return None

    def _lookup(self, rel: str, rest: List[str], depth: int) -> Optional[Defined]:
        name = rest[0]
        if len(rest) == 1 and name in self.classes_of(rel):
            return Defined(rel, "class", self.classes_of(rel)[name])
        if len(rest) == 1 and name in self.functions_of(rel):
            return Defined(rel, "function", self.functions_of(rel)[name])
        if len(rest) == 2 and name in self.classes_of(rel):
            return self.method_of(rel, self.classes_of(rel)[name], rest[1], set())
        imported = self.imports_of(rel).get(name)  # re-exported: ``from .models import Net``
        if imported is not None:
            return self.resolve(".".join([imported] + rest[1:]), rel, depth + 1)
        if depth < _MAX_DEPTH:
            for star in self.star_modules(rel):  # re-exported by ``from .models import *``
                found = self._lookup(star, rest, depth + 1)
                if found is not None:
                    return found
        return None

    def star_modules(self, rel: str) -> Tuple[str, ...]:
        """The project files that file `rel` star-imports (``from ..network import *``), in order."""
        memo = self.memo("star_modules")
        found = memo.get(rel)
        if found is None and rel not in self.facts:
            return ()  # a file outside the project's facts (excluded, but named on the command line)
        if found is None:
            files = []
            for local, qualified in self.imports_of(rel).items():
                if local[:1] == "*":
                    target = self.module_file(qualified, rel)
                    if target is not None and target != rel:
                        files.append(target)
            found = memo[rel] = tuple(files)
        return found

    def star_torch(self, rel: str) -> bool:
        """Whether what file `rel` star-imports from the project, directly or through further
        star imports, binds torch names (a module that imports torch) or defines ``nn.Module``
        classes: a file written against ``from ..network import *`` is torch code."""
        memo = self.memo("star_torch")
        if rel in memo:
            return memo[rel]
        memo[rel] = False  # (cycles)
        found = False
        for star in self.star_modules(rel):
            if "torch" in self.frameworks_of(star) or any(
                    self.is_module(star, cls) for cls in self.classes_of(star).values()) or self.star_torch(star):
                found = True
                break
        memo[rel] = found
        return found

    def method_of(self, rel: str, cls: ClassFacts, method: str, seen: Set) -> Optional[Defined]:
        """The method a project class runs for ``method``: its own, else a project base class's."""
        if (rel, cls.name) in seen or len(seen) > _MAX_DEPTH:
            return None
        seen.add((rel, cls.name))
        fn = self.functions_of(rel).get(f"{cls.name}.{method}")
        if fn is not None:
            return Defined(rel, "function", fn)
        for base in cls.bases:
            parent = self.class_in(rel, base)
            if parent is not None:
                found = self.method_of(parent[0], parent[1], method, seen)
                if found is not None:
                    return found
        return None

    def qualify(self, rel: str, dotted_name: str) -> str:
        """A dotted name as file `rel` writes it, with its first part qualified through the file's imports."""
        head, _, tail = dotted_name.partition(".")
        full = self.imports_of(rel).get(head)
        if full is None:
            return dotted_name
        return f"{full}.{tail}" if tail else full

    def class_in(self, rel: str, dotted_name: str) -> Optional[Tuple[str, ClassFacts]]:
        """The project class a name written in file `rel` refers to (a class of the file itself,
        or one it imports from the project)."""
        if dotted_name in self.classes_of(rel):
            return rel, self.classes_of(rel)[dotted_name]
        found = self.resolve(self.qualify(rel, dotted_name), rel)
        if found is not None and found.kind == "class":
            return found.rel, found.facts  # type: ignore[return-value]
        return None

    # --- classes ------------------------------------------------------------------------------
    def is_module(self, rel: str, cls: ClassFacts, seen: Optional[Set] = None) -> Optional[bool]:
        """Whether a project class derives from nn.Module: True, False (every base is known and
        none is), or None (some base is neither the project's nor known)."""
        seen = seen if seen is not None else set()
        if (rel, cls.name) in seen or len(seen) > _MAX_DEPTH:
            return None
        seen.add((rel, cls.name))
        unknown = False
        for base in cls.bases:
            qualified = self.qualify(rel, base)
            found = self.class_in(rel, base)  # a class of the project first: a numpy ``class Module(object)``
            if found is None and (is_module_base(qualified) or is_module_base(base)):
                return True
            if base in ("object", "ABC", "abc.ABC") or qualified in ("abc.ABC", "typing.Generic", "Generic") \
                    or base in ("Exception", "dict", "list", "tuple", "str", "int", "float", "type"):
                continue
            if found is None:
                unknown = True
                continue
            verdict = self.is_module(found[0], found[1], seen)
            if verdict:
                return True
            if verdict is None:
                unknown = True
        return None if unknown else False

    def mode_layers(self, rel: str, cls: ClassFacts, seen: Optional[Set] = None, own: bool = False) -> Optional[FrozenSet[str]]:
        """The mode-dependent layer kinds of a class, its project bases and the project classes it
        builds as submodules; an empty set when known to have none; None when unknown. With
        `own`, the modules handed to the class itself (``self.model = model``) are left out:
        the layers it builds, whatever it is given."""
        seen = seen if seen is not None else set()
        if (rel, cls.name) in seen:
            return frozenset()
        seen.add((rel, cls.name))
        found = set(cls.layers)
        unknown = cls.opaque and not own
        for base in cls.bases:
            qualified = self.qualify(rel, base)
            if is_module_base(qualified) or is_module_base(base) or base == "object":
                continue
            parent = self.class_in(rel, base)
            if parent is None:
                unknown = True
                continue
            sub = self.mode_layers(parent[0], parent[1], seen)
            if sub is None:
                unknown = True
            else:
                found |= sub
        for callee in cls.submodules:
            part = self.class_in(rel, callee)
            if part is None:
                if not self.qualify(rel, callee).startswith(("torch.", "nn.")) and _maybe_module(callee):
                    unknown = True  # a model part from a library or a factory we cannot see
                continue
            sub = self.mode_layers(part[0], part[1], seen)
            if sub is None:
                unknown = True
            else:
                found |= sub
        if found:
            return frozenset(found)
        return None if unknown else frozenset()

    def forward_returns(self, rel: str, cls: ClassFacts, depth: int = 0) -> Optional[str]:
        if cls.forward_returns or "forward" in cls.methods or depth > _MAX_DEPTH:
            return cls.forward_returns
        for base in cls.bases:  # forward inherited from a project base
            parent = self.class_in(rel, base)
            if parent is not None:
                return self.forward_returns(parent[0], parent[1], depth + 1)
        return None

    # --- callers across files -------------------------------------------------------------------
    def callers(self, rel: str, key: str) -> List[Tuple[str, CallFacts]]:
        """Call sites, in other files, of function `key` ("f" or "Cls.method") of file `rel`.

        Only the files that import `rel` (directly, or through a package ``__init__`` that
        re-exports it) can call it; their calls are resolved on first use."""
        candidates = set(self.importers(rel))
        for other in list(candidates):
            if other.endswith("__init__.py"):
                candidates |= self.importers(other)
        for other in candidates - self._indexed:
            self._index_calls(other)
        found = list(self._callers.get((rel, key), []))
        cls_name, _, method = key.rpartition(".")
        cls = self.classes_of(rel).get(cls_name) if cls_name and "." not in cls_name else None
        if cls is not None:
            found.extend(self._base_class_callers(rel, cls, method, set()))
        return found

    def mode_helpers(self, rel: str, method: str) -> List[FunctionFacts]:
        """The methods named `method`, with a ``mode_param``, of the classes of file `rel` and of
        the files it imports, and the files those import (where the class of an object `rel`
        calls ``obj.method(False)`` on, and its bases, are defined). Only those files' facts are
        read: a whole-package run must not decode every file's facts for one question."""
        key = (rel, method)
        found = self._mode_helpers.get(key)
        if found is None:
            files = {rel}
            for first in self.imported_files(rel):
                files.add(first)
                files.update(self.imported_files(first))
            found = [fn for other in sorted(files) if other in self.facts for fn in self.facts[other].functions
                     if fn.mode_param and fn.key.rsplit(".", 1)[-1] == method and "." in fn.key]
            if len(self._mode_helpers) > _MEMO_FILES:
                self._mode_helpers.clear()
            self._mode_helpers[key] = found
        return found

    def method_calls_elsewhere(self, rel: str, method: str) -> List[Tuple[str, CallFacts]]:
        """``<object>.<method>(...)`` calls (not of ``self``, nor of an imported module's function)
        in the files that import file `rel`, directly or through a package ``__init__``: the
        calls that may run the method of a class of `rel` on one of its instances (the
        receiver's class is not known)."""
        candidates = set(self.importers(rel))
        for other in list(candidates):
            if other.endswith("__init__.py"):
                candidates |= self.importers(other)
        out = []
        for other in sorted(candidates):
            aliases = {local for local, _ in self.facts[other].imports}
            for call in self.facts[other].calls:
                head, _, last = call.callee.rpartition(".")
                if last == method and head and head != "self" and not head.startswith("self.") \
                        and head.split(".", 1)[0] not in aliases:
                    out.append((other, call))
        return out

    def _base_class_callers(self, rel: str, cls: ClassFacts, method: str, seen: Set) -> List[Tuple[str, CallFacts]]:
        """``self.<method>(...)`` in the methods of the class's base classes defined in OTHER files
        of the project (a template method: ``BasePolicy.predict`` calling ``self._predict``)."""
        out: List[Tuple[str, CallFacts]] = []
        for base in cls.bases:
            parent = self.class_in(rel, base)
            if parent is None or (parent[0], parent[1].name) in seen:
                continue
            seen.add((parent[0], parent[1].name))
            prefix = parent[1].name + "."
            if parent[0] != rel:
                out.extend((parent[0], call) for call in self.facts[parent[0]].calls
                           if call.callee == f"self.{method}" and call.caller.startswith(prefix))
            out.extend(self._base_class_callers(parent[0], parent[1], method, seen))
        return out

    def _index_calls(self, rel: str) -> None:
        self._indexed.add(rel)
        if not self.imports_of(rel):
            return
        for call in self.facts[rel].calls:
            target = self.called(rel, call)
            if target is not None and target.rel != rel:
                self._callers.setdefault((target.rel, target.facts.key), []).append((rel, call))  # type: ignore[union-attr]

    def called(self, rel: str, call: CallFacts) -> Optional[Defined]:
        """The project function a call of file `rel` runs: a function it imports (``evaluate(...)``,
        ``utils.evaluate(...)``) or a method of an instance of a class it imports (``d = Disc()``
        then ``d.step(x)``); None otherwise."""
        imports = self.imports_of(rel)
        head, _, tail = call.callee.partition(".")
        if head in imports:
            found = self.resolve(imports[head] + ("." + tail if tail else ""), rel)
            return found if found is not None and found.kind == "function" else None
        if not tail and self.star_modules(rel) and head not in self.functions_of(rel) and head not in self.classes_of(rel):
            found = self.resolve(head, rel)  # a function a star import binds
            if found is not None:
                return found if found.kind == "function" else None
        if not tail or "." in tail:
            return None
        instances = self._instances_of(rel)
        cls_name = instances.get((call.caller, head)) or instances.get(("<module>", head))
        if cls_name is None or cls_name.split(".", 1)[0] not in imports:
            return None
        found = self.class_in(rel, cls_name)
        if found is None:
            return None
        fn = self.functions_of(found[0]).get(f"{found[1].name}.{tail}")
        return Defined(found[0], "function", fn) if fn is not None else None

    def returned_classes(self, rel: str, fn: FunctionFacts) -> Optional[List[Tuple[str, ClassFacts]]]:
        """The project module classes function `fn` of file `rel` builds and returns, when every
        return builds one (``def load_model(path): m = Net(); ...; return m``); None otherwise."""
        if not fn.returns:
            return None
        found = [self.class_in(rel, callee) for callee in fn.returns]
        if any(c is None or self.is_module(c[0], c[1]) is not True for c in found):
            return None
        return found  # type: ignore[return-value]

    def argument_classes(self, rel: str, key: str, param: str) -> Optional[List[Tuple[str, ClassFacts]]]:
        """The project classes whose instances the callers of function `key` of file `rel` (in other
        files) pass for parameter `param`: ``source_only(encoder, classifier, ...)`` called from
        ``main.py`` with ``classifier = model.Classifier().cuda()``. None unless there is a caller
        and every caller passes an instance of a project class it built (``name = Cls(...)``)."""
        fn = self.functions_of(rel).get(key)
        if fn is None or param not in fn.params:
            return None
        params = list(fn.params)
        if "." in key and params and params[0] in ("self", "cls"):
            params = params[1:]
        if param not in params:
            return None
        index = params.index(param)
        found: List[Tuple[str, ClassFacts]] = []
        callers = self.callers(rel, key)
        for caller_rel, call in callers:
            arg = call.argument(param, index)
            if not arg or arg == "?" or "." in arg:
                return None
            instances = self._instances_of(caller_rel)
            callee = instances.get((call.caller, arg)) or instances.get(("<module>", arg))
            cls = self.class_in(caller_rel, callee) if callee else None
            if cls is None:
                return None
            found.append(cls)
        return found or None

    def _instances_of(self, rel: str) -> Dict[Tuple[str, str], str]:
        table = self._instances.get(rel)
        if table is None:
            table = self._instances[rel] = {(scope, name): callee for scope, name, callee in self.facts[rel].instances}
        return table

    def importers(self, rel: str) -> Set[str]:
        """The files that import file `rel` (directly)."""
        if self._importers is None:
            table: Dict[str, Set[str]] = {}
            for other in self.facts:
                for target in self.imported_files(other):
                    table.setdefault(target, set()).add(other)
            self._importers = table
        return self._importers.get(rel, set())

    def _module_of(self, qualified: str, importer: str) -> Optional[str]:
        leading = len(qualified) - len(qualified.lstrip("."))
        parts = qualified[leading:].split(".")
        for cut in range(len(parts), -1, -1):
            module = "." * leading + ".".join(parts[:cut])
            if not module:
                continue
            rel = self.module_file(module, importer)
            if rel is not None:
                return rel
        return None

    def imported_files(self, rel: str) -> FrozenSet[str]:
        """The project files that file `rel` imports (directly)."""
        found = self._imported.get(rel)
        if found is None:
            out = set()
            for qualified in self.imports_of(rel).values():
                target = self._module_of(qualified, rel)
                if target is not None and target != rel:
                    out.add(target)
            found = self._imported[rel] = frozenset(out)
        return found

    def graph(self) -> Dict[str, FrozenSet[str]]:
        """{file: the project files it imports}, for every file (stored with the facts)."""
        return {rel: self.imported_files(rel) for rel in self.facts}


def _maybe_module(callee: str) -> bool:
    """A submodule built by a callee we cannot see: unknown only when it may be a model part
    (a capitalised class or a factory), not for plain helpers."""
    last = callee.rsplit(".", 1)[-1]
    return last[:1].isupper() or last.startswith(("build", "make", "create", "get_"))


__all__ = ["Project", "Defined", "module_names", "DROPOUT", "BATCH_NORM", "TRAINING_FLAG"]
