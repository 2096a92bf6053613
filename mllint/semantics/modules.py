"""Which references hold a torch ``nn.Module`` instance, on evidence stronger than spelling.

Rules that rewrite calls on a model (ML011: ``model.forward(x)`` -> ``model(x)``) need to
know that the object is an ``nn.Module`` and that calling it runs ``Module.__call__``
(hooks, then ``forward``). ``known_module`` answers from the semantic model's facts:
a class defined in the file that derives from ``nn.Module`` (through local bases too),
a name bound to a torch layer, a torchvision/timm/transformers model or a wrapper of
one (``DDP``, ``torch.compile``), an ``nn.Module`` annotation, or a use only modules have
(``.eval()``, ``.parameters()`` handed on). The spelling of the name alone
(``model``, ``net``) is never enough.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from mllint.semantics import roles as R
from mllint.semantics.model import ANY, FileModel
from mllint.semantics.names import dotted, target_names
from mllint.semantics.tree import NodeIndex, children as tree_children

# The evidence ``known_module`` found.
LOCAL_CLASS = "local class"  # an instance of a class defined in the file that derives from nn.Module
BOUND = "bound"  # constructor, annotation or use says it is a model
NAMED = "named"  # only its spelling (``self.policy``, ``model``) in a file that imports torch: no safe fix on it


def local_module_class(model: FileModel, ref: str, scope: str) -> Optional[str]:
    """The class defined in this file whose instance ``ref`` holds, when it is a module."""
    name = model.instance_of.get(scope, ref) or model.instance_of.get(scope, model.canonical(ref, scope))
    if name is None:
        return None
    info = model.classes.get(name)
    return name if info is not None and is_module_class(model, name) else None


def is_module_class(model: FileModel, name: str, seen: Optional[set] = None) -> bool:
    """Whether a class defined in this file derives (through local bases) from an nn.Module base."""
    seen = seen if seen is not None else set()
    info = model.classes.get(name)
    if info is None or name in seen:
        return False
    seen.add(name)
    if info.is_module:
        return True
    for base in info.bases:
        if R.is_module_base(model.imports.qualify(base) or base) or is_module_class(model, base.rsplit(".", 1)[-1], seen):
            return True
        if model.project is not None and base.rsplit(".", 1)[-1] not in model.classes and model.project.is_module(base):
            return True  # a base class defined in another file of the project
    return False


def overrides_call(model: FileModel, name: str, seen: Optional[set] = None) -> bool:
    """Whether a class defined in this file (or a local base of it) defines its own ``__call__``."""
    seen = seen if seen is not None else set()
    info = model.classes.get(name)
    if info is None or name in seen:
        return False
    seen.add(name)
    if "__call__" in info.methods:
        return True
    return any(overrides_call(model, base.rsplit(".", 1)[-1], seen) for base in info.bases)


def known_module(model: FileModel, ref: Optional[str], scope: str) -> Optional[str]:
    """How we know ``ref`` (seen from ``scope``) holds an nn.Module instance: LOCAL_CLASS,
    BOUND, or None when we do not (spelling alone is not evidence)."""
    if not ref or ref == ANY or ref in ("self", "cls"):
        return None
    head = ref.split(".", 1)[0].split("[", 1)[0]
    if head in model.classes or (head in model.imports.aliases and head == ref.split("[", 1)[0]):
        return None  # ``Base.forward(self, x)``, ``nn.Linear.forward``: a class, not an instance
    if local_module_class(model, ref, scope) is not None:
        return LOCAL_CLASS
    if model.instance_of.get(scope, ref) is not None or built_by_other_class(model, ref, scope):
        return None  # an instance of a local class that is not a module
    if model.has_role(ref, R.MODEL, scope, by_name=False):
        return BOUND
    known = model.roles.get(scope, ref) or model.roles.get(scope, model.canonical(ref, scope))
    if not known and (R.role_of_name(ref) == R.MODEL or module_word_name(ref)) and _defines_torch_modules(model):
        return NAMED
    return None


# Words that name a network or a part of one. A compound name holding one of them as a word
# (``encoder_q``, ``text_encoder``, ``value_head``, ``decoderRNN``) names a module as surely as
# the bare word; callers use this only where a module method (``.forward``) is called on it.
_MODULE_WORDS = frozenset(
    "model models net network module encoder decoder generator discriminator classifier backbone critic actor "
    "policy head transformer mlp cnn rnn lstm gru unet vae autoencoder".split()
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def module_word_name(ref: str) -> bool:
    """Whether the last part of ``ref`` is a compound name with a module word in it (weak evidence)."""
    last = ref.rsplit(".", 1)[-1].split("[", 1)[0]
    if not last or last.startswith("__"):
        return False
    words = [w.lower() for part in last.split("_") for w in _WORD.findall(part)]
    return any(w in _MODULE_WORDS for w in words)


# Libraries built on torch: a file importing one of them works with torch modules.
_TORCH_LIBRARIES = (
    "torch", "lightning", "pytorch_lightning", "torchvision", "torchaudio", "timm", "pyro", "allennlp", "fairseq",
    "detectron2", "ignite", "accelerate", "deepspeed", "torch_geometric",
)


def torch_code(model: FileModel) -> bool:
    """Whether the file imports torch or a library built on it (Lightning, pyro, allennlp...)."""
    return any(model.imports.imports_module(p) for p in _TORCH_LIBRARIES)


def _defines_torch_modules(model: FileModel) -> bool:
    """The file works with torch (imports it, or a library built on it: Lightning, pyro,
    allennlp, ...) and not with another framework whose objects also have ``forward``
    (Keras, JAX, MXNet, Paddle, Chainer)."""
    if any(model.imports.imports_module(p) for p in ("tensorflow", "keras", "jax", "flax", "mxnet", "paddle", "chainer")):
        return False
    return torch_code(model)


# --- where a ``.forward`` call delegates or is itself under test ---------------------------------

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def _reads_self_attribute(node: cst.CSTNode) -> bool:
    """Whether ``node`` reads an attribute of ``self`` (``self.models``, ``zip(self.models, xs)``)."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return True
    return any(_reads_self_attribute(child) for child in tree_children(node))


