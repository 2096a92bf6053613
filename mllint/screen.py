"""A cheap, sound screen before the LibCST parse: which rules can possibly fire in a file.

The trigger words (``Rule.triggers``) look at raw text, and words such as ``eval``, ``load``
or ``step`` are in nearly every PyTorch file. The screen parses the file once with CPython's
own parser (``ast``, several times cheaper than LibCST's) and collects, in ONE walk, a few
cheap facts (`Facts`): the calls (by attribute, by name, by qualified name through the file's
imports), the calls written inside a loop, the identifiers, the imports, the ``for`` loops.
Each rule may declare a predicate over these facts in its own module::

    def SCREEN(facts) -> bool:  # False: the rule cannot report anything in this file

(loaded by ``registry.rule_from_module`` as ``Rule.screen``; a rule without one always
passes). A predicate must be *sound*: it may only return False when the rule's check could
not report a finding, whatever the rest of the file says; when unsure it returns True.
``tests/test_screen.py`` and ``tests/realworld/bench.py screen`` check that the findings are
the same with and without the screen.

API (no LibCST needed):

- ``parse(source, path)``: the ``ast.Module``, or raises what ``compile`` raises;
- ``facts_of(tree)`` -> `Facts`;
- ``screened(facts, rules)``: the rules whose screen passes;
- ``passing(source, rules)``: the codes of the rules whose screen passes for ``source``
  (all of them when CPython cannot parse it: the engine then decides with LibCST).
"""

from __future__ import annotations

import ast
from collections import Counter
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from mllint.pyast import EVAL_SPLITS, dotted, statement_starts  # noqa: F401  (screen.*: the engine)


__all__ = ["Facts", "parse", "facts_of", "screened", "passing", "child_nodes", "walk"]


def parse(source: str, path: str = "<unknown>") -> ast.Module:
    """CPython's parse of `source`, as the engine's syntax check compiles it."""
    return compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)


_dotted = dotted


