"""Functional dropout in a module's forward without ``training=``: it ignores ``model.eval()``.

Why it matters
    ``nn.Dropout`` reads the module's mode; ``F.dropout`` does not. Its ``training``
    argument defaults to ``True`` (also for ``dropout1d``/``dropout2d``/``dropout3d``), so
    ``F.dropout(x, p)`` inside ``forward`` keeps dropping activations after
    ``model.eval()``: evaluation and inference are random, and every score computed on
    them is noisy and too low. No error is raised (fixtures/ml016: a small classifier whose
    forward calls ``F.dropout(h, 0.5)``; after ``model.eval()`` two identical evaluation
    calls differ by up to 15.4 in their logits and the test accuracy moves from pass to pass,
    0.931 to 0.948 over five passes, against the same 0.965 on every pass with
    ``training=self.training``). ``F.alpha_dropout`` and ``F.feature_alpha_dropout`` have
    the opposite default, ``training=False``: without the argument they never drop
    anything, not even while training.

When the code is fine
    - ``training=self.training`` (or the positional third argument,
      ``F.dropout(x, p, self.training)``), and any other explicit value: ``training=True``
      is Monte Carlo dropout, on purpose;
    - a call under a test of the mode (``if self.training: x = F.dropout(x, p)``,
      ``F.dropout(x, p) if self.training else x``), after a test of the mode that returns
      (``if not self.training: return x``; or ``if self.training: return ...`` followed by
      an eval path that samples with dropout on purpose, MC dropout), or whose rate follows
      the mode (``p = self.p if self.training else 0.0``);
    - ``nn.Dropout`` modules, and ``torch.dropout(x, p, train)`` (no default);
    - a call outside ``forward``: plain functions, methods that ``forward`` (or
      ``forward_*``, ``__call__``, a Lightning ``validation_step``/``test_step``/
      ``predict_step``) does not reach through ``self.<method>``, such as a sampler's
      ``p_sample`` using noise dropout on purpose;
    - classes not known to be ``nn.Module`` subclasses (a base class from outside the
      project, or a plain helper class): there is no ``self.training`` to read;
    - a comment on the call saying it is deliberate (``# always applies dropout``,
      ``# MC dropout``).

How to fix
    Pass the module's mode: ``F.dropout(x, p, training=self.training)``, or use an
    ``nn.Dropout(p)`` submodule. ``--fix`` adds ``training=self.training`` (the method's
    own first parameter) when the call is written directly in the module's method, not in
    a nested function or a lambda (reported there without a fix). For the alpha forms the
    same edit turns dropout on during training, which changes how the model trains: it is
    offered as an unsafe fix (``--unsafe-fixes``).
"""

from __future__ import annotations

import re
from typing import Dict, FrozenSet, Iterable, Optional, Set

import libcst as cst

from mllint.findings import Applicability, Example, Finding
from mllint.semantics.model import MODULE_SCOPE, FileModel
from mllint.semantics.modules import is_module_class
from mllint.semantics.names import dotted, shorten

CODE = "ML016"
NAME = "functional-dropout-ignores-mode"
MESSAGE = "functional dropout in a module's forward without `training=`: it stays on after `model.eval()`"
TRIGGERS = ("dropout",)
DEFAULT_ENABLED = True
FRAMEWORK = "torch"
FIX = "safe"

_FUNCTIONAL = "torch.nn.functional."
# name -> the default of its ``training`` parameter (the third one in every signature).
_DROPOUTS: Dict[str, bool] = {
    "dropout": True,
    "dropout1d": True,
    "dropout2d": True,
    "dropout3d": True,
    "alpha_dropout": False,
    "feature_alpha_dropout": False,
}
_QUALS = frozenset(_FUNCTIONAL + n for n in _DROPOUTS)
_MAX_MESSAGE = 108  # a one-line message (tests/test_messages.py allows 110)


def SCREEN(facts) -> bool:
    # Sound: every finding is a call whose qualified callee is one of _QUALS, inside a class.
    return facts.has_class and any(q in _QUALS for q in facts.call_quals)


# Methods that run as the module's forward pass (ML011's spelling), and Lightning's steps
# that run in eval mode.
_FORWARD_METHOD = re.compile(r"^(_*forward\w*|\w+_forward|__call__|validation_step|test_step|predict_step)$")
# A condition that tests the mode (``self.training``, ``train``, ``is_training``, ``deterministic``).
_MODE_WORDS = re.compile(r"train|deterministic|eval|inference", re.IGNORECASE)
# A comment on the call saying dropout is on at inference on purpose.
# ("at inference" alone is not one: ``# disabled at inference`` is the very mistake).
_DELIBERATE = re.compile(r"#.*\b(always|mc|monte[ _-]?carlo|bayesian|uncertainty|test[- ]time)\b", re.IGNORECASE)


