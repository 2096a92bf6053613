"""A loss is given probabilities it computes itself, or probabilities where it expects their log.

Why it matters
    ``nn.CrossEntropyLoss`` and ``F.cross_entropy`` expect raw scores (logits): they
    apply ``log_softmax`` themselves. Given the output of a softmax, they squash
    values that already lie in [0, 1] a second time: the loss cannot get near 0
    (for 10 classes it stays above about 1.46 even for a perfect model), its
    gradients shrink as the model gets confident, and training is slower or stalls.
    No error is raised; the loss just goes down less (fixtures/ml013: the same small
    classifier after 300 steps, softmax + cross-entropy: loss 1.58, accuracy 0.90;
    logits + cross-entropy: loss 0.029, accuracy 0.998).

    The same mistake for binary classification: ``nn.BCEWithLogitsLoss`` and
    ``F.binary_cross_entropy_with_logits`` apply a sigmoid themselves, so given a
    sigmoid's output they see sigmoid(sigmoid(z)), which lies in (0.5, 0.73): every
    prediction is "positive", the loss cannot get near 0 and the gradients vanish
    through the two sigmoids (fixtures/ml013_bce: the same small binary classifier after
    300 steps, sigmoid + BCEWithLogitsLoss: loss 0.62, accuracy 0.80; logits +
    BCEWithLogitsLoss: loss 0.18, accuracy 0.93). And the opposite one: ``nn.NLLLoss`` / ``F.nll_loss``
    expect log-probabilities (it computes ``-input[target]``); given a softmax's output
    it computes ``-p[target]``, a bounded quantity that is not the negative
    log-likelihood, and a confidently wrong prediction is barely penalised.

    The softmax (or sigmoid) is found where it is applied: in the loss's argument, in a name
    assigned from it, in a helper or method whose every ``return`` gives its
    output, or in a model whose ``forward`` ends in ``F.softmax``/``torch.softmax``/
    ``x.softmax``/an ``nn.Softmax`` layer (``torch.sigmoid``/``F.sigmoid``/``x.sigmoid()``/
    ``nn.Sigmoid``; also the last layer of an ``nn.Sequential``), also one element of a
    tuple such a call returns (``validity, class_probs = disc(x)`` where ``forward`` returns
    ``self.adv_head(h), self.cls_head(h)``) and each element of a loop over softmax output
    (``for row in probs:``), also a model whose class is defined in another file of the
    project; the loss is ``F.cross_entropy`` / ``F.binary_cross_entropy_with_logits`` /
    ``F.nll_loss`` or a callable bound to ``nn.CrossEntropyLoss()`` /
    ``nn.BCEWithLogitsLoss()`` / ``nn.NLLLoss()`` (also ``self.criterion``, a parameter every
    caller in the file hands one, or a parameter defaulting to one that no call in the file
    overrides); also a module handed to a training wrapper with ``criterion=`` the
    ``CrossEntropyLoss`` or ``BCEWithLogitsLoss`` class (skorch: ``NeuralNetClassifier(MyModule,
    criterion=nn.CrossEntropyLoss)``; ``NeuralNetBinaryClassifier``, whose default criterion
    is ``BCEWithLogitsLoss``), which feeds the module's output to the criterion.

When the code is fine
    - ``log_softmax`` (or ``nn.LogSoftmax``) before ``NLLLoss``, the intended pairing;
      ``torch.log(F.softmax(z, 1))`` before ``NLLLoss`` (log-probabilities, if numerically
      worse than ``log_softmax``: not reported).
      (``log_softmax`` before cross-entropy *is* reported, as RULES.md asks: over the class
      dimension the second log_softmax changes nothing, it is idempotent, so the loss is
      computed twice for the same value (checked with torch 2.13: equal values and
      gradients); over another dimension the loss is wrong. The message says which.)
    - a sigmoid before ``BCELoss`` / ``F.binary_cross_entropy`` (the pairing for
      probabilities), logits before ``BCEWithLogitsLoss``;
    - the softmax or sigmoid output is only used for predictions or metrics while the loss gets
      the logits; a model that returns both logits and probabilities (a tuple or a dict)
      whose logits go to the loss;
    - a skorch classifier left with its default criterion (``NLLLoss``, which skorch
      gives the log of the module's probabilities), or given ``criterion=nn.NLLLoss``: a
      module ending in a softmax is what it expects;
    - a softmax or sigmoid only on some paths (``if not self.training: return x.softmax(1)``);
    - soft targets: a softmax or sigmoid in the *target* (second) argument, as in distillation;
    - anything computed from the probabilities (a gate ``x * torch.sigmoid(g)``,
      ``torch.log(p)``, ``p * mask``);
    - losses this rule cannot see into (a custom loss function, a loss from another
      module).

How to fix
    Give cross-entropy or ``BCEWithLogitsLoss`` the logits: drop the softmax / sigmoid, and
    apply it where probabilities are needed (predictions, metrics); or switch to
    ``log_softmax`` + ``NLLLoss`` (``BCELoss`` for a sigmoid). Give ``NLLLoss``
    log-probabilities: ``log_softmax`` over the same dim instead of ``softmax``. The fix
    (unsafe: ``--unsafe-fixes``, shown by ``--diff``) changes the model where the softmax or
    sigmoid is applied: for cross-entropy and ``BCEWithLogitsLoss`` it drops it
    (``F.softmax(z, dim=1)`` becomes ``z``; an ``nn.Softmax``/``nn.Sigmoid`` last layer is
    removed from its ``nn.Sequential``); for ``NLLLoss`` it makes it a log_softmax
    (``F.softmax(z, dim=1)`` becomes ``F.log_softmax(z, dim=1)``, ``nn.Softmax(dim=1)`` becomes
    ``nn.LogSoftmax(dim=1)``, ``torch.exp(F.log_softmax(z, 1))`` loses its exp). It is unsafe
    because the model or helper then returns logits (log-probabilities) for every caller: code
    that reads its output as probabilities (thresholds, sampling) must apply the softmax or
    sigmoid (``exp``) itself.
"""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics.model import FileModel
from mllint.semantics.names import shorten
from mllint.semantics.probabilities import (
    BCE_WITH_LOGITS,
    CROSS_ENTROPY,
    LOG_SOFTMAX,
    NLL,
    SOFTMAX,
    SOFTMAX_FUNCTIONS,
    SOFTMAX_LAYERS,
    Kind,
    Loss,
    _first_arg,
    _is_qual,
    loss_of,
    project_model_origin,
    sole_layer_of_call,
    softmax_origin,
    tensor_method_receiver,
    wrapped_criterion,
)

CODE = "ML013"
NAME = "softmax-before-cross-entropy"
MESSAGE = ("a loss is given the probabilities it computes itself (softmax before cross-entropy, sigmoid "
           "before BCEWithLogitsLoss) or softmax output where it expects log-probabilities (NLLLoss)")
TRIGGERS = ("CrossEntropyLoss", "cross_entropy", "BCEWithLogitsLoss", "NLLLoss", "nll_loss", "NeuralNetBinaryClassifier")
REQUIRES = ("softmax|Softmax|sigmoid|Sigmoid|expit",)  # log_softmax / LogSoftmax contain it too
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = "unsafe"

_LOSS_WORDS = ("cross_entropy", "CrossEntropy", "BCEWithLogits", "nll_loss", "NLLLoss", "NeuralNetBinaryClassifier")
_PROBABILITY_WORDS = ("softmax", "Softmax", "sigmoid", "Sigmoid", "expit")


def SCREEN(facts) -> bool:
    # Sound: a finding needs a loss (``CrossEntropyLoss``/``cross_entropy``, ``BCEWithLogitsLoss``/
    # ``binary_cross_entropy_with_logits``, ``NLLLoss``/``nll_loss``, skorch's binary classifier, by
    # its qualified name, so its name or an import of it is in the file) and a softmax,
    # log_softmax or sigmoid (also by name), or a model class of another file of the project whose
    # forward ends in one (the project implies the word ``softmax`` for all three).
    names = facts.identifiers | facts.imported_names
    return any(w in n for n in names for w in _LOSS_WORDS) and (
        "softmax" in facts.project_words or any(w in n for n in names for w in _PROBABILITY_WORDS)
    )

_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)


def check(model: FileModel) -> Iterable[Finding]:
    seen = set()
    for call, ctx in model.calls:
        loss = loss_of(model, call.func, ctx.scope)
        if loss is None:
            continue
        arg = _first_arg(call)
        if arg is None:
            continue
        origin = kind = None
        for kind in loss.kinds:
            origin = softmax_origin(model, arg, ctx.scope, call, kind=kind)
            if origin is not None:
                break
        if origin is None and call not in seen:
            yield from _project_finding(model, call, arg, ctx.scope, loss)
            continue
        if origin is None or call in seen:
            continue
        seen.add(call)
        yield _finding(model, call, arg, origin, kind, loss)
    for call, _ctx in model.calls:
        found = wrapped_criterion(model, call)
        if found is None:
            continue
        criterion, module, origin, loss, kind = found
        line = model.position(origin).start.line
        module_code = shorten(model.code_of(module), 24)
        if loss is CROSS_ENTROPY:
            message = (f"`criterion={shorten(model.code_of(criterion), 24)}` gets softmax output from "
                       f"`{module_code}` (line {line}): it softmaxes again")
            detail = (
                f"The wrapper feeds what `{shorten(model.code_of(module), 40)}` returns to the criterion, and its forward ends "
                f"in `{shorten(model.code_of(origin).strip(), 60)}` (line {line}); cross-entropy applies log_softmax itself, "
                f"so the probabilities are squashed twice and training is slower. Return the logits from forward (skorch's "
                f"predict_proba can apply the softmax), or keep the softmax and use NLLLoss on its log."
            )
        else:
            which = (f"`criterion={shorten(model.code_of(criterion), 24)}`" if criterion is not None
                     else "the default BCEWithLogitsLoss")
            message = (f"{which} gets sigmoid output from `{shorten(module_code, 20)}` (line {line}): it applies its"
                       f" own sigmoid")
            detail = (
                f"The wrapper feeds what `{shorten(model.code_of(module), 40)}` returns to BCEWithLogitsLoss, and its "
                f"forward ends in `{shorten(model.code_of(origin).strip(), 60)}` (line {line}); the loss applies the "
                f"sigmoid again, so every prediction lies above 0.5 and the gradients vanish. Return the logits from "
                f"forward (skorch's predict_proba applies the sigmoid)."
            )
        node = criterion if criterion is not None else call
        yield model.finding(node, CODE, NAME, message, _fix(model, origin, kind, loss), detail)


def _loss_label(model: FileModel, call: cst.Call, loss: Loss) -> str:
    """How the message names the loss: its functional form when called so, else its class."""
    return loss.function if _is_qual(model, call.func, loss.functions) else loss.name