class Facts:
    """What one walk over a module's ``ast`` saw. All sets of plain strings.

    - ``attr_calls``: Counter of the attribute names called (``x.step()`` -> ``step``);
    - ``zero_arg_attr_calls`` / ``arg_attr_calls``: attribute names called without any
      argument / with some;
    - ``ref_attr_calls``: attribute names called on an object reference, as ``names.ref_of``
      reads one (``self.head.forward(x)``, ``blocks[0].forward(x)``; not ``super().forward(x)``);
    - ``eval_switch``: some call switches a model to eval mode as the semantic model's
      EVAL effect reads one: ``x.eval()``, ``x.train(False)``, ``x.train(mode=False)``
      (``x.train(self.training)``, whose mode is unknown, is not one);
    - ``name_calls``: plain names called (``fit(...)`` -> ``fit``);
    - ``call_quals``: the dotted callee of each call, qualified through every import that
      binds its first part anywhere in the file (``F.cross_entropy`` -> also
      ``torch.nn.functional.cross_entropy``), as ``ImportTable.qualname`` would spell it;
    - ``loop_call_quals`` / ``loop_attr_calls``: the same for calls written inside the body of a
      ``for``/``while`` loop of the same function (lambdas and comprehensions included,
      nested ``def``/``class`` bodies not), as the semantic model's ``Context.loop`` sees them;
    - ``script_call_quals``: ``call_quals`` of the calls in a scope that is no function of
      the file (module level, class bodies) or a function named main/run/cli/demo/app (where
      ML002/ML005 see an inference script);
    - ``identifiers``: the names and attribute names the code reads or binds, and string (or bytes) keys
      of subscripts (``batch["val"]``): what references (``ref_of``) are made of;
    - ``imported_names``: the local names imports bind and every part of what they import;
    - ``function_names``: the names of the functions defined (``def``/``async def``);
    - ``imports``: the qualified names the imports bind (``torch.nn.functional``);
    - ``aliases``: local name -> every qualified name an import binds it to;
    - ``for_loops``: the ``ast.For`` nodes (not ``async for``);
    - ``has_loop``, ``has_class``;
    - ``references()`` (computed on demand, with a second walk): every reference the code
      writes, as the semantic model spells them.
    """

    __slots__ = (
        "attr_calls", "zero_arg_attr_calls", "arg_attr_calls", "ref_attr_calls", "name_calls", "script_call_quals",
        "_script_call_dotted", "call_quals", "loop_call_quals", "loop_attr_calls",
        "identifiers", "imported_names", "function_names", "imports", "aliases", "for_loops", "has_loop", "has_class",
        "eval_switch", "eval_split_arg", "pretrained_build", "tree", "_references", "_call_dotted",
        "_loop_call_dotted", "_call_names", "_torch_project", "_project_words", "implied_read", "_tree_memo",
    )

    def __init__(self) -> None:
        self.attr_calls: Counter = Counter()
        self.zero_arg_attr_calls: Set[str] = set()
        self.arg_attr_calls: Set[str] = set()
        self.ref_attr_calls: Set[str] = set()
        self.script_call_quals: Set[str] = set()
        self._script_call_dotted: Set[str] = set()
        self.name_calls: Set[str] = set()
        self.call_quals: Set[str] = set()
        self.loop_call_quals: Set[str] = set()
        self.loop_attr_calls: Set[str] = set()
        self.identifiers: Set[str] = set()
        self.function_names: Set[str] = set()
        self.imported_names: Set[str] = set()
        self.imports: Set[str] = set()
        self.aliases: Dict[str, Set[str]] = {}
        self.for_loops: List[ast.For] = []
        self.has_loop = False
        self.has_class = False
        self.eval_switch = False
        self.eval_split_arg = False  # a call given a string naming an evaluation split (``get_batch("val")``)
        self.pretrained_build = False  # a call given trained weights (``resnet18(pretrained=True)``)
        self.tree: Optional[ast.AST] = None
        self._references: Optional[Set[str]] = None
        self._tree_memo: Dict[str, bool] = {}
        self._call_dotted: Set[str] = set()
        self._loop_call_dotted: Set[str] = set()
        self._call_names: Optional[Set[str]] = None
        # set by the engine: the file imports the project's own torch modules (mllint/project/)
        self._torch_project = False
        # set by the engine: words the project implies for this file (``softmax``: a model class it
        # imports ends its forward in one), see ProjectView.implied_words
        self._project_words: frozenset = frozenset()
        self.implied_read = False  # a screen read one of the two (engine.screen_verdict)

    @property
    def torch_project(self) -> bool:
        self.implied_read = True
        return self._torch_project

    @torch_project.setter
    def torch_project(self, value: bool) -> None:
        self._torch_project = value

    @property
    def project_words(self) -> frozenset:
        self.implied_read = True
        return self._project_words

    @project_words.setter
    def project_words(self, value: frozenset) -> None:
        self._project_words = value

    # --- queries used by the rules' predicates -----------------------------------------------
    @property
    def call_names(self) -> Set[str]:
        """The last part of every callee: attribute, plain name, and qualified forms."""
        if self._call_names is None:
            names = set(self.attr_calls) | self.name_calls
            names.update(q.rsplit(".", 1)[-1] for q in self.call_quals)
            self._call_names = names
        return self._call_names

    def calls_any(self, qualified) -> bool:
        """Whether some call's qualified callee is one of `qualified`."""
        return not self.call_quals.isdisjoint(qualified)

    def imports_module(self, prefix: str) -> bool:
        """As ``ImportTable.imports_module``: an import binds `prefix` or something inside it."""
        return any(v == prefix or v.startswith(prefix + ".") for v in self.imports)

    def of_text(self, key: str, compute: Callable[["Facts"], bool]) -> bool:
        """``compute(self)`` for a predicate of the text alone (not of the words the project
        implies), computed once per file and shared by several rules' screens (ML002 and ML005:
        ``words.evaluation_possible``) and by every set of implied words
        (``engine.screen_verdict``)."""
        found = self._tree_memo.get(key)
        if found is None:
            found = self._tree_memo[key] = compute(self)
        return found

    def references(self) -> Set[str]:
        """Every reference the semantic model can make of this code, spelt as it spells
        them (``names.ref_of``, ``dotted``): each name, each dotted chain and each of its
        prefixes (``self.val_loader``), each subscript of one by a constant or a name
        (``loaders["val"]``, ``batches[0]``, ``data[split]``), and the last part of each
        called chain without ``get_`` (``self.get_val_loader()`` -> ``val_loader``, as
        ``Phases.iterated_data`` reads it). A superset: a string key is spelt from its value,
        without the quotes and prefixes of its source text (words in them only add tokens)."""
        if self._references is None:
            self._references = _references(self.tree) if self.tree is not None else set()
        return self._references

    def qualify(self, dotted: str) -> Set[str]:
        head, _, rest = dotted.partition(".")
        fulls = self.aliases.get(head)
        if not fulls:
            return {dotted}
        return {f"{full}.{rest}" if rest else full for full in fulls}

    # --- building ------------------------------------------------------------------------------
    def _bind(self, local: str, full: str) -> None:
        self.aliases.setdefault(local, set()).add(full)
        self.imports.add(full)

    def _finish(self) -> "Facts":
        for dotted in self._call_dotted:
            self.call_quals.update(self.qualify(dotted))
        for dotted in self._loop_call_dotted:
            self.loop_call_quals.update(self.qualify(dotted))
        for dotted in self._script_call_dotted:
            self.script_call_quals.update(self.qualify(dotted))
        for local, fulls in self.aliases.items():
            self.imported_names.add(local)
            for full in fulls:
                self.imported_names.update(p for p in full.split(".") if p)
        return self