def _training_given(call: cst.Call) -> Optional[bool]:
    """True when the call passes ``training`` (keyword or third positional), False when it
    does not, None when it cannot tell (``*args``/``**kwargs``)."""
    positional = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            positional += 1
        elif arg.keyword.value == "training":
            return True
    return positional >= 3


# --- which methods of a module class run in its forward ----------------------------------------


def _family(model: FileModel, cls: str) -> Set[str]:
    """``cls`` with its ancestors and descendants among the classes of the file."""
    out = {cls}
    todo = [cls]
    while todo:
        current = todo.pop()
        info = model.classes.get(current)
        related = [b.rsplit(".", 1)[-1] for b in (info.bases if info else ())]
        related += [c.name for c in model.classes.values() if any(b.rsplit(".", 1)[-1] == current for b in c.bases)]
        for name in related:
            if name in model.classes and name not in out:
                out.add(name)
                todo.append(name)
    return out


def _methods_by_class(model: FileModel, scope_of_cls: str) -> Dict[str, str]:
    """Method name -> function key, for a class scope of the file."""
    prefix = scope_of_cls + "."
    return {k[len(prefix):]: k for k in model.functions if k.startswith(prefix) and "." not in k[len(prefix):]}


def _forward_methods(model: FileModel, cls_scope: str) -> FrozenSet[str]:
    """The names of the methods of ``cls_scope``'s class family that run during a forward
    pass: the forward-like ones, and those they reach through ``self.<method>``."""

    def compute(m: FileModel) -> FrozenSet[str]:
        family = _family(m, cls_scope.rsplit(".", 1)[-1])
        keys: Dict[str, list] = {}  # method name -> function keys defining it in the family
        for scope in {k.rsplit(".", 1)[0] for k in m.functions if "." in k}:
            if scope.rsplit(".", 1)[-1] in family and m.class_scope_of(scope + ".x") == scope:
                for name, key in _methods_by_class(m, scope).items():
                    keys.setdefault(name, []).append(key)
        reached = {name for name in keys if _FORWARD_METHOD.match(name)}
        todo = list(reached)
        while todo:
            name = todo.pop()
            for key in keys.get(name, ()):
                fn = m.functions[key]
                me = fn.params[0] if fn.params else None
                if me is None:
                    continue
                for node in m.index.nodes(cst.Attribute, fn.node):
                    if isinstance(node.value, cst.Name) and node.value.value == me:
                        attr = node.attr.value
                        if attr in keys and attr not in reached:
                            reached.add(attr)
                            todo.append(attr)
        return frozenset(reached)

    return model.memo((CODE, "forward-methods", cls_scope), compute)


# --- calls under a test of the mode ------------------------------------------------------------


def _mode_text(model: FileModel, node: cst.CSTNode) -> bool:
    return bool(_MODE_WORDS.search(model.code_of(node)))


def _guarded(model: FileModel, call: cst.Call, method: cst.FunctionDef) -> bool:
    """Whether the call runs only in one mode: under an ``if``/ternary/``while`` testing it,
    after an ``if`` on the mode that returns (either way: code after ``if self.training: return``
    is an eval path written on purpose), or with a rate chosen by the mode."""
    child: cst.CSTNode = call
    for parent in model.parents.ancestors(call):
        if isinstance(parent, (cst.If, cst.IfExp, cst.While)) and child is not parent.test and _mode_text(model, parent.test):
            return True
        if isinstance(parent, cst.BooleanOperation) and _mode_text(model, parent):
            return True  # ``self.training and F.dropout(x, p)``
        if parent is method:
            break
        child = parent
    for arg in call.args[1:]:
        if _mode_text(model, arg.value):
            return True  # ``F.dropout(x, p=self.p * self.training)``
    call_start = model.position(call).start.line
    for node in model.index.nodes(cst.If, method):
        if model.position(node).end.line < call_start and _mode_text(model, node.test) and model.index.has(
            (cst.Return, cst.Raise), node.body
        ):
            return True  # ``if not self.training or p == 0: return x``
    positional = [a.value for a in call.args if a.keyword is None]
    rates = positional[1:2] + [a.value for a in call.args if a.keyword is not None and a.keyword.value == "p"]
    names = {dotted(r) for r in rates} - {None}
    if names:
        for node in model.index.nodes((cst.Assign, cst.AnnAssign), method):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(dotted(t) in names for t in targets) and node.value is not None and _mode_text(model, node.value):
                if model.position(node).start.line <= call_start:
                    return True  # ``p = self.p if self.training else 0.0``
    return False