def _project_finding(model: FileModel, call: cst.Call, arg: cst.BaseExpression, scope: str,
                     loss: Loss = CROSS_ENTROPY) -> Iterable[Finding]:
    """The model's class is defined in another file of the project and its ``forward`` ends in a
    softmax, log_softmax or sigmoid the loss must not get: reported here, without a fix (the
    change belongs in that file)."""
    for kind in loss.kinds:
        found = project_model_origin(model, arg, scope, kind)
        if found is None:
            continue
        _model_call, where = found
        label = _loss_label(model, call, loss)
        if loss is CROSS_ENTROPY:
            then = "cross-entropy softmaxes again" if kind is SOFTMAX else "cross-entropy repeats it, use NLLLoss"
            detail = (
                f"`{shorten(model.code_of(arg), 60)}` is what the model's `forward` returns, and that forward ({where}) "
                f"ends in {kind.name} on every path; cross-entropy applies log_softmax itself. Return the logits from "
                f"forward (apply softmax where probabilities are needed), or use NLLLoss on log-probabilities."
            )
        elif loss is BCE_WITH_LOGITS:
            then = "it applies its own sigmoid: pass logits"
            detail = (
                f"`{shorten(model.code_of(arg), 60)}` is what the model's `forward` returns, and that forward ({where}) "
                f"ends in sigmoid on every path; {label} applies the sigmoid itself, so every prediction lies above "
                f"0.5 and the gradients vanish. Return the logits from forward (apply the sigmoid where "
                f"probabilities are needed), or keep it and use BCELoss."
            )
        else:
            then = "it expects log-probabilities (log_softmax)"
            detail = (
                f"`{shorten(model.code_of(arg), 60)}` is what the model's `forward` returns, and that forward ({where}) "
                f"ends in softmax on every path; {label} expects log-probabilities and computes -input[target], which "
                f"for probabilities is not a log-likelihood. End forward in log_softmax (same dim)."
            )
        shown = shorten(model.code_of(call), 40 if loss is CROSS_ENTROPY else 28)
        message = f"`{shown}` gets {kind.name} output from the model's forward ({where}): {then}"
        if loss is not CROSS_ENTROPY:
            message = f"`{shown}` gets {kind.name} output from forward ({where}): {then}"
        yield model.finding(call, CODE, NAME, message, None, detail)
        return


def _finding(model: FileModel, call: cst.Call, arg: cst.BaseExpression, origin: cst.CSTNode, kind: Kind,
             loss: Loss = CROSS_ENTROPY) -> Finding:
    line = model.position(origin).start.line
    softmax = model.code_of(origin).strip()
    where = "here" if origin is call or any(a is call for a in model.parents.ancestors(origin)) else f"line {line}"
    fix = _fix(model, origin, kind, loss)
    label = _loss_label(model, call, loss)
    if loss is BCE_WITH_LOGITS:
        message = f"`{shorten(model.code_of(call), 28)}` gets sigmoid output ({where}): it applies its own sigmoid: pass logits"
        detail = (
            f"`{shorten(model.code_of(arg), 60)}` already went through `{shorten(softmax, 60)}` (line {line}), and "
            f"{label} applies the sigmoid itself: it sees sigmoid(sigmoid(z)), which lies in (0.5, 0.73), so "
            f"the loss cannot get near 0 and the gradients vanish through the two sigmoids. Pass the logits "
            f"(drop the sigmoid, apply it only where probabilities are needed), or keep it and use BCELoss."
        )
        return model.finding(call, CODE, NAME, message, fix, detail)
    if loss is NLL:
        message = (f"`{shorten(model.code_of(call), 28)}` gets softmax output ({where}): it expects log-probabilities"
                   " (log_softmax)")
        detail = (
            f"`{shorten(model.code_of(arg), 60)}` went through `{shorten(softmax, 60)}` (line {line}), and {label} "
            f"expects log-probabilities: it computes -input[target], which for probabilities is -p[target], a "
            f"bounded quantity that is not the negative log-likelihood; wrong confident predictions are barely "
            f"penalised. Use log_softmax (same dim) instead of softmax, or give cross_entropy the logits."
        )
        return model.finding(call, CODE, NAME, message, fix, detail)
    if kind is LOG_SOFTMAX:
        message = (f"`{shorten(model.code_of(call), 40)}` gets log_softmax output ({where}): cross-entropy "
                   "repeats it, use NLLLoss")
        detail = (
            f"`{shorten(model.code_of(arg), 60)}` already went through `{shorten(softmax, 60)}` (line {line}), and "
            f"cross-entropy applies log_softmax itself. Over the class dimension the second one changes nothing "
            f"(log_softmax is idempotent), so the loss is computed twice for the same value; over another "
            f"dimension it is a different, wrong loss. Use NLLLoss / `F.nll_loss` on log-probabilities, or give "
            f"cross-entropy the logits."
        )
        return model.finding(call, CODE, NAME, message, fix, detail)
    message = f"`{shorten(model.code_of(call), 40)}` gets softmax output ({where}): cross-entropy softmaxes again"
    detail = (
        f"`{shorten(model.code_of(arg), 60)}` already went through `{shorten(softmax, 60)}` (line {line}), and "
        f"cross-entropy applies log_softmax itself: the probabilities are squashed twice, the loss cannot get "
        f"near 0 and its gradients shrink, so training is slower. Pass the logits (drop the softmax, apply it "
        f"only where probabilities are needed), or use log_softmax with NLLLoss."
    )
    return model.finding(call, CODE, NAME, message, fix, detail)


def _fix(model: FileModel, origin: cst.CSTNode, kind: Kind = SOFTMAX, loss: Loss = CROSS_ENTROPY) -> Optional[Fix]:
    if loss is NLL:
        return _log_softmax_fix(model, origin)
    if loss is BCE_WITH_LOGITS:
        description = f"drop the sigmoid: {loss.name} takes logits (callers reading its output must apply it)"
    else:
        description = f"drop the {kind.name}: cross-entropy takes logits (callers reading its output must apply it)"
    parents = model.parents
    if isinstance(origin, cst.Call) and _is_qual(model, origin.func, kind.layers):
        # a layer of an nn.Sequential: remove it
        arg, node = parents.get(origin), parents.get(parents.get(origin) or origin)
        if not (isinstance(arg, cst.Arg) and isinstance(node, cst.Call)):
            return None
        args = [a for a in node.args if a.value is not origin]
        if not args:
            return None
        if node.args[-1].value is origin:
            args[-1] = args[-1].with_changes(comma=node.args[-1].comma)
        return model.fix_replacing(node, node.with_changes(args=args), Applicability.UNSAFE, description)
    if not isinstance(origin, cst.Call):
        return None
    func = origin.func
    if isinstance(func, cst.Attribute) and func.attr.value == "add_module":
        # model.add_module("softmax", nn.Softmax()): remove the statement
        expr = parents.get(origin)
        line = parents.get(expr) if isinstance(expr, cst.Expr) else None
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return _remove_line(model, line, description)
        return None
    if isinstance(func, cst.Attribute) and func.attr.value == kind.method and tensor_method_receiver(model, func) and not _is_qual(
        model, func, kind.functions
    ):
        inner = func.value  # z.softmax(dim=1) -> z
    else:
        inner = _first_arg(origin)
    if inner is None:
        return None
    if isinstance(inner, cst.Name):
        # ``x = F.softmax(x, dim=1)`` becomes nothing rather than ``x = x``
        assign = parents.get(origin)
        line = parents.get(assign) if isinstance(assign, cst.Assign) else None
        block = parents.get(line) if isinstance(line, cst.SimpleStatementLine) else None
        if isinstance(assign, cst.Assign) and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 \
                and isinstance(block, cst.IndentedBlock) and len(block.body) > 1 and assign.value is origin \
                and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) \
                and assign.targets[0].target.value == inner.value:
            return _remove_line(model, line, description)
    if not isinstance(inner, _ATOMIC):
        inner = inner.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return model.fix_replacing(origin, inner, Applicability.UNSAFE, description)


def _renamed(func: cst.BaseExpression, old: str, new: str) -> Optional[cst.Attribute]:
    """``F.softmax`` -> ``F.log_softmax``: the attribute `old` renamed (None for a bare name,
    which would need another import)."""
    if isinstance(func, cst.Attribute) and func.attr.value == old:
        return func.with_changes(attr=cst.Name(new))
    return None


def _log_softmax_fix(model: FileModel, origin: cst.CSTNode) -> Optional[Fix]:
    """NLLLoss given softmax output: the softmax becomes a log_softmax over the same dim
    (``F.softmax(z, dim=1)`` -> ``F.log_softmax(z, dim=1)``, ``z.softmax(1)`` ->
    ``z.log_softmax(1)``, ``nn.Softmax(dim=1)`` -> ``nn.LogSoftmax(dim=1)``), and
    ``torch.exp(F.log_softmax(z, 1))`` loses its exp."""
    description = "use log_softmax: NLLLoss expects log-probabilities (callers reading its output as probabilities must exp it)"
    if not isinstance(origin, cst.Call):
        return None
    func = origin.func
    new = None
    if _is_qual(model, func, SOFTMAX_LAYERS):
        func = _renamed(func, "Softmax", "LogSoftmax")  # nn.Softmax(dim=1), a layer
        new = None if func is None else origin.with_changes(func=func)
    elif isinstance(func, cst.Call) and _is_qual(model, func.func, SOFTMAX_LAYERS):
        layer = _renamed(func.func, "Softmax", "LogSoftmax")  # nn.Softmax(dim=1)(z)
        new = None if layer is None else origin.with_changes(func=func.with_changes(func=layer))
    elif isinstance(func, cst.Attribute) and func.attr.value == "add_module":
        layer = _first_arg(origin, "module") if len(origin.args) < 2 else origin.args[1].value
        if isinstance(layer, cst.Call) and _renamed(layer.func, "Softmax", "LogSoftmax") is not None:
            return model.fix_replacing(layer, layer.with_changes(func=_renamed(layer.func, "Softmax", "LogSoftmax")),
                                       Applicability.UNSAFE, description)
    elif isinstance(func, cst.Attribute) and func.attr.value == "softmax" and (
            _is_qual(model, func, SOFTMAX_FUNCTIONS) or tensor_method_receiver(model, func)):
        new = origin.with_changes(func=_renamed(func, "softmax", "log_softmax"))  # F.softmax, torch.softmax, z.softmax
    elif sole_layer_of_call(model, origin, SOFTMAX_LAYERS) is not None:
        layer = sole_layer_of_call(model, origin, SOFTMAX_LAYERS)  # self.softmax(x), self.softmax = nn.Softmax(dim=1)
        func = _renamed(layer.func, "Softmax", "LogSoftmax")
        if func is not None:
            return model.fix_replacing(layer, layer.with_changes(func=func), Applicability.UNSAFE, description)
    elif model.imports.qualname(func) == "torch.exp" and _first_arg(origin) is not None:
        new = _first_arg(origin)  # torch.exp(F.log_softmax(z, 1)) -> F.log_softmax(z, 1)
    elif isinstance(func, cst.Attribute) and func.attr.value == "exp" and not origin.args:
        new = func.value  # F.log_softmax(z, 1).exp()
    if new is None:
        return None
    return model.fix_replacing(origin, new, Applicability.UNSAFE, description)


def _remove_line(model: FileModel, line: cst.SimpleStatementLine, description: str) -> Optional[Fix]:
    """The fix that deletes one statement line, with the comments above it, from its block
    (a block left empty gets ``pass``)."""
    block = model.parents.get(line)
    if not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return None
    body = [item for item in block.body if item is not line]
    return model.fix_replacing(block, block.with_changes(body=body), Applicability.UNSAFE, description)


# --- examples ------------------------------------------------------------------------------------