def _pretrained_keyword(keyword: ast.keyword) -> bool:
    """``pretrained=True``, ``weights="IMAGENET1K_V1"``, ``weights=ResNet50_Weights.DEFAULT``:
    a constructor given trained weights (``evaluation._pretrained_build``); not
    ``pretrained=pretrained`` or ``weights=None``."""
    value = keyword.value
    if keyword.arg == "pretrained":
        return type(value) is ast.Constant and value.value is True
    if keyword.arg != "weights":
        return False
    if type(value) is ast.Constant:
        return type(value.value) is str and value.value != ""
    while type(value) is ast.Attribute:
        if value.attr.endswith("_Weights"):
            return True
        value = value.value
    return type(value) is ast.Name and value.id.endswith("_Weights")


def _false_mode(call: ast.Call) -> bool:
    """``x.train(False)`` / ``x.train(mode=False)``: the literal the builder reads as EVAL."""
    first = call.args[0] if call.args else None
    if type(first) is ast.Constant and first.value is False:
        return True
    return any(k.arg == "mode" and type(k.value) is ast.Constant and k.value.value is False for k in call.keywords)


_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


_MAIN_NAMES = frozenset({"main", "run", "cli", "demo", "app"})


def facts_of(tree: ast.AST) -> Facts:
    """One walk over `tree` (iterative: deep nesting does not recurse)."""
    facts = Facts()
    facts.tree = tree
    memo: Dict[int, Optional[str]] = {}
    ids = facts.identifiers
    attr_calls = facts.attr_calls
    # (node, written inside a loop body of the current function, in a script scope)
    stack = [(tree, False, True)]
    pop, push = stack.pop, stack.append
    Name, Attribute, Call, Subscript, Constant = ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant
    AST = ast.AST
    while stack:
        node, in_loop, script = pop()
        kind = type(node)
        if kind is Name:
            ids.add(node.id)
            continue
        if kind is Attribute:
            ids.add(node.attr)
        elif kind is Call:
            func = node.func
            if type(func) is Attribute:
                attr_calls[func.attr] += 1
                if node.args or node.keywords:
                    facts.arg_attr_calls.add(func.attr)
                else:
                    facts.zero_arg_attr_calls.add(func.attr)
                if func.attr == "eval" and not (node.args or node.keywords) or func.attr == "train" and _false_mode(node):
                    facts.eval_switch = True
                if in_loop:
                    facts.loop_attr_calls.add(func.attr)
                if _reference(func.value, memo) is not None:
                    facts.ref_attr_calls.add(func.attr)
            elif type(func) is Name:
                facts.name_calls.add(func.id)
            if node.keywords and not facts.pretrained_build:
                facts.pretrained_build = any(_pretrained_keyword(k) for k in node.keywords)
            if not facts.eval_split_arg:
                for arg in node.args + [k.value for k in node.keywords]:
                    if type(arg) is Constant and type(arg.value) is str and arg.value in EVAL_SPLITS:
                        facts.eval_split_arg = True
            dotted = _dotted(func)
            if dotted is not None:
                facts._call_dotted.add(dotted)
                if in_loop:
                    facts._loop_call_dotted.add(dotted)
                if script:
                    facts._script_call_dotted.add(dotted)
            elif script and type(func) is Attribute:
                facts.script_call_quals.add(func.attr)  # get_model().load_state_dict(sd)
        elif kind is Subscript:
            key = node.slice
            if type(key) is Constant and type(key.value) in (str, bytes):
                value = key.value
                ids.add(value if type(value) is str else value.decode("latin-1"))
        elif kind in _LOOPS:
            facts.has_loop = True
            if kind is ast.While:
                push((node.test, True, script))
                for child in node.body:
                    push((child, True, script))
            else:
                if kind is ast.For:
                    facts.for_loops.append(node)
                push((node.iter, in_loop, script))
                push((node.target, in_loop, script))
                for child in node.body:
                    push((child, True, script))
            for child in node.orelse:
                push((child, in_loop, script))
            continue
        elif kind in _DEFS:
            facts.function_names.add(node.name)
            inner = node.name in _MAIN_NAMES
            for child in node.body:
                push((child, False, inner))
            for child in node.decorator_list:
                push((child, in_loop, script))
            push((node.args, in_loop, script))
            if node.returns is not None:
                push((node.returns, in_loop, script))
            continue
        elif kind is ast.ClassDef:
            facts.has_class = True
            for child in node.body:
                push((child, False, True))  # a class body is no function's scope
            for child in node.bases + node.keywords + node.decorator_list:
                push((child, in_loop, script))
            continue
        elif kind is ast.Import:
            for alias in node.names:
                if alias.asname:
                    facts._bind(alias.asname, alias.name)
                else:
                    top = alias.name.split(".")[0]
                    facts._bind(top, top)
                    facts.imports.add(alias.name)
            continue
        elif kind is ast.ImportFrom:
            base = "." * (node.level or 0) + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    continue
                full = f"{base}.{alias.name}" if base else alias.name
                facts._bind(alias.asname or alias.name, full)
            continue
        # (inlined `_child_nodes`: this loop runs for every node of every file screened)
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = _child_fields(kind)
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, AST):
                        push((item, in_loop, script))
            elif isinstance(value, AST):
                push((value, in_loop, script))
    return facts._finish()