def _deliberate(model: FileModel, call: cst.Call) -> bool:
    pos = model.position(call)
    lines = model.lines[pos.start.line - 1 : pos.end.line]
    return any(_DELIBERATE.search(line) for line in lines)


# --- the fix -----------------------------------------------------------------------------------


def _with_training(call: cst.Call, me: str) -> cst.Call:
    """``call`` with ``training=<me>.training`` appended, keeping a trailing comma's layout."""
    new = cst.Arg(
        value=cst.Attribute(value=cst.Name(me), attr=cst.Name("training")),
        keyword=cst.Name("training"),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        between = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" ")
        )
        args[-1] = last.with_changes(comma=between)
        new = new.with_changes(comma=last.comma)
    return call.with_changes(args=[*args, new])


def _rebinds(model: FileModel, fn, name: str) -> bool:
    """Whether the method assigns to its own first parameter (``self = ...``)."""
    for node in model.index.nodes(cst.Name, fn.node):
        parent = model.parents.get(node)
        if node.value == name and isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)):
            return True
    return False


def check(model: FileModel) -> Iterable[Finding]:
    in_lambda: Optional[Set[cst.Call]] = None
    for call, ctx in model.calls:
        qual = model.imports.qualname(call.func)
        if qual not in _QUALS or _training_given(call) is not False:
            continue
        cls_scope = model.class_scope_of(ctx.scope) if ctx.scope != MODULE_SCOPE else None
        if cls_scope is None or not is_module_class(model, cls_scope.rsplit(".", 1)[-1]):
            continue  # a plain function, or a class not known to be an nn.Module
        rest = ctx.scope[len(cls_scope) + 1 :].split(".")
        method_key = f"{cls_scope}.{rest[0]}"
        method = model.functions.get(method_key)
        if method is None or rest[0] not in _forward_methods(model, cls_scope):
            continue  # a method the forward pass does not run
        if _guarded(model, call, method.node) or _deliberate(model, call):
            continue
        name = qual[len(_FUNCTIONAL) :]
        default = _DROPOUTS[name]
        written = dotted(call.func) or name
        where = f"{cls_scope.rsplit('.', 1)[-1]}.{rest[0]}"
        if default:
            tail = "without `training=` (default True): dropout stays on after `model.eval()`"
        else:
            tail = "without `training=` (default False): it never drops, even in training"
        shown, budget = written, _MAX_MESSAGE - len(tail) - len("`` in `` ")
        if len(shown) + len(where) > budget:
            shown = name
            where = shorten(where, max(budget - len(shown), 10))
        message = f"`{shown}` in `{where}` {tail}"
        if default:
            detail = (
                f"`{written}` does not read the module's mode: its `training` argument defaults to True, so it "
                f"drops activations in evaluation and inference too and outputs after `model.eval()` are random. "
                f"Pass `training=self.training` (or use an `nn.Dropout` submodule); write `training=True` if "
                f"dropout at inference is intended (Monte Carlo dropout)."
            )
        else:
            detail = (
                f"`{written}` defaults to `training=False`: without the argument the call is the identity in "
                f"training and in evaluation alike. Pass `training=self.training` (or use an "
                f"`nn.{'AlphaDropout' if name == 'alpha_dropout' else 'FeatureAlphaDropout'}` submodule)."
            )
        fix = None
        me = method.params[0] if method.params else None
        if (
            len(rest) == 1
            and me is not None
            and not any(d.rsplit(".", 1)[-1] in ("staticmethod", "classmethod") for d in method.decorators)
            and call.args
        ):
            if in_lambda is None:
                in_lambda = {c for calls in model.lambda_calls.values() for c in calls}
            if call not in in_lambda and not _rebinds(model, method, me):
                applicability = Applicability.SAFE if default else Applicability.UNSAFE
                fix = model.fix_replacing(
                    call, _with_training(call, me), applicability, f"pass `training={me}.training`"
                )
        yield model.finding(call, CODE, NAME, message, fix, detail)


# ---------------------------------------------------------------------------------------
# Examples (collected by the test suite). INVALID examples carry the expected --fix output.