VALID = [
    # skorch's default criterion for a classifier is NLLLoss on the log of the probabilities:
    # a module ending in a softmax is what it expects
    """
    import torch
    from torch import nn
    from skorch import NeuralNetClassifier


    class ClassifierModule(nn.Module):
        def __init__(self, num_units=10):
            super().__init__()
            self.dense = nn.Linear(20, num_units)
            self.output = nn.Linear(num_units, 2)
            self.softmax = nn.Softmax(dim=-1)

        def forward(self, X):
            X = torch.relu(self.dense(X))
            return self.softmax(self.output(X))


    net = NeuralNetClassifier(ClassifierModule, max_epochs=10, lr=0.1)
    net.fit(X, y)
    """,
    # the criterion parameter defaults to CrossEntropyLoss, but the file builds the module
    # with another loss (one we cannot see into): the default is not what runs
    """
    import torch
    from torch import nn
    from losses import FocalLoss


    class RowLoss(nn.Module):
        def __init__(self, criterion=nn.CrossEntropyLoss()):
            super().__init__()
            self.criterion = criterion

        def forward(self, scores, target):
            return self.criterion(torch.softmax(scores, -1), target)


    loss_fn = RowLoss(criterion=FocalLoss(gamma=2.0))
    """,
    # log_softmax + NLLLoss: the intended pairing
    """
    import torch.nn.functional as F
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(784, 10)

        def forward(self, x):
            return F.log_softmax(self.fc(x), dim=1)

    model = Net()
    criterion = nn.NLLLoss()
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
    """,
    # the softmax is for the accuracy; the loss gets the logits
    """
    import torch
    from torch import nn

    criterion = nn.CrossEntropyLoss()
    for images, labels in train_loader:
        logits = model(images)
        probs = torch.softmax(logits, dim=1)
        loss = criterion(logits, labels)
        correct += (probs.argmax(1) == labels).sum().item()
        loss.backward()
    """,
    # the model returns both logits and probabilities
    """
    import torch.nn.functional as F
    from torch import nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(128, 5)

        def forward(self, h):
            logits = self.head(h)
            return logits, F.softmax(logits, dim=1)

    net = Classifier()
    logits, probs = net(h)
    loss = F.cross_entropy(logits, y)
    """,
    # softmax only at inference time: training sees logits
    """
    import torch.nn.functional as F
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(20, 3)

        def forward(self, x):
            x = self.fc(x)
            if not self.training:
                return F.softmax(x, dim=1)
            return x

    model = Net()
    loss_fn = nn.CrossEntropyLoss()
    loss = loss_fn(model(x), y)
    """,
    # distillation: the softmax is in the (soft) target, the input is logits
    """
    import torch.nn.functional as F

    def distill_loss(student_logits, teacher_logits, T=4.0):
        soft = F.softmax(teacher_logits / T, dim=-1)
        return F.cross_entropy(student_logits / T, soft)
    """,
    # a custom loss we cannot see into
    """
    import torch.nn.functional as F
    from losses import FocalLoss

    criterion = FocalLoss(gamma=2.0)
    probs = F.softmax(model(x), dim=1)
    loss = criterion(probs, y)
    """,
    # BCELoss takes probabilities: the right loss after a softmax/sigmoid
    """
    import torch
    from torch import nn

    criterion = nn.BCELoss()
    probs = torch.softmax(scores, dim=-1)
    loss = criterion(probs, one_hot)
    """,
    # the name is rebound to the logits before the loss
    """
    import torch.nn.functional as F
    from torch import nn

    criterion = nn.CrossEntropyLoss()
    out = F.softmax(model(x), dim=1)
    preds = out.argmax(1)
    out = model(x)
    loss = criterion(out, y)
    """,
    # the log of the probabilities plus an epsilon: not a softmax or log_softmax call, not followed
    """
    import torch
    import torch.nn.functional as F

    probs = F.softmax(model(x), dim=1)
    loss = F.cross_entropy(torch.log(probs + 1e-8), y)
    """,
    # Sequential ending in LogSoftmax
    """
    from torch import nn

    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10), nn.LogSoftmax(dim=1))
    criterion = nn.NLLLoss()
    loss = criterion(model(images), labels)
    """,
    # --- sigmoid and BCEWithLogitsLoss, softmax and NLLLoss ---
    # a model ending in a sigmoid trained with BCELoss: the pairing for probabilities
    """
    import torch
    from torch import nn

    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 1)

        def forward(self, x):
            return torch.sigmoid(self.fc(x))

    model = Detector()
    criterion = nn.BCELoss()
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
    """,
    # the sigmoid is for the predictions; BCEWithLogitsLoss gets the logits
    """
    import torch
    from torch import nn

    criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(3.0))
    for x, y in loader:
        logits = model(x).squeeze(1)
        probs = torch.sigmoid(logits)
        loss = criterion(logits, y)
        correct += ((probs > 0.5).float() == y).sum().item()
        loss.backward()
    """,
    # soft targets from a teacher's sigmoid: the sigmoid is in the target, the input is logits
    """
    import torch
    import torch.nn.functional as F

    def distill(student_logits, teacher_logits):
        return F.binary_cross_entropy_with_logits(student_logits, torch.sigmoid(teacher_logits))
    """,
    # a sigmoid gate inside the model: the output is not a sigmoid's output
    """
    import torch
    from torch import nn

    class Gated(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(32, 32)
            self.head = nn.Linear(32, 1)

        def forward(self, h):
            h = h * torch.sigmoid(self.gate(h))
            return self.head(h)

    net = Gated()
    loss = nn.BCEWithLogitsLoss()(net(h), y)
    """,
    # the sigmoid only when not training
    """
    import torch
    from torch import nn

    class Scorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 1)

        def forward(self, x):
            logit = self.fc(x)
            if not self.training:
                return torch.sigmoid(logit)
            return logit

    model = Scorer()
    loss = nn.BCEWithLogitsLoss()(model(x), y)
    """,
    # the log of the softmax before NLLLoss: log-probabilities (numerically worse, not this rule's point)
    """
    import torch
    import torch.nn.functional as F

    probs = F.softmax(model(x), dim=1)
    loss = F.nll_loss(torch.log(probs), y)
    acc = (probs.argmax(1) == y).float().mean()
    """,
    # softmax for the metrics, log_softmax for NLLLoss
    """
    import torch.nn.functional as F
    from torch import nn

    criterion = nn.NLLLoss()
    for x, y in loader:
        scores = model(x)
        probs = F.softmax(scores, dim=1)
        loss = criterion(F.log_softmax(scores, dim=1), y)
        top = probs.max(1).values
        loss.backward()
    """,
    # clamped log of the probabilities, as a method chain, before nll_loss
    """
    import torch.nn.functional as F

    probs = model(x).softmax(dim=-1)
    loss = F.nll_loss(probs.clamp_min(1e-8).log(), y)
    """,
    # skorch hands NLLLoss the log of the module's output: a softmax module is what it expects
    """
    import torch
    from torch import nn
    from skorch import NeuralNetClassifier

    class Module(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(20, 3)

        def forward(self, X):
            return torch.softmax(self.fc(X), dim=-1)

    net = NeuralNetClassifier(Module, criterion=nn.NLLLoss, max_epochs=5)
    """,
    # skorch's binary classifier with a module returning the logit (its default BCEWithLogitsLoss)
    """
    import torch
    from torch import nn
    from skorch import NeuralNetBinaryClassifier

    class Module(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(20, 1)

        def forward(self, X):
            return self.fc(X).squeeze(-1)

    net = NeuralNetBinaryClassifier(Module, max_epochs=5)
    """,
    # a two-output model: the logit goes to BCEWithLogitsLoss, the probability to the metrics
    """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 1)

        def forward(self, x):
            logit = self.fc(x)
            return logit, torch.sigmoid(logit)

    net = Net()
    criterion = nn.BCEWithLogitsLoss()
    logit, prob = net(x)
    loss = criterion(logit, y)
    """,
    # a sigmoid before NLLLoss and a softmax before BCEWithLogitsLoss: other mistakes, not these pairings
    """
    import torch
    import torch.nn.functional as F

    a = F.nll_loss(torch.sigmoid(scores), y)
    b = F.binary_cross_entropy_with_logits(torch.softmax(scores, -1), one_hot)
    """,
    # the sigmoid model trained with BCELoss: the pairing for probabilities
    """
    import torch
    import torch.nn as nn


    class Classifier(nn.Module):
        def __init__(self, n_in):
            super().__init__()
            self.fc1 = nn.Linear(n_in, 64)
            self.fc2 = nn.Linear(64, 1)

        def forward(self, x):
            x = torch.relu(self.fc1(x))
            return torch.sigmoid(self.fc2(x))


    class Trainer:
        def __init__(self, n_in, lr=1e-3):
            self.model = Classifier(n_in)
            self.criterion = nn.BCELoss()
            self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)

        def train_step(self, x, y):
            self.optimizer.zero_grad()
            pred = self.model(x).squeeze(1)
            loss = self.criterion(pred, y.float())
            loss.backward()
            self.optimizer.step()
            return loss.item()
    """,
    # the Sequential ends in the Linear layer: logits
    """
    import torch
    from torch import nn

    model = nn.Sequential(
        nn.Linear(30, 16),
        nn.ReLU(),
        nn.Linear(16, 1),
    )


    def train_epoch(model, loader, criterion, optimizer):
        model.train()
        total = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            out = model(xb).view(-1)
            loss = criterion(out, yb)
            loss.backward()
            optimizer.step()
            total += loss.item()
        return total / len(loader)


    criterion = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(10):
        train_epoch(model, train_loader, criterion, optimizer)
    """,
    # forward ends in F.log_softmax before NLLLoss
    """
    import torch
    from torch import nn
    import torch.nn.functional as F


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = x.view(-1, 784)
            x = F.relu(self.fc1(x))
            x = self.fc2(x)
            return F.log_softmax(x, dim=1)


    def train(model, device, train_loader, optimizer, epoch):
        model.train()
        loss_fn = nn.NLLLoss()
        for batch_idx, (data, target) in enumerate(train_loader):
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            output = model(data)
            loss = loss_fn(output, target)
            loss.backward()
            optimizer.step()


    def main():
        device = torch.device("cpu")
        model = Net().to(device)
        optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
        for epoch in range(1, 15):
            train(model, device, train_loader, optimizer, epoch)
    """,
    # log_softmax before nll_loss
    """
    import torch
    from torch.nn import functional as fn


    def sequence_loss(logits, targets, pad_id=0):
        probs = fn.log_softmax(logits, dim=-1)
        vocab = probs.size(-1)
        return fn.nll_loss(probs.view(-1, vocab), targets.view(-1), ignore_index=pad_id)
    """,
    # forward returns a dict; its "logits" entry goes to BCEWithLogitsLoss
    """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.encoder = nn.Linear(d, 64)
            self.head = nn.Linear(64, 1)

        def forward(self, x):
            h = torch.relu(self.encoder(x))
            logits = self.head(h).squeeze(-1)
            return {"logits": logits, "prob": torch.sigmoid(logits)}


    model = Model(32)
    criterion = nn.BCEWithLogitsLoss()
    for x, y in loader:
        out = model(x)
        loss = criterion(out["logits"], y)
        loss.backward()
    """,
    # the helper gets the logits; the sigmoid is computed but unused by the loss
    """
    import torch
    import torch.nn as nn


    def compute_loss(pred, y, criterion):
        return criterion(pred.view(-1), y.view(-1).float())


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(20, 1)

        def forward(self, x):
            return self.fc(x)


    model = Model()
    criterion = nn.BCEWithLogitsLoss()
    for x, y in loader:
        logits = model(x)
        prob = torch.sigmoid(logits)
        loss = compute_loss(logits, y, criterion)
        loss.backward()
    """,
    # LightningModule whose forward returns logits
    """
    import torch
    import torch.nn as nn
    import pytorch_lightning as pl


    class LitClassifier(pl.LightningModule):
        def __init__(self, n_features):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(n_features, 32), nn.ReLU(), nn.Linear(32, 1))
            self.loss = nn.BCEWithLogitsLoss()

        def forward(self, x):
            return self.net(x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            y_hat = self(x).squeeze(1)
            loss = self.loss(y_hat, y.float())
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)
    """,
    # the Trainer is built with BCELoss
    """
    import torch
    import torch.nn as nn


    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
            self.act = nn.Sigmoid()

        def forward(self, x):
            return self.act(self.layers(x))


    class Trainer:
        def __init__(self, model, criterion, optimizer):
            self.model = model
            self.criterion = criterion
            self.optimizer = optimizer

        def fit(self, loader, epochs=10):
            for _ in range(epochs):
                for x, y in loader:
                    self.optimizer.zero_grad()
                    preds = self.model(x)
                    loss = self.criterion(preds, y)
                    loss.backward()
                    self.optimizer.step()


    model = MLP()
    trainer = Trainer(model, nn.BCELoss(), torch.optim.Adam(model.parameters()))
    trainer.fit(loader)
    """,
    # the probabilities only feed the accuracy
    """
    import torch
    import torch.nn.functional as F


    def step(model, x, y, pos_weight):
        logits = model(x)
        probs = torch.sigmoid(logits)
        loss = F.binary_cross_entropy_with_logits(logits.squeeze(), y.float(), pos_weight=pos_weight)
        acc = ((probs.squeeze() > 0.5) == y).float().mean()
        return loss, acc
    """,
    # torch.log of a softmax before nll_loss: log-probabilities
    """
    import torch
    import torch.nn.functional as F


    def loss_fn(logits, target):
        p = F.softmax(logits, dim=1)
        return F.nll_loss(torch.log(p + 1e-8), target)
    """,
    # the sigmoid only when not training
    """
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(10, 1)

        def forward(self, x):
            out = self.fc(x)
            if not self.training:
                out = torch.sigmoid(out)
            return out


    model = Net()
    criterion = nn.BCEWithLogitsLoss()
    for x, y in loader:
        loss = criterion(model(x).squeeze(1), y)
    """,
    # a sigmoid gate inside the model, logits out
    """
    import torch
    import torch.nn as nn


    class Gated(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.g = nn.Linear(d, d)
            self.h = nn.Linear(d, d)
            self.out = nn.Linear(d, 1)

        def forward(self, x):
            return self.out(self.h(x) * torch.sigmoid(self.g(x)))


    model = Gated(16)
    loss = nn.BCEWithLogitsLoss()(model(x).view(-1), y)
    """,
    # a helper called with logits + BCEWithLogitsLoss and with probabilities + BCELoss: not every call passes sigmoid output
    """
    import torch
    import torch.nn as nn


    def compute_loss(pred, y, criterion):
        return criterion(pred.view(-1), y.float())


    logits = model(x)
    a = compute_loss(logits, y, nn.BCEWithLogitsLoss())
    b = compute_loss(torch.sigmoid(logits), y, nn.BCELoss())
    """,
    # a (logits, probs) tuple whose logits go to the loss
    """
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(10, 1)

        def forward(self, x):
            logits = self.fc(x)
            return logits, torch.sigmoid(logits)


    model = Net()
    criterion = nn.BCEWithLogitsLoss()
    logits, probs = model(x)
    loss = criterion(logits.squeeze(1), y)
    """,
    # the dict entry is overwritten before the loss
    """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 1)

        def forward(self, x):
            z = self.fc(x)
            return {"out": torch.sigmoid(z), "z": z}


    model = Model()
    out = model(x)
    out["out"] = out["z"]
    loss = nn.BCEWithLogitsLoss()(out["out"], y)
    """,
    # self(x) gives logits; only predict_step applies the sigmoid
    """
    import torch
    import torch.nn as nn
    import pytorch_lightning as pl


    class Lit(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(10, 1)
            self.criterion = nn.BCEWithLogitsLoss()

        def forward(self, x):
            return self.net(x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return self.criterion(self(x).squeeze(1), y)

        def predict_step(self, batch, batch_idx):
            return torch.sigmoid(self(batch[0]))
    """,
    # a Sequential ending in nn.LogSoftmax, viewed, before NLLLoss
    """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(100, 10), nn.LogSoftmax(dim=1))
    criterion = nn.NLLLoss()
    out = model(x)
    loss = criterion(out.view(-1, 10), y)
    """,
    # a sigmoid model run with BCELoss by one call and BCEWithLogitsLoss by another: the criterion is not known
    """
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(30, 1), nn.Sigmoid())


    def run(model, loader, criterion):
        for xb, yb in loader:
            loss = criterion(model(xb).squeeze(1), yb)
            loss.backward()


    run(model, loader, nn.BCELoss())
    run(model, loader, nn.BCEWithLogitsLoss())
    """,
    # the subclass's forward returns logits; only the base class's ends in a sigmoid
    """
    import torch
    import torch.nn as nn


    class Base(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(10, 1)

        def forward(self, x):
            return torch.sigmoid(self.fc(x))


    class Logits(Base):
        def forward(self, x):
            return self.fc(x)


    model = Logits()
    loss = nn.BCEWithLogitsLoss()(model(x), y)
    """,
]