def _reference(node: ast.AST, memo: Dict[int, Optional[str]]) -> Optional[str]:
    """``names.ref_of`` of an ``ast`` expression (None: not a reference)."""
    key = id(node)
    if key in memo:
        return memo[key]
    kind = type(node)
    found: Optional[str] = None
    if kind is ast.Name:
        found = node.id
    elif kind is ast.Attribute:
        base = _reference(node.value, memo)
        if base is not None and "[" not in base:
            found = f"{base}.{node.attr}"
    elif kind is ast.Subscript:
        base = _reference(node.value, memo)
        index = node.slice
        if base is not None:
            if type(index) is ast.Name:
                found = f"{base}[{index.id}]"
            elif type(index) is ast.Constant and not isinstance(index.value, (float, complex)) and index.value is not ...:
                value = index.value
                text = repr(value) if isinstance(value, (str, bytes)) else str(value)
                found = f"{base}[{text}]"
    memo[key] = found
    return found


def _references(tree: ast.AST) -> Set[str]:
    refs: Set[str] = set()
    memo: Dict[int, Optional[str]] = {}
    stack = [tree]
    pop = stack.pop
    kinds = (ast.Name, ast.Attribute, ast.Subscript)
    while stack:
        node = pop()
        kind = type(node)
        if kind in kinds:
            ref = _reference(node, memo)
            if ref is not None:
                refs.add(ref)
        elif kind is ast.Call:
            called = _dotted(node.func)
            if called is not None:
                refs.add(called.rsplit(".", 1)[-1].replace("get_", ""))
        stack.extend(_child_nodes(node, kind))
    return refs


# node class -> the fields that may hold nodes the walk needs: not a Load/Store context, not
# an operator (``ast.Add``), not a constant's value
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}
_LEAF_FIELDS = frozenset({"ctx", "op", "ops", "value_kind", "kind", "type_comment", "conversion"})


def _child_nodes(node: ast.AST, kind: type) -> List[ast.AST]:
    """The child nodes of `node` (of class `kind`) a walk needs (`_child_fields`)."""
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = _child_fields(kind)
    out = []
    for name in fields:
        value = getattr(node, name, None)
        if type(value) is list:
            out.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


def child_nodes(node: ast.AST) -> List[ast.AST]:
    """The child nodes of `node` that can hold code: no context, operator or constant fields
    (what a walk for calls, names and statements needs; faster than ``ast.iter_child_nodes``)."""
    return _child_nodes(node, type(node))


def walk(node: ast.AST):
    """``ast.walk`` over `child_nodes` (breadth first)."""
    todo = [node]
    for current in todo:
        yield current
        todo.extend(_child_nodes(current, type(current)))


def _child_fields(kind: type) -> Tuple[str, ...]:
    if kind is ast.Constant or issubclass(kind, (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)):
        return ()
    return tuple(name for name in kind._fields if name not in _LEAF_FIELDS)


def screened(facts: Facts, rules: Sequence) -> list:
    """The rules of `rules` whose screen passes (a rule without one always does)."""
    return [rule for rule in rules if getattr(rule, "screen", None) is None or rule.screen(facts)]


def passing(source: str, rules: Sequence, path: str = "<unknown>") -> List[str]:
    """Codes of the rules whose screen passes for `source` (every rule when CPython cannot
    parse it: the engine then leaves the decision to LibCST)."""
    try:
        tree = parse(source, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [rule.code for rule in rules]
    return [rule.code for rule in screened(facts_of(tree), rules)]