VALID = [
    # the module's mode is passed
    """
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 2)

        def forward(self, x):
            return self.fc(F.dropout(x, p=0.5, training=self.training))
    """,
    # positional third argument
    """
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def forward(self, x):
            return F.dropout(x, 0.2, self.training)
    """,
    # Monte Carlo dropout on purpose: an explicit training=True
    """
    import torch.nn as nn
    from torch.nn import functional as F

    class MCDropoutNet(nn.Module):
        def forward(self, x):
            return F.dropout(x, p=0.1, training=True)
    """,
    # nn.Dropout modules read the mode themselves
    """
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(x)
    """,
    # guarded by the mode
    """
    import torch.nn as nn
    import torch.nn.functional as F

    class LoRA(nn.Module):
        def forward(self, x):
            if self.dropout is not None and self.training:
                x = F.dropout(x, p=self.dropout)
            y = F.dropout(x, 0.1) if self.training else x
            return y
    """,
    # early return in eval mode
    """
    import torch.nn as nn
    import torch.nn.functional as F

    class DropPath(nn.Module):
        def forward(self, x):
            if not self.training or self.p == 0.0:
                return x
            return F.dropout(x, self.p)
    """,
    # a plain function, not a module's method
    """
    import torch.nn.functional as F

    def augment(x):
        return F.dropout(x, 0.1)
    """,
    # a class that is not an nn.Module
    """
    import torch.nn.functional as F

    class Sampler:
        def forward(self, noise):
            return F.dropout(noise, p=0.1)
    """,
    # a method that forward never runs (a sampler's noise dropout)
    """
    import torch.nn as nn
    import torch.nn.functional as F

    class Diffusion(nn.Module):
        def forward(self, x):
            return self.model(x)

        def p_sample(self, x, noise_dropout=0.0):
            noise = F.dropout(torch.randn_like(x), p=noise_dropout)
            return x + noise
    """,
    # torch.dropout has no default for train; *args may hold it
    """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def forward(self, x, *args):
            x = torch.dropout(x, 0.1, self.training)
            return F.dropout(x, *args)
    """,
    # a rate that follows the mode
    """
    import torch.nn as nn
    import torch.nn.functional as F

    class Attention(nn.Module):
        def forward(self, attn):
            p = self.attn_drop if self.training else 0.0
            return F.dropout(attn, p)
    """,
    # a base class from outside the project: not known to be a module
    """
    import torch.nn.functional as F
    from somelib import Layer

    class Block(Layer):
        def forward(self, x):
            return F.dropout(x, 0.5)
    """,
    # a comment saying it is deliberate
    """
    import torch.nn as nn
    import torch.nn.functional as F

    class Prenet(nn.Module):
        def forward(self, x):
            for layer in self.layers:
                x = F.dropout(layer(x), p=self.dropout)  # always applies dropout
            return x
    """,
    # the code branches on the mode before the call: dropout in the eval path is deliberate (MC dropout)
    """
    import torch
    import torch.nn.functional as F

    class MCDropoutClassifier(CosineClassifier):
        def forward(self, x):
            if self.training:
                return super().forward(F.dropout(x, p=self._dropout))
            samples = [super().forward(F.dropout(x, p=self._dropout)) for _ in range(self.nb_samples)]
            return torch.stack(samples).mean(0)

    class CosineClassifier(torch.nn.Module):
        pass
    """,
    # chainer's F.dropout (not torch)
    """
    import chainer
    import chainer.functions as F

    class MLP(chainer.Chain):
        def forward(self, x):
            return F.dropout(x, ratio=0.3)
    """,
]