INVALID = [
    # skorch: the module class ends in a softmax and the net's criterion is CrossEntropyLoss
    Example(
        """
        import torch
        from torch import nn
        from skorch import NeuralNetClassifier


        class ClassifierModule(nn.Module):
            def __init__(self, num_units=10):
                super().__init__()
                self.dense = nn.Linear(20, num_units)
                self.output = nn.Linear(num_units, 2)
                self.softmax = nn.Softmax(dim=-1)

            def forward(self, X):
                X = torch.relu(self.dense(X))
                return self.softmax(self.output(X))


        net = NeuralNetClassifier(ClassifierModule, criterion=nn.CrossEntropyLoss, max_epochs=10, lr=0.1)
        net.fit(X, y)
        """,
        unsafe_fixed="""
        import torch
        from torch import nn
        from skorch import NeuralNetClassifier


        class ClassifierModule(nn.Module):
            def __init__(self, num_units=10):
                super().__init__()
                self.dense = nn.Linear(20, num_units)
                self.output = nn.Linear(num_units, 2)
                self.softmax = nn.Softmax(dim=-1)

            def forward(self, X):
                X = torch.relu(self.dense(X))
                return self.output(X)


        net = NeuralNetClassifier(ClassifierModule, criterion=nn.CrossEntropyLoss, max_epochs=10, lr=0.1)
        net.fit(X, y)
        """,
    ),
    # a two-headed model: the class head (a Sequential ending in nn.Softmax) is the second
    # element of the tuple forward returns, unpacked and handed to CrossEntropyLoss
    Example(
        """
        import torch
        from torch import nn


        class Discriminator(nn.Module):
            def __init__(self, n_classes):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(784, 256), nn.LeakyReLU(0.2))
                self.adv_head = nn.Sequential(nn.Linear(256, 1), nn.Sigmoid())
                self.cls_head = nn.Sequential(nn.Linear(256, n_classes), nn.Softmax(dim=1))

            def forward(self, x):
                h = self.body(x)
                return self.adv_head(h), self.cls_head(h)


        disc = Discriminator(10)
        adv_loss = nn.BCELoss()
        cls_loss = nn.CrossEntropyLoss()
        for images, labels in loader:
            validity, class_probs = disc(images)
            loss = adv_loss(validity, real) + cls_loss(class_probs, labels)
            loss.backward()
        """,
        unsafe_fixed="""
        import torch
        from torch import nn


        class Discriminator(nn.Module):
            def __init__(self, n_classes):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(784, 256), nn.LeakyReLU(0.2))
                self.adv_head = nn.Sequential(nn.Linear(256, 1), nn.Sigmoid())
                self.cls_head = nn.Sequential(nn.Linear(256, n_classes))

            def forward(self, x):
                h = self.body(x)
                return self.adv_head(h), self.cls_head(h)


        disc = Discriminator(10)
        adv_loss = nn.BCELoss()
        cls_loss = nn.CrossEntropyLoss()
        for images, labels in loader:
            validity, class_probs = disc(images)
            loss = adv_loss(validity, real) + cls_loss(class_probs, labels)
            loss.backward()
        """,
    ),
    # each row of the probabilities (a loop over them) goes to a criterion whose default is
    # CrossEntropyLoss, and nothing in the file builds the module with another one
    Example(
        """
        import torch
        from torch import nn


        class RowLoss(nn.Module):
            def __init__(self, criterion=nn.CrossEntropyLoss(reduction="sum")):
                super().__init__()
                self.criterion = criterion

            def forward(self, scores):
                probs = torch.softmax(scores, -1)
                total = 0
                for row in probs:
                    target = torch.arange(row.shape[0], device=row.device)
                    total = total + self.criterion(row, target)
                return total / len(scores)
        """,
        unsafe_fixed="""
        import torch
        from torch import nn


        class RowLoss(nn.Module):
            def __init__(self, criterion=nn.CrossEntropyLoss(reduction="sum")):
                super().__init__()
                self.criterion = criterion

            def forward(self, scores):
                probs = scores
                total = 0
                for row in probs:
                    target = torch.arange(row.shape[0], device=row.device)
                    total = total + self.criterion(row, target)
                return total / len(scores)
        """,
    ),
    Example(
        """
        import torch.nn.functional as F

        def train_step(model, x, y, opt):
            opt.zero_grad()
            probs = F.softmax(model(x), dim=1)
            loss = F.cross_entropy(probs, y)
            loss.backward()
            opt.step()
        """,
        unsafe_fixed="""
        import torch.nn.functional as F

        def train_step(model, x, y, opt):
            opt.zero_grad()
            probs = model(x)
            loss = F.cross_entropy(probs, y)
            loss.backward()
            opt.step()
        """,
    ),
    # the model's forward ends in a softmax
    Example(
        """
        import torch
        import torch.nn.functional as F
        from torch import nn

        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(784, 256)
                self.fc2 = nn.Linear(256, 10)

            def forward(self, x):
                x = torch.relu(self.fc1(x))
                return F.softmax(self.fc2(x), dim=1)

        model = MLP()
        criterion = nn.CrossEntropyLoss()
        for images, labels in loader:
            loss = criterion(model(images), labels)
            loss.backward()
        """,
        unsafe_fixed="""
        import torch
        import torch.nn.functional as F
        from torch import nn

        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(784, 256)
                self.fc2 = nn.Linear(256, 10)

            def forward(self, x):
                x = torch.relu(self.fc1(x))
                return self.fc2(x)

        model = MLP()
        criterion = nn.CrossEntropyLoss()
        for images, labels in loader:
            loss = criterion(model(images), labels)
            loss.backward()
        """,
    ),
    # nn.Softmax as the last layer of a Sequential
    Example(
        """
        from torch import nn

        model = nn.Sequential(
            nn.Linear(4, 32),
            nn.ReLU(),
            nn.Linear(32, 3),
            nn.Softmax(dim=1),
        )
        loss_fn = nn.CrossEntropyLoss()
        loss = loss_fn(model(features), target)
        """,
        unsafe_fixed="""
        from torch import nn

        model = nn.Sequential(
            nn.Linear(4, 32),
            nn.ReLU(),
            nn.Linear(32, 3),
        )
        loss_fn = nn.CrossEntropyLoss()
        loss = loss_fn(model(features), target)
        """,
    ),
    # an nn.Softmax module attribute applied in forward, criterion on self
    Example(
        """
        from torch import nn

        class TextClassifier(nn.Module):
            def __init__(self, vocab, classes):
                super().__init__()
                self.emb = nn.EmbeddingBag(vocab, 64)
                self.fc = nn.Linear(64, classes)
                self.softmax = nn.Softmax(dim=1)

            def forward(self, text, offsets):
                return self.softmax(self.fc(self.emb(text, offsets)))

        class Trainer:
            def __init__(self):
                self.model = TextClassifier(1000, 4)
                self.criterion = nn.CrossEntropyLoss()

            def step(self, text, offsets, label):
                output = self.model(text, offsets)
                return self.criterion(output, label)
        """,
        unsafe_fixed="""
        from torch import nn

        class TextClassifier(nn.Module):
            def __init__(self, vocab, classes):
                super().__init__()
                self.emb = nn.EmbeddingBag(vocab, 64)
                self.fc = nn.Linear(64, classes)
                self.softmax = nn.Softmax(dim=1)

            def forward(self, text, offsets):
                return self.fc(self.emb(text, offsets))

        class Trainer:
            def __init__(self):
                self.model = TextClassifier(1000, 4)
                self.criterion = nn.CrossEntropyLoss()

            def step(self, text, offsets, label):
                output = self.model(text, offsets)
                return self.criterion(output, label)
        """,
    ),
    # the tensor method, inline in the loss
    Example(
        """
        import torch.nn.functional as F

        for batch in loader:
            logits = model(batch["x"])
            loss = F.cross_entropy(logits.softmax(dim=-1), batch["y"])
            loss.backward()
        """,
        unsafe_fixed="""
        import torch.nn.functional as F

        for batch in loader:
            logits = model(batch["x"])
            loss = F.cross_entropy(logits, batch["y"])
            loss.backward()
        """,
    ),
    # through a helper and a reshape
    Example(
        """
        import torch
        from torch import nn

        def predict(net, x):
            scores = net(x)
            return torch.softmax(scores, dim=-1)

        criterion = nn.CrossEntropyLoss()
        out = predict(net, x)
        loss = criterion(out.view(-1, 10), y.view(-1))
        """,
        unsafe_fixed="""
        import torch
        from torch import nn

        def predict(net, x):
            scores = net(x)
            return scores

        criterion = nn.CrossEntropyLoss()
        out = predict(net, x)
        loss = criterion(out.view(-1, 10), y.view(-1))
        """,
    ),
    # the criterion handed to a training function
    Example(
        """
        import torch.nn.functional as F
        from torch import nn

        class CNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 8, 3)
                self.fc = nn.Linear(8 * 26 * 26, 10)

            def forward(self, x):
                x = F.relu(self.conv(x)).flatten(1)
                x = self.fc(x)
                x = F.softmax(x, dim=1)
                return x

        def train(model, loader, criterion, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()

        net = CNN()
        train(net, loader, nn.CrossEntropyLoss(), optimizer)
        """,
        unsafe_fixed="""
        import torch.nn.functional as F
        from torch import nn

        class CNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 8, 3)
                self.fc = nn.Linear(8 * 26 * 26, 10)

            def forward(self, x):
                x = F.relu(self.conv(x)).flatten(1)
                x = self.fc(x)
                return x

        def train(model, loader, criterion, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()

        net = CNN()
        train(net, loader, nn.CrossEntropyLoss(), optimizer)
        """,
    ),
    # nn.Softmax()(z) inline, and a sum of logits wrapped in parentheses by the fix
    Example(
        """
        import torch
        from torch import nn

        criterion = nn.CrossEntropyLoss()
        scores = nn.Softmax(dim=1)(head_a(h) + head_b(h))
        loss = criterion(scores, labels)
        """,
        unsafe_fixed="""
        import torch
        from torch import nn

        criterion = nn.CrossEntropyLoss()
        scores = (head_a(h) + head_b(h))
        loss = criterion(scores, labels)
        """,
    ),
    # model moved to a device, model returned through a local variable
    Example(
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 2))

            def forward(self, x):
                out = self.body(x)
                out = torch.softmax(out, dim=1)
                return out

        model = Net().to(device)
        criterion = nn.CrossEntropyLoss()
        for xb, yb in train_dl:
            preds = model(xb.to(device))
            loss = criterion(preds, yb.to(device))
            loss.backward()
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 2))

            def forward(self, x):
                out = self.body(x)
                return out

        model = Net().to(device)
        criterion = nn.CrossEntropyLoss()
        for xb, yb in train_dl:
            preds = model(xb.to(device))
            loss = criterion(preds, yb.to(device))
            loss.backward()
        """,
    ),
    # torch.nn.functional spelled out, input= keyword, a subscript of the probabilities
    Example(
        """
        import torch

        probs = torch.nn.functional.softmax(model(tokens), dim=-1)
        loss = torch.nn.functional.cross_entropy(input=probs[:, -1], target=next_token)
        """,
        unsafe_fixed="""
        import torch

        probs = model(tokens)
        loss = torch.nn.functional.cross_entropy(input=probs[:, -1], target=next_token)
        """,
    ),
    # log_softmax before cross-entropy: applied twice (the same loss over the class dim, computed twice)
    Example(
        """
        import torch.nn.functional as F

        def training_step(model, batch):
            x, y = batch
            logp = F.log_softmax(model(x), dim=-1)
            return F.cross_entropy(logp, y)
        """,
        unsafe_fixed="""
        import torch.nn.functional as F

        def training_step(model, batch):
            x, y = batch
            logp = model(x)
            return F.cross_entropy(logp, y)
        """,
    ),
    # a model whose forward ends in log_softmax, trained with CrossEntropyLoss
    Example(
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(784, 10)

            def forward(self, x):
                return F.log_softmax(self.fc(x), dim=1)

        model = Net()
        criterion = nn.CrossEntropyLoss()
        for images, labels in loader:
            loss = criterion(model(images), labels)
            loss.backward()
        """,
        unsafe_fixed="""
        import torch.nn as nn
        import torch.nn.functional as F

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(784, 10)

            def forward(self, x):
                return self.fc(x)

        model = Net()
        criterion = nn.CrossEntropyLoss()
        for images, labels in loader:
            loss = criterion(model(images), labels)
            loss.backward()
        """,
    ),
    # --- sigmoid before BCEWithLogitsLoss: the sigmoid applied twice ---
    # the functional form, the sigmoid inline
    Example(
        """
        import torch
        import torch.nn.functional as F

        def train_step(model, x, y, opt):
            opt.zero_grad()
            loss = F.binary_cross_entropy_with_logits(torch.sigmoid(model(x)), y)
            loss.backward()
            opt.step()
        """,
        unsafe_fixed="""
        import torch
        import torch.nn.functional as F

        def train_step(model, x, y, opt):
            opt.zero_grad()
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            loss.backward()
            opt.step()
        """,
    ),
    # through a name, the tensor method, a loss with pos_weight
    Example(
        """
        import torch
        from torch import nn

        criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([4.0]))
        for images, masks in loader:
            probs = model(images).sigmoid()
            loss = criterion(probs, masks)
            loss.backward()
        """,
        unsafe_fixed="""
        import torch
        from torch import nn

        criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([4.0]))
        for images, masks in loader:
            probs = model(images)
            loss = criterion(probs, masks)
            loss.backward()
        """,
    ),
    # a model whose forward ends in torch.sigmoid, through a squeeze
    Example(
        """
        import torch
        from torch import nn

        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(30, 16)
                self.fc2 = nn.Linear(16, 1)

            def forward(self, x):
                x = torch.relu(self.fc1(x))
                x = torch.sigmoid(self.fc2(x))
                return x

        model = Classifier()
        criterion = nn.BCEWithLogitsLoss()
        for xb, yb in train_dl:
            loss = criterion(model(xb).squeeze(1), yb)
            loss.backward()
        """,
        unsafe_fixed="""
        import torch
        from torch import nn

        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(30, 16)
                self.fc2 = nn.Linear(16, 1)

            def forward(self, x):
                x = torch.relu(self.fc1(x))
                x = self.fc2(x)
                return x

        model = Classifier()
        criterion = nn.BCEWithLogitsLoss()
        for xb, yb in train_dl:
            loss = criterion(model(xb).squeeze(1), yb)
            loss.backward()
        """,
    ),
    # nn.Sigmoid as the last layer of a Sequential
    Example(
        """
        from torch import nn

        model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid())
        loss_fn = nn.BCEWithLogitsLoss()
        loss = loss_fn(model(features), labels)
        """,
        unsafe_fixed="""
        from torch import nn

        model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
        loss_fn = nn.BCEWithLogitsLoss()
        loss = loss_fn(model(features), labels)
        """,
    ),
    # an nn.Sigmoid module attribute in forward, the criterion on self of a trainer
    Example(
        """
        from torch import nn

        class Discriminator(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(784, 1)
                self.act = nn.Sigmoid()

            def forward(self, x):
                return self.act(self.body(x))

        class GAN:
            def __init__(self):
                self.disc = Discriminator()
                self.adversarial = nn.BCEWithLogitsLoss()

            def d_loss(self, real, ones):
                return self.adversarial(self.disc(real), ones)
        """,
        unsafe_fixed="""
        from torch import nn

        class Discriminator(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(784, 1)
                self.act = nn.Sigmoid()

            def forward(self, x):
                return self.body(x)

        class GAN:
            def __init__(self):
                self.disc = Discriminator()
                self.adversarial = nn.BCEWithLogitsLoss()

            def d_loss(self, real, ones):
                return self.adversarial(self.disc(real), ones)
        """,
    ),
    # a tuple return: the scores element is F.sigmoid output
    Example(
        """
        import torch.nn.functional as F
        from torch import nn

        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Linear(300, 128)
                self.tags = nn.Linear(128, 20)

            def forward(self, x):
                h = self.enc(x)
                return h, F.sigmoid(self.tags(h))

        net = Tagger()
        feats, scores = net(x)
        loss = F.binary_cross_entropy_with_logits(scores, targets)
        """,
        unsafe_fixed="""
        import torch.nn.functional as F
        from torch import nn

        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Linear(300, 128)
                self.tags = nn.Linear(128, 20)

            def forward(self, x):
                h = self.enc(x)
                return h, self.tags(h)

        net = Tagger()
        feats, scores = net(x)
        loss = F.binary_cross_entropy_with_logits(scores, targets)
        """,
    ),
    # skorch's binary classifier: its default criterion is BCEWithLogitsLoss
    Example(
        """
        import torch
        from torch import nn
        from skorch import NeuralNetBinaryClassifier

        class Module(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(20, 1)

            def forward(self, X):
                return torch.sigmoid(self.fc(X).squeeze(-1))

        net = NeuralNetBinaryClassifier(Module, max_epochs=5, lr=0.1)
        net.fit(X, y)
        """,
        unsafe_fixed="""
        import torch
        from torch import nn
        from skorch import NeuralNetBinaryClassifier

        class Module(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(20, 1)

            def forward(self, X):
                return self.fc(X).squeeze(-1)

        net = NeuralNetBinaryClassifier(Module, max_epochs=5, lr=0.1)
        net.fit(X, y)
        """,
    ),
    # --- softmax before NLLLoss: probabilities where log-probabilities are expected ---
    # the functional form, inline: softmax becomes log_softmax over the same dim
    Example(
        """
        import torch.nn.functional as F

        def train_step(model, x, y, opt):
            opt.zero_grad()
            loss = F.nll_loss(F.softmax(model(x), dim=1), y)
            loss.backward()
            opt.step()
        """,
        unsafe_fixed="""
        import torch.nn.functional as F

        def train_step(model, x, y, opt):
            opt.zero_grad()
            loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)
            loss.backward()
            opt.step()
        """,
    ),
    # a model whose forward ends in F.softmax, trained with NLLLoss
    Example(
        """
        import torch
        import torch.nn.functional as F
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(784, 128)
                self.fc2 = nn.Linear(128, 10)

            def forward(self, x):
                x = F.relu(self.fc1(x))
                return F.softmax(self.fc2(x), dim=1)

        model = Net()
        criterion = nn.NLLLoss()
        for images, labels in loader:
            loss = criterion(model(images), labels)
            loss.backward()
        """,
        unsafe_fixed="""
        import torch
        import torch.nn.functional as F
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(784, 128)
                self.fc2 = nn.Linear(128, 10)

            def forward(self, x):
                x = F.relu(self.fc1(x))
                return F.log_softmax(self.fc2(x), dim=1)

        model = Net()
        criterion = nn.NLLLoss()
        for images, labels in loader:
            loss = criterion(model(images), labels)
            loss.backward()
        """,
    ),
    # nn.Softmax last in a Sequential becomes nn.LogSoftmax
    Example(
        """
        from torch import nn

        model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3), nn.Softmax(dim=1))
        criterion = nn.NLLLoss()
        loss = criterion(model(x), y)
        """,
        unsafe_fixed="""
        from torch import nn

        model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3), nn.LogSoftmax(dim=1))
        criterion = nn.NLLLoss()
        loss = criterion(model(x), y)
        """,
    ),
    # an nn.Softmax attribute used once: its definition becomes nn.LogSoftmax
    Example(
        """
        from torch import nn

        class RNNClassifier(nn.Module):
            def __init__(self, n_in, n_hidden, n_out):
                super().__init__()
                self.rnn = nn.GRU(n_in, n_hidden, batch_first=True)
                self.out = nn.Linear(n_hidden, n_out)
                self.softmax = nn.Softmax(dim=1)

            def forward(self, x):
                _, h = self.rnn(x)
                return self.softmax(self.out(h[-1]))

        rnn = RNNClassifier(57, 128, 18)
        criterion = nn.NLLLoss()
        loss = criterion(rnn(line), category)
        """,
        unsafe_fixed="""
        from torch import nn

        class RNNClassifier(nn.Module):
            def __init__(self, n_in, n_hidden, n_out):
                super().__init__()
                self.rnn = nn.GRU(n_in, n_hidden, batch_first=True)
                self.out = nn.Linear(n_hidden, n_out)
                self.softmax = nn.LogSoftmax(dim=1)

            def forward(self, x):
                _, h = self.rnn(x)
                return self.softmax(self.out(h[-1]))

        rnn = RNNClassifier(57, 128, 18)
        criterion = nn.NLLLoss()
        loss = criterion(rnn(line), category)
        """,
    ),
    # the tensor method through a name and a reshape
    Example(
        """
        import torch.nn.functional as F

        for batch in loader:
            scores = decoder(batch.src, batch.tgt)
            probs = scores.softmax(-1)
            loss = F.nll_loss(probs.view(-1, probs.size(-1)), batch.gold.view(-1))
            loss.backward()
        """,
        unsafe_fixed="""
        import torch.nn.functional as F

        for batch in loader:
            scores = decoder(batch.src, batch.tgt)
            probs = scores.log_softmax(-1)
            loss = F.nll_loss(probs.view(-1, probs.size(-1)), batch.gold.view(-1))
            loss.backward()
        """,
    ),
    # softmax spelled out as the exp of a log_softmax: the exp goes
    Example(
        """
        import torch
        import torch.nn.functional as F

        def step(model, x, y):
            p = torch.exp(F.log_softmax(model(x), dim=-1))
            return F.nll_loss(p, y)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn.functional as F

        def step(model, x, y):
            p = F.log_softmax(model(x), dim=-1)
            return F.nll_loss(p, y)
        """,
    ),
    # through a helper, the criterion handed to a training function
    Example(
        """
        import torch
        from torch import nn

        def predict(net, x):
            return torch.softmax(net(x), dim=1)

        def train(net, loader, criterion, opt):
            for x, y in loader:
                opt.zero_grad()
                loss = criterion(predict(net, x), y)
                loss.backward()
                opt.step()

        train(net, loader, nn.NLLLoss(), opt)
        """,
        unsafe_fixed="""
        import torch
        from torch import nn

        def predict(net, x):
            return torch.log_softmax(net(x), dim=1)

        def train(net, loader, criterion, opt):
            for x, y in loader:
                opt.zero_grad()
                loss = criterion(predict(net, x), y)
                loss.backward()
                opt.step()

        train(net, loader, nn.NLLLoss(), opt)
        """,
    ),
    # a trainer class: self.criterion = BCEWithLogitsLoss() in __init__, the model's forward ends in torch.sigmoid, its output squeezed in train_step
    Example(
        """
        import torch
        import torch.nn as nn


        class Classifier(nn.Module):
            def __init__(self, n_in):
                super().__init__()
                self.fc1 = nn.Linear(n_in, 64)
                self.fc2 = nn.Linear(64, 1)

            def forward(self, x):
                x = torch.relu(self.fc1(x))
                return torch.sigmoid(self.fc2(x))


        class Trainer:
            def __init__(self, n_in, lr=1e-3):
                self.model = Classifier(n_in)
                self.criterion = nn.BCEWithLogitsLoss()
                self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)

            def train_step(self, x, y):
                self.optimizer.zero_grad()
                pred = self.model(x).squeeze(1)
                loss = self.criterion(pred, y.float())
                loss.backward()
                self.optimizer.step()
                return loss.item()
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class Classifier(nn.Module):
            def __init__(self, n_in):
                super().__init__()
                self.fc1 = nn.Linear(n_in, 64)
                self.fc2 = nn.Linear(64, 1)

            def forward(self, x):
                x = torch.relu(self.fc1(x))
                return self.fc2(x)


        class Trainer:
            def __init__(self, n_in, lr=1e-3):
                self.model = Classifier(n_in)
                self.criterion = nn.BCEWithLogitsLoss()
                self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)

            def train_step(self, x, y):
                self.optimizer.zero_grad()
                pred = self.model(x).squeeze(1)
                loss = self.criterion(pred, y.float())
                loss.backward()
                self.optimizer.step()
                return loss.item()
        """,
    ),
    # the criterion handed to a train function; a Sequential ending in nn.Sigmoid(), its output viewed
    Example(
        """
        import torch
        from torch import nn

        model = nn.Sequential(
            nn.Linear(30, 16),
            nn.ReLU(),
            nn.Linear(16, 1),
            nn.Sigmoid(),
        )


        def train_epoch(model, loader, criterion, optimizer):
            model.train()
            total = 0.0
            for xb, yb in loader:
                optimizer.zero_grad()
                out = model(xb).view(-1)
                loss = criterion(out, yb)
                loss.backward()
                optimizer.step()
                total += loss.item()
            return total / len(loader)


        criterion = nn.BCEWithLogitsLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        for epoch in range(10):
            train_epoch(model, train_loader, criterion, optimizer)
        """,
        unsafe_fixed="""
        import torch
        from torch import nn

        model = nn.Sequential(
            nn.Linear(30, 16),
            nn.ReLU(),
            nn.Linear(16, 1),
        )


        def train_epoch(model, loader, criterion, optimizer):
            model.train()
            total = 0.0
            for xb, yb in loader:
                optimizer.zero_grad()
                out = model(xb).view(-1)
                loss = criterion(out, yb)
                loss.backward()
                optimizer.step()
                total += loss.item()
            return total / len(loader)


        criterion = nn.BCEWithLogitsLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        for epoch in range(10):
            train_epoch(model, train_loader, criterion, optimizer)
        """,
    ),
    # self.sigmoid = nn.Sigmoid() applied last in forward; BCEWithLogitsLoss(pos_weight=...)
    Example(
        """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super(Net, self).__init__()
                self.layer_1 = nn.Linear(12, 64)
                self.layer_out = nn.Linear(64, 1)
                self.relu = nn.ReLU()
                self.sigmoid = nn.Sigmoid()

            def forward(self, inputs):
                x = self.relu(self.layer_1(inputs))
                x = self.layer_out(x)
                out = self.sigmoid(x)
                return out


        model = Net()
        criterion = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0]))
        optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
        for e in range(1, 51):
            for X_batch, y_batch in train_loader:
                optimizer.zero_grad()
                y_pred = model(X_batch)
                loss = criterion(y_pred, y_batch.unsqueeze(1))
                loss.backward()
                optimizer.step()
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super(Net, self).__init__()
                self.layer_1 = nn.Linear(12, 64)
                self.layer_out = nn.Linear(64, 1)
                self.relu = nn.ReLU()
                self.sigmoid = nn.Sigmoid()

            def forward(self, inputs):
                x = self.relu(self.layer_1(inputs))
                x = self.layer_out(x)
                out = x
                return out


        model = Net()
        criterion = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0]))
        optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
        for e in range(1, 51):
            for X_batch, y_batch in train_loader:
                optimizer.zero_grad()
                y_pred = model(X_batch)
                loss = criterion(y_pred, y_batch.unsqueeze(1))
                loss.backward()
                optimizer.step()
        """,
    ),
    # forward ends in out.sigmoid(); one column of the output goes to the functional loss
    Example(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Scorer(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.proj = nn.Linear(d, 2)

            def forward(self, h):
                out = self.proj(h)
                return out.sigmoid()


        scorer = Scorer(128)
        out = scorer(features)
        loss = F.binary_cross_entropy_with_logits(out[:, 0], labels)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Scorer(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.proj = nn.Linear(d, 2)

            def forward(self, h):
                out = self.proj(h)
                return out


        scorer = Scorer(128)
        out = scorer(features)
        loss = F.binary_cross_entropy_with_logits(out[:, 0], labels)
        """,
    ),
    # MNIST-style: forward ends in F.softmax, the model handed to train(), NLLLoss built there
    Example(
        """
        import torch
        from torch import nn
        import torch.nn.functional as F


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(784, 128)
                self.fc2 = nn.Linear(128, 10)

            def forward(self, x):
                x = x.view(-1, 784)
                x = F.relu(self.fc1(x))
                x = self.fc2(x)
                return F.softmax(x, dim=1)


        def train(model, device, train_loader, optimizer, epoch):
            model.train()
            loss_fn = nn.NLLLoss()
            for batch_idx, (data, target) in enumerate(train_loader):
                data, target = data.to(device), target.to(device)
                optimizer.zero_grad()
                output = model(data)
                loss = loss_fn(output, target)
                loss.backward()
                optimizer.step()


        def main():
            device = torch.device("cpu")
            model = Net().to(device)
            optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
            for epoch in range(1, 15):
                train(model, device, train_loader, optimizer, epoch)
        """,
        unsafe_fixed="""
        import torch
        from torch import nn
        import torch.nn.functional as F


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(784, 128)
                self.fc2 = nn.Linear(128, 10)

            def forward(self, x):
                x = x.view(-1, 784)
                x = F.relu(self.fc1(x))
                x = self.fc2(x)
                return F.log_softmax(x, dim=1)


        def train(model, device, train_loader, optimizer, epoch):
            model.train()
            loss_fn = nn.NLLLoss()
            for batch_idx, (data, target) in enumerate(train_loader):
                data, target = data.to(device), target.to(device)
                optimizer.zero_grad()
                output = model(data)
                loss = loss_fn(output, target)
                loss.backward()
                optimizer.step()


        def main():
            device = torch.device("cpu")
            model = Net().to(device)
            optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
            for epoch in range(1, 15):
                train(model, device, train_loader, optimizer, epoch)
        """,
    ),
    # from torch.nn import functional as fn: softmax then nll_loss on a viewed copy
    Example(
        """
        import torch
        from torch.nn import functional as fn


        def sequence_loss(logits, targets, pad_id=0):
            probs = fn.softmax(logits, dim=-1)
            vocab = probs.size(-1)
            return fn.nll_loss(probs.view(-1, vocab), targets.view(-1), ignore_index=pad_id)
        """,
        unsafe_fixed="""
        import torch
        from torch.nn import functional as fn


        def sequence_loss(logits, targets, pad_id=0):
            probs = fn.log_softmax(logits, dim=-1)
            vocab = probs.size(-1)
            return fn.nll_loss(probs.view(-1, vocab), targets.view(-1), ignore_index=pad_id)
        """,
    ),
    # a Sequential ending in nn.Softmax fed to F.nll_loss
    Example(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10), nn.Softmax(dim=1))
        opt = torch.optim.Adam(net.parameters())
        for epoch in range(5):
            for images, labels in loader:
                opt.zero_grad()
                loss = F.nll_loss(net(images), labels)
                loss.backward()
                opt.step()
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10), nn.LogSoftmax(dim=1))
        opt = torch.optim.Adam(net.parameters())
        for epoch in range(5):
            for images, labels in loader:
                opt.zero_grad()
                loss = F.nll_loss(net(images), labels)
                loss.backward()
                opt.step()
        """,
    ),
    # forward returns a dict; its "prob" entry (a sigmoid) goes to BCEWithLogitsLoss
    Example(
        """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.encoder = nn.Linear(d, 64)
                self.head = nn.Linear(64, 1)

            def forward(self, x):
                h = torch.relu(self.encoder(x))
                logits = self.head(h).squeeze(-1)
                return {"logits": logits, "prob": torch.sigmoid(logits)}


        model = Model(32)
        criterion = nn.BCEWithLogitsLoss()
        for x, y in loader:
            out = model(x)
            loss = criterion(out["prob"], y)
            loss.backward()
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.encoder = nn.Linear(d, 64)
                self.head = nn.Linear(64, 1)

            def forward(self, x):
                h = torch.relu(self.encoder(x))
                logits = self.head(h).squeeze(-1)
                return {"logits": logits, "prob": logits}


        model = Model(32)
        criterion = nn.BCEWithLogitsLoss()
        for x, y in loader:
            out = model(x)
            loss = criterion(out["prob"], y)
            loss.backward()
        """,
    ),
    # forward returns (sigmoid output, attention weights); the first element, squeezed, goes to the loss
    Example(
        """
        import torch
        import torch.nn as nn


        class AttnClassifier(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.attn = nn.Linear(d, 1)
                self.out = nn.Linear(d, 1)

            def forward(self, h):
                w = torch.softmax(self.attn(h), dim=1)
                ctx = (w * h).sum(1)
                return torch.sigmoid(self.out(ctx)), w


        model = AttnClassifier(64)
        criterion = nn.BCEWithLogitsLoss()
        pred, attn = model(batch)
        loss = criterion(pred.squeeze(-1), target)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class AttnClassifier(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.attn = nn.Linear(d, 1)
                self.out = nn.Linear(d, 1)

            def forward(self, h):
                w = torch.softmax(self.attn(h), dim=1)
                ctx = (w * h).sum(1)
                return self.out(ctx), w


        model = AttnClassifier(64)
        criterion = nn.BCEWithLogitsLoss()
        pred, attn = model(batch)
        loss = criterion(pred.squeeze(-1), target)
        """,
    ),
    # a helper compute_loss(pred, y, criterion) whose every caller passes sigmoid output and BCEWithLogitsLoss
    Example(
        """
        import torch
        import torch.nn as nn


        def compute_loss(pred, y, criterion):
            return criterion(pred.view(-1), y.view(-1).float())


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(20, 1)

            def forward(self, x):
                return self.fc(x)


        model = Model()
        criterion = nn.BCEWithLogitsLoss()
        for x, y in loader:
            logits = model(x)
            prob = torch.sigmoid(logits)
            loss = compute_loss(prob, y, criterion)
            loss.backward()
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        def compute_loss(pred, y, criterion):
            return criterion(pred.view(-1), y.view(-1).float())


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(20, 1)

            def forward(self, x):
                return self.fc(x)


        model = Model()
        criterion = nn.BCEWithLogitsLoss()
        for x, y in loader:
            logits = model(x)
            prob = logits
            loss = compute_loss(prob, y, criterion)
            loss.backward()
        """,
    ),
    # LightningModule: self(x) in training_step runs a forward that ends in torch.sigmoid; self.loss is BCEWithLogitsLoss
    Example(
        """
        import torch
        import torch.nn as nn
        import pytorch_lightning as pl


        class LitClassifier(pl.LightningModule):
            def __init__(self, n_features):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(n_features, 32), nn.ReLU(), nn.Linear(32, 1))
                self.loss = nn.BCEWithLogitsLoss()

            def forward(self, x):
                return torch.sigmoid(self.net(x))

            def training_step(self, batch, batch_idx):
                x, y = batch
                y_hat = self(x).squeeze(1)
                loss = self.loss(y_hat, y.float())
                self.log("train_loss", loss)
                return loss

            def configure_optimizers(self):
                return torch.optim.Adam(self.parameters(), lr=1e-3)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn
        import pytorch_lightning as pl


        class LitClassifier(pl.LightningModule):
            def __init__(self, n_features):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(n_features, 32), nn.ReLU(), nn.Linear(32, 1))
                self.loss = nn.BCEWithLogitsLoss()

            def forward(self, x):
                return self.net(x)

            def training_step(self, batch, batch_idx):
                x, y = batch
                y_hat = self(x).squeeze(1)
                loss = self.loss(y_hat, y.float())
                self.log("train_loss", loss)
                return loss

            def configure_optimizers(self):
                return torch.optim.Adam(self.parameters(), lr=1e-3)
        """,
    ),
    # LightningModule: self.model is a Sequential ending in nn.Sigmoid, flattened before self.loss_fn
    Example(
        """
        import torch
        from torch import nn
        import lightning as L


        class BinaryModule(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.model = nn.Sequential(nn.Linear(10, 10), nn.Tanh(), nn.Linear(10, 1), nn.Sigmoid())
                self.loss_fn = nn.BCEWithLogitsLoss()

            def training_step(self, batch, batch_idx):
                x, y = batch
                logits = self.model(x).flatten()
                return self.loss_fn(logits, y)
        """,
        unsafe_fixed="""
        import torch
        from torch import nn
        import lightning as L


        class BinaryModule(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.model = nn.Sequential(nn.Linear(10, 10), nn.Tanh(), nn.Linear(10, 1))
                self.loss_fn = nn.BCEWithLogitsLoss()

            def training_step(self, batch, batch_idx):
                x, y = batch
                logits = self.model(x).flatten()
                return self.loss_fn(logits, y)
        """,
    ),
    # a char-RNN whose forward returns (x.softmax(-1), h); the output viewed to (N, vocab) for NLLLoss
    Example(
        """
        import torch
        import torch.nn as nn


        class CharRNN(nn.Module):
            def __init__(self, vocab, hidden):
                super().__init__()
                self.embed = nn.Embedding(vocab, hidden)
                self.rnn = nn.GRU(hidden, hidden, batch_first=True)
                self.out = nn.Linear(hidden, vocab)

            def forward(self, x, h=None):
                out, h = self.rnn(self.embed(x), h)
                return self.out(out).softmax(-1), h


        model = CharRNN(100, 256)
        criterion = torch.nn.NLLLoss()
        for inp, tgt in batches:
            output, hidden = model(inp)
            loss = criterion(output.view(-1, 100), tgt.view(-1))
            loss.backward()
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class CharRNN(nn.Module):
            def __init__(self, vocab, hidden):
                super().__init__()
                self.embed = nn.Embedding(vocab, hidden)
                self.rnn = nn.GRU(hidden, hidden, batch_first=True)
                self.out = nn.Linear(hidden, vocab)

            def forward(self, x, h=None):
                out, h = self.rnn(self.embed(x), h)
                return self.out(out).log_softmax(-1), h


        model = CharRNN(100, 256)
        criterion = torch.nn.NLLLoss()
        for inp, tgt in batches:
            output, hidden = model(inp)
            loss = criterion(output.view(-1, 100), tgt.view(-1))
            loss.backward()
        """,
    ),
    # a module-level criterion used in train(model, ...); output = output.squeeze() in between
    Example(
        """
        import torch
        import torch.nn as nn

        criterion = nn.BCEWithLogitsLoss()


        class Detector(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(16, 1)

            def forward(self, x):
                return torch.sigmoid(self.body(x))


        def train(model, loader, opt):
            for x, y in loader:
                opt.zero_grad()
                output = model(x)
                output = output.squeeze()
                loss = criterion(output, y)
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            det = Detector()
            train(det, loader, torch.optim.Adam(det.parameters()))
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn

        criterion = nn.BCEWithLogitsLoss()


        class Detector(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(16, 1)

            def forward(self, x):
                return self.body(x)


        def train(model, loader, opt):
            for x, y in loader:
                opt.zero_grad()
                output = model(x)
                output = output.squeeze()
                loss = criterion(output, y)
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            det = Detector()
            train(det, loader, torch.optim.Adam(det.parameters()))
        """,
    ),
    # a Trainer built with the model and the criterion as __init__ arguments
    Example(
        """
        import torch
        import torch.nn as nn


        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
                self.act = nn.Sigmoid()

            def forward(self, x):
                return self.act(self.layers(x))


        class Trainer:
            def __init__(self, model, criterion, optimizer):
                self.model = model
                self.criterion = criterion
                self.optimizer = optimizer

            def fit(self, loader, epochs=10):
                for _ in range(epochs):
                    for x, y in loader:
                        self.optimizer.zero_grad()
                        preds = self.model(x)
                        loss = self.criterion(preds, y)
                        loss.backward()
                        self.optimizer.step()


        model = MLP()
        trainer = Trainer(model, nn.BCEWithLogitsLoss(), torch.optim.Adam(model.parameters()))
        trainer.fit(loader)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
                self.act = nn.Sigmoid()

            def forward(self, x):
                return self.layers(x)


        class Trainer:
            def __init__(self, model, criterion, optimizer):
                self.model = model
                self.criterion = criterion
                self.optimizer = optimizer

            def fit(self, loader, epochs=10):
                for _ in range(epochs):
                    for x, y in loader:
                        self.optimizer.zero_grad()
                        preds = self.model(x)
                        loss = self.criterion(preds, y)
                        loss.backward()
                        self.optimizer.step()


        model = MLP()
        trainer = Trainer(model, nn.BCEWithLogitsLoss(), torch.optim.Adam(model.parameters()))
        trainer.fit(loader)
        """,
    ),
    # probs = torch.sigmoid(logits) both for the metric and, squeezed, for the loss
    Example(
        """
        import torch
        import torch.nn.functional as F


        def step(model, x, y, pos_weight):
            logits = model(x)
            probs = torch.sigmoid(logits)
            loss = F.binary_cross_entropy_with_logits(probs.squeeze(), y.float(), pos_weight=pos_weight)
            acc = ((probs.squeeze() > 0.5) == y).float().mean()
            return loss, acc
        """,
        unsafe_fixed="""
        import torch
        import torch.nn.functional as F


        def step(model, x, y, pos_weight):
            logits = model(x)
            probs = logits
            loss = F.binary_cross_entropy_with_logits(probs.squeeze(), y.float(), pos_weight=pos_weight)
            acc = ((probs.squeeze() > 0.5) == y).float().mean()
            return loss, acc
        """,
    ),
    # nn.functional.sigmoid in forward; criterion = BCEWithLogitsLoss().to(device)
    Example(
        """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)
                self.fc = nn.Linear(8, 1)

            def forward(self, x):
                x = self.conv(x).mean((2, 3))
                return nn.functional.sigmoid(self.fc(x))


        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = Net().to(device)
        criterion = nn.BCEWithLogitsLoss().to(device)
        for img, mask in loader:
            pred = model(img.to(device))
            loss = criterion(pred, mask.to(device))
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)
                self.fc = nn.Linear(8, 1)

            def forward(self, x):
                x = self.conv(x).mean((2, 3))
                return self.fc(x)


        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = Net().to(device)
        criterion = nn.BCEWithLogitsLoss().to(device)
        for img, mask in loader:
            pred = model(img.to(device))
            loss = criterion(pred, mask.to(device))
        """,
    ),
    # a runner class holding the model (self.softmax = nn.Softmax(dim=1)) and NLLLoss
    Example(
        """
        import torch
        from torch import nn


        class TextCNN(nn.Module):
            def __init__(self, vocab, n_classes):
                super().__init__()
                self.emb = nn.EmbeddingBag(vocab, 64)
                self.fc = nn.Linear(64, n_classes)
                self.softmax = nn.Softmax(dim=1)

            def forward(self, text, offsets):
                return self.softmax(self.fc(self.emb(text, offsets)))


        class Runner:
            def __init__(self):
                self.model = TextCNN(5000, 4)
                self.loss_fn = nn.NLLLoss()
                self.opt = torch.optim.SGD(self.model.parameters(), lr=5.0)

            def run_batch(self, text, offsets, label):
                self.opt.zero_grad()
                predicted = self.model(text, offsets)
                loss = self.loss_fn(predicted, label)
                loss.backward()
                self.opt.step()
        """,
        unsafe_fixed="""
        import torch
        from torch import nn


        class TextCNN(nn.Module):
            def __init__(self, vocab, n_classes):
                super().__init__()
                self.emb = nn.EmbeddingBag(vocab, 64)
                self.fc = nn.Linear(64, n_classes)
                self.softmax = nn.LogSoftmax(dim=1)

            def forward(self, text, offsets):
                return self.softmax(self.fc(self.emb(text, offsets)))


        class Runner:
            def __init__(self):
                self.model = TextCNN(5000, 4)
                self.loss_fn = nn.NLLLoss()
                self.opt = torch.optim.SGD(self.model.parameters(), lr=5.0)

            def run_batch(self, text, offsets, label):
                self.opt.zero_grad()
                predicted = self.model(text, offsets)
                loss = self.loss_fn(predicted, label)
                loss.backward()
                self.opt.step()
        """,
    ),
    # model = Net(); model = model.to(device)
    Example(
        """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(10, 1)

            def forward(self, x):
                return torch.sigmoid(self.fc(x))


        model = Net()
        model = model.to("cuda")
        criterion = nn.BCEWithLogitsLoss()
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(10, 1)

            def forward(self, x):
                return self.fc(x)


        model = Net()
        model = model.to("cuda")
        criterion = nn.BCEWithLogitsLoss()
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
    ),
    # the model wrapped in nn.DataParallel (calling the wrapper runs the module's forward)
    Example(
        """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(10, 1)

            def forward(self, x):
                return torch.sigmoid(self.fc(x))


        model = nn.DataParallel(Net()).cuda()
        criterion = nn.BCEWithLogitsLoss()
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(10, 1)

            def forward(self, x):
                return self.fc(x)


        model = nn.DataParallel(Net()).cuda()
        criterion = nn.BCEWithLogitsLoss()
        for x, y in loader:
            loss = criterion(model(x), y)
        """,
    ),
    # nn.Sequential(OrderedDict([..., ("sigmoid", nn.Sigmoid())])) (no fix: the layer sits in a list of pairs)
    Example(
        """
        from collections import OrderedDict
        import torch.nn as nn

        model = nn.Sequential(OrderedDict([
            ("fc1", nn.Linear(20, 10)),
            ("relu", nn.ReLU()),
            ("fc2", nn.Linear(10, 1)),
            ("sigmoid", nn.Sigmoid()),
        ]))
        criterion = nn.BCEWithLogitsLoss()
        loss = criterion(model(x).squeeze(), y)
        """,
    ),
    # torch.squeeze(p, 1): the functional form of a shape-only op
    Example(
        """
        import torch
        import torch.nn as nn

        criterion = nn.BCEWithLogitsLoss()
        out = torch.sigmoid(net(x))
        loss = criterion(torch.squeeze(out, 1), y)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn

        criterion = nn.BCEWithLogitsLoss()
        out = net(x)
        loss = criterion(torch.squeeze(out, 1), y)
        """,
    ),
    # a method of the model (net.predict_proba(x)) that returns sigmoid output
    Example(
        """
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(10, 1)

            def forward(self, x):
                return self.fc(x)

            def predict_proba(self, x):
                return torch.sigmoid(self.forward(x))


        net = Net()
        criterion = nn.BCEWithLogitsLoss()
        loss = criterion(net.predict_proba(x), y)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(10, 1)

            def forward(self, x):
                return self.fc(x)

            def predict_proba(self, x):
                return self.forward(x)


        net = Net()
        criterion = nn.BCEWithLogitsLoss()
        loss = criterion(net.predict_proba(x), y)
        """,
    ),
    # the forward is inherited from a base class of this file
    Example(
        """
        import torch
        import torch.nn as nn


        class Base(nn.Module):
            def forward(self, x):
                return torch.sigmoid(self.head(self.body(x)))


        class Small(Base):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(10, 10)
                self.head = nn.Linear(10, 1)


        model = Small()
        loss = nn.BCEWithLogitsLoss()(model(x), y)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class Base(nn.Module):
            def forward(self, x):
                return self.head(self.body(x))


        class Small(Base):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(10, 10)
                self.head = nn.Linear(10, 1)


        model = Small()
        loss = nn.BCEWithLogitsLoss()(model(x), y)
        """,
    ),
    # the PyTorch seq2seq tutorial's shape: a decoder whose forward ends in nn.Softmax (after an unpacking of the GRU output), handed through trainIters() to train(), NLLLoss built in trainIters
    Example(
        """
        import torch
        import torch.nn as nn


        class DecoderRNN(nn.Module):
            def __init__(self, hidden_size, output_size):
                super(DecoderRNN, self).__init__()
                self.embedding = nn.Embedding(output_size, hidden_size)
                self.gru = nn.GRU(hidden_size, hidden_size)
                self.out = nn.Linear(hidden_size, output_size)
                self.softmax = nn.Softmax(dim=1)

            def forward(self, input, hidden):
                output = self.embedding(input).view(1, 1, -1)
                output, hidden = self.gru(torch.relu(output), hidden)
                output = self.softmax(self.out(output[0]))
                return output, hidden


        def train(input_tensor, target_tensor, decoder, decoder_optimizer, criterion):
            decoder_hidden = torch.zeros(1, 1, 256)
            decoder_input = torch.tensor([[0]])
            loss = 0
            for di in range(target_tensor.size(0)):
                decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden)
                loss += criterion(decoder_output, target_tensor[di])
                decoder_input = target_tensor[di]
            loss.backward()
            decoder_optimizer.step()


        def trainIters(decoder, n_iters, learning_rate=0.01):
            decoder_optimizer = torch.optim.SGD(decoder.parameters(), lr=learning_rate)
            criterion = nn.NLLLoss()
            for iter in range(1, n_iters + 1):
                input_tensor, target_tensor = pairs[iter]
                train(input_tensor, target_tensor, decoder, decoder_optimizer, criterion)


        decoder1 = DecoderRNN(256, 1000)
        trainIters(decoder1, 75000)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class DecoderRNN(nn.Module):
            def __init__(self, hidden_size, output_size):
                super(DecoderRNN, self).__init__()
                self.embedding = nn.Embedding(output_size, hidden_size)
                self.gru = nn.GRU(hidden_size, hidden_size)
                self.out = nn.Linear(hidden_size, output_size)
                self.softmax = nn.LogSoftmax(dim=1)

            def forward(self, input, hidden):
                output = self.embedding(input).view(1, 1, -1)
                output, hidden = self.gru(torch.relu(output), hidden)
                output = self.softmax(self.out(output[0]))
                return output, hidden


        def train(input_tensor, target_tensor, decoder, decoder_optimizer, criterion):
            decoder_hidden = torch.zeros(1, 1, 256)
            decoder_input = torch.tensor([[0]])
            loss = 0
            for di in range(target_tensor.size(0)):
                decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden)
                loss += criterion(decoder_output, target_tensor[di])
                decoder_input = target_tensor[di]
            loss.backward()
            decoder_optimizer.step()


        def trainIters(decoder, n_iters, learning_rate=0.01):
            decoder_optimizer = torch.optim.SGD(decoder.parameters(), lr=learning_rate)
            criterion = nn.NLLLoss()
            for iter in range(1, n_iters + 1):
                input_tensor, target_tensor = pairs[iter]
                train(input_tensor, target_tensor, decoder, decoder_optimizer, criterion)


        decoder1 = DecoderRNN(256, 1000)
        trainIters(decoder1, 75000)
        """,
    ),
    # a method compute_loss(self, pred, target) called with self.forward(x)
    Example(
        """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(10, 1)
                self.criterion = nn.BCEWithLogitsLoss()

            def forward(self, x):
                return torch.sigmoid(self.fc(x)).squeeze(-1)

            def compute_loss(self, pred, target):
                return self.criterion(pred, target)

            def train_batch(self, x, y):
                return self.compute_loss(self.forward(x), y)
        """,
        unsafe_fixed="""
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(10, 1)
                self.criterion = nn.BCEWithLogitsLoss()

            def forward(self, x):
                return self.fc(x).squeeze(-1)

            def compute_loss(self, pred, target):
                return self.criterion(pred, target)

            def train_batch(self, x, y):
                return self.compute_loss(self.forward(x), y)
        """,
    ),
    # nn.Sequential(*layers) of a list display ending in nn.Sigmoid() (no fix)
    Example(
        """
        import torch.nn as nn

        layers = [nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid()]
        model = nn.Sequential(*layers)
        loss = nn.BCEWithLogitsLoss()(model(x), y)
        """,
    ),
]