def _bound_names(target: cst.BaseExpression) -> set:
    return {n for n in target_names(target, dotted)}


def iterates_own_parts(body: cst.CSTNode, call: cst.Call, name: str) -> bool:
    """Whether, at ``call`` inside ``body``, ``name`` is bound by a ``for`` loop or a comprehension
    over a collection held by ``self`` (``for model in self.models``, ``enumerate(self.models)``,
    ``zip(self.models, states)``): an element of the object's own parts, as in an ensemble."""

    def visit(node: cst.CSTNode, bound: frozenset) -> bool:
        if node is call:
            return name in bound
        if isinstance(node, cst.For):
            names = _bound_names(node.target)
            inner = bound | names if _reads_self_attribute(node.iter) else bound - names
            return (
                visit(node.iter, bound)
                or visit(node.body, frozenset(inner))
                or (node.orelse is not None and visit(node.orelse, bound))
            )
        if isinstance(node, _COMPREHENSIONS):
            inner = set(bound)
            clause = node.for_in
            while clause is not None:
                names = _bound_names(clause.target)
                inner = inner | names if _reads_self_attribute(clause.iter) else inner - names
                clause = clause.inner_for_in
            return any(visit(child, frozenset(inner)) for child in tree_children(node))
        return any(visit(child, bound) for child in tree_children(node))

    return visit(body, frozenset())


_ASSERT_CALL = re.compile(r"^(?:[\w.]*\.)?assert\w*$", re.IGNORECASE)


def result_asserted(body: cst.CSTNode, call: cst.Call, index: Optional[NodeIndex] = None) -> bool:
    """Whether what ``call`` returns is checked in ``body``: the call itself, or a name it is
    assigned to, appears in an ``assert`` statement or is handed to an ``assert*`` call
    (``torch.testing.assert_close``, ``self.assertEqual``, ``np.testing.assert_allclose``).
    ``index``: the file's (FileModel.index); without one, ``body`` is indexed here."""
    if index is None:
        index = NodeIndex(body)
    names: set = set()
    for node in [body, *index.nodes((cst.Assign, cst.AnnAssign), body)]:
        if isinstance(node, cst.Assign) and node.value is call:
            for target in node.targets:
                names.update(n for n in target_names(target.target, dotted) if "." not in n)
        elif isinstance(node, cst.AnnAssign) and node.value is call:
            names.update(n for n in target_names(node.target, dotted) if "." not in n)

    def mentions(node: cst.CSTNode) -> bool:
        if node is call or (isinstance(node, cst.Name) and node.value in names):
            return True
        return index.contains(node, call) or any(n.value in names for n in index.nodes(cst.Name, node))

    for node in [body, *index.nodes((cst.Assert, cst.Call), body)]:
        if isinstance(node, cst.Assert) and mentions(node.test):
            return True
        if isinstance(node, cst.Call) and _ASSERT_CALL.match(dotted(node.func) or "") and any(
            mentions(arg.value) for arg in node.args
        ):
            return True
    return False


def built_by_other_class(model: FileModel, ref: str, scope: str) -> bool:
    """Whether every value assigned to ``ref`` (``self.model`` anywhere in its class, a plain
    name in ``scope``) is built by a class of the file that is not known to be an nn.Module,
    through one of its class methods (``CustomRuntimeModel.from_pretrained(path)``): the object
    is that class's instance, whatever its name says."""
    cls_scope = model.class_scope_of(scope) if ref.startswith("self.") else None
    values = [
        value
        for targets, value, ctx in model.assignments
        if targets == (ref,)
        and (ctx.scope == scope or (cls_scope is not None and model.class_scope_of(ctx.scope) == cls_scope))
    ]
    if not values:
        return False
    for value in values:
        if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
            return False
        owner = dotted(value.func.value)
        if owner is None or owner not in model.classes or is_module_class(model, owner) or _model_based(model, owner):
            return False
    return True


def _model_based(model: FileModel, name: str) -> bool:
    """A class of the file deriving from a known model class (``class MyLM(GPT2LMHeadModel)``)."""
    info = model.classes.get(name)
    return info is not None and any(
        R.role_of_constructor(model.imports.qualify(base) or base) == R.MODEL for base in info.bases
    )