INVALID = [
    # the canonical case
    Example(
        """
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 2)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            h = F.dropout(h, 0.5)
            return self.fc2(h)
    """,
        fixed="""
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 2)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            h = F.dropout(h, 0.5, training=self.training)
            return self.fc2(h)
    """,
    ),
    # keyword p, nested in another call
    Example(
        """
    import torch
    import torch.nn.functional as F

    class CTC(torch.nn.Module):
        def forward(self, hs_pad):
            return self.ctc_lo(F.dropout(hs_pad, p=self.dropout_rate))
    """,
        fixed="""
    import torch
    import torch.nn.functional as F

    class CTC(torch.nn.Module):
        def forward(self, hs_pad):
            return self.ctc_lo(F.dropout(hs_pad, p=self.dropout_rate, training=self.training))
    """,
    ),
    # the default rate, no argument at all but the input; a `from torch.nn import Module` base
    Example(
        """
    from torch.nn import Module
    import torch.nn.functional as F

    class Classifier(Module):
        def forward(self, x):
            logits = self.fc1(x)
            logits = F.dropout(logits)
            return self.fc2(logits)
    """,
        fixed="""
    from torch.nn import Module
    import torch.nn.functional as F

    class Classifier(Module):
        def forward(self, x):
            logits = self.fc1(x)
            logits = F.dropout(logits, training=self.training)
            return self.fc2(logits)
    """,
    ),
    # nn.functional spelling, multi-line call with a trailing comma
    Example(
        """
    import torch.nn as nn

    class Attention(nn.Module):
        def forward(self, q, k):
            w = (q @ k.transpose(-1, -2)).softmax(-1)
            w = nn.functional.dropout(
                w,
                p=0.1,
            )
            return w
    """,
        fixed="""
    import torch.nn as nn

    class Attention(nn.Module):
        def forward(self, q, k):
            w = (q @ k.transpose(-1, -2)).softmax(-1)
            w = nn.functional.dropout(
                w,
                p=0.1,
                training=self.training,
            )
            return w
    """,
    ),
    # a helper method the forward calls
    Example(
        """
    import torch.nn as nn
    import torch.nn.functional as F

    class Encoder(nn.Module):
        def embed(self, tokens):
            return F.dropout(self.emb(tokens), 0.2)

        def forward(self, tokens):
            return self.rnn(self.embed(tokens))
    """,
        fixed="""
    import torch.nn as nn
    import torch.nn.functional as F

    class Encoder(nn.Module):
        def embed(self, tokens):
            return F.dropout(self.emb(tokens), 0.2, training=self.training)

        def forward(self, tokens):
            return self.rnn(self.embed(tokens))
    """,
    ),
    # imported by name, dropout2d; a subclass of a local module class
    Example(
        """
    import torch.nn as nn
    from torch.nn.functional import dropout2d

    class Base(nn.Module):
        pass

    class ConvNet(Base):
        def forward(self, x):
            return dropout2d(self.conv(x), 0.25)
    """,
        fixed="""
    import torch.nn as nn
    from torch.nn.functional import dropout2d

    class Base(nn.Module):
        pass

    class ConvNet(Base):
        def forward(self, x):
            return dropout2d(self.conv(x), 0.25, training=self.training)
    """,
    ),
    # a first parameter not called self
    Example(
        """
    import torch.nn as nn
    import torch.nn.functional as F

    class Head(nn.Module):
        def forward(this, x):
            return this.fc(F.dropout(x, 0.3, inplace=False))
    """,
        fixed="""
    import torch.nn as nn
    import torch.nn.functional as F

    class Head(nn.Module):
        def forward(this, x):
            return this.fc(F.dropout(x, 0.3, inplace=False, training=this.training))
    """,
    ),
    # alpha dropout never drops without training=: unsafe fix
    Example(
        """
    import torch.nn as nn
    import torch.nn.functional as F

    class SNN(nn.Module):
        def forward(self, x):
            return self.out(F.alpha_dropout(F.selu(self.fc(x)), 0.1))
    """,
        unsafe_fixed="""
    import torch.nn as nn
    import torch.nn.functional as F

    class SNN(nn.Module):
        def forward(self, x):
            return self.out(F.alpha_dropout(F.selu(self.fc(x)), 0.1, training=self.training))
    """,
    ),
    # a nested function inside forward (checkpointed block): reported without a fix
    Example(
        """
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    class Block(nn.Module):
        def forward(self, x):
            def inner(h):
                return F.dropout(self.fc(h), 0.1)

            return checkpoint(inner, x, use_reentrant=False)
    """,
    ),
    # in a lambda: reported without a fix
    Example(
        """
    import torch.nn as nn
    import torch.nn.functional as F

    class Mixer(nn.Module):
        def forward(self, xs):
            return list(map(lambda t: F.dropout(t, 0.1), xs))
    """,
    ),
    # a Lightning module's validation_step (runs in eval mode)
    Example(
        """
    import lightning as L
    import torch.nn.functional as F

    class Lit(L.LightningModule):
        def validation_step(self, batch, batch_idx):
            x, y = batch
            logits = self.head(F.dropout(self.backbone(x), 0.5))
            self.log("val_loss", F.cross_entropy(logits, y))
    """,
        fixed="""
    import lightning as L
    import torch.nn.functional as F

    class Lit(L.LightningModule):
        def validation_step(self, batch, batch_idx):
            x, y = batch
            logits = self.head(F.dropout(self.backbone(x), 0.5, training=self.training))
            self.log("val_loss", F.cross_entropy(logits, y))
    """,
    ),
    # a comprehension in forward
    Example(
        """
    import torch
    import torch.nn.functional as F

    class Multi(torch.nn.Module):
        def forward(self, xs):
            return [F.dropout(x, p=self.p) for x in xs]
    """,
        fixed="""
    import torch
    import torch.nn.functional as F

    class Multi(torch.nn.Module):
        def forward(self, xs):
            return [F.dropout(x, p=self.p, training=self.training) for x in xs]
    """,
    ),
]
