"""Cross-entropy is computed on probabilities: the softmax is applied twice.

Why it matters
    ``nn.CrossEntropyLoss`` and ``F.cross_entropy`` expect raw scores (logits): they
    apply ``log_softmax`` themselves. Given the output of a softmax, they squash
    values that already lie in [0, 1] a second time: the loss cannot get near 0
    (for 10 classes it stays above about 1.46 even for a perfect model), its
    gradients shrink as the model gets confident, and training is slower or stalls.
    No error is raised; the loss just goes down less (fixtures/ml013: the same small
    classifier after 300 steps, softmax + cross-entropy: loss 1.58, accuracy 0.90;
    logits + cross-entropy: loss 0.029, accuracy 0.998).

    The softmax is found where it is applied: in the loss's argument, in a name
    assigned from it, in a helper or method whose every ``return`` gives softmax
    output, or in a model whose ``forward`` ends in ``F.softmax``/``torch.softmax``/
    ``x.softmax``/an ``nn.Softmax`` layer (also the last layer of an
    ``nn.Sequential``), also one element of a tuple such a call returns
    (``validity, class_probs = disc(x)`` where ``forward`` returns
    ``self.adv_head(h), self.cls_head(h)``) and each element of a loop over softmax output
    (``for row in probs:``); the loss is ``F.cross_entropy`` or a callable bound to
    ``nn.CrossEntropyLoss()`` (also ``self.criterion``, a parameter every caller
    in the file hands one, or a parameter defaulting to one that no call in the file
    overrides); also a module handed to a training wrapper with ``criterion=`` the
    ``CrossEntropyLoss`` class (skorch: ``NeuralNetClassifier(MyModule,
    criterion=nn.CrossEntropyLoss)``), which feeds the module's output to the criterion.

When the code is fine
    - ``log_softmax`` (or ``nn.LogSoftmax``) before ``NLLLoss``, the intended pairing.
      (``log_softmax`` before cross-entropy *is* reported, as RULES.md asks: over the class
      dimension the second log_softmax changes nothing, it is idempotent, so the loss is
      computed twice for the same value (checked with torch 2.13: equal values and
      gradients); over another dimension the loss is wrong. The message says which.)
    - the softmax output is only used for predictions or metrics while the loss gets
      the logits; a model that returns both logits and probabilities (a tuple or a dict)
      whose logits go to the loss;
    - a skorch classifier left with its default criterion (``NLLLoss``, which skorch
      gives the log of the module's probabilities): a module ending in a softmax is
      what it expects;
    - a softmax only on some paths (``if not self.training: return x.softmax(1)``);
    - soft targets: a softmax in the *target* (second) argument, as in distillation;
    - losses this rule cannot see into (a custom loss function, a loss from another
      module), and BCE-style losses (out of scope).

How to fix
    Give the loss the logits: drop the softmax, and apply it where probabilities are
    needed (predictions, metrics); or switch to ``log_softmax`` + ``NLLLoss``. The fix
    (unsafe: ``--unsafe-fixes``, shown by ``--diff``) drops the softmax where it is
    applied (``F.softmax(z, dim=1)`` becomes ``z``; an ``nn.Softmax`` last layer is
    removed from its ``nn.Sequential``). It is unsafe because the model or helper then
    returns logits for every caller: code that reads its output as probabilities
    (thresholds, sampling) must apply the softmax itself.
"""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from mllint.findings import Applicability, Example, Finding, Fix
from mllint.semantics.model import FileModel
from mllint.semantics.names import shorten
from mllint.semantics.probabilities import (
    LOG_SOFTMAX,
    SOFTMAX,
    Kind,
    _first_arg,
    _is_qual,
    criterion_for_module,
    is_cross_entropy,
    project_model_origin,
    softmax_origin,
    tensor_method_receiver,
)

CODE = "ML013"
NAME = "softmax-before-cross-entropy"
MESSAGE = "cross-entropy is given softmax output: it applies its own softmax, so pass the logits"
TRIGGERS = ("CrossEntropyLoss", "cross_entropy")
REQUIRES = ("softmax|Softmax",)  # log_softmax / LogSoftmax contain it too
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = "unsafe"


def SCREEN(facts) -> bool:
    # Sound: a finding needs a cross-entropy (``CrossEntropyLoss``/``cross_entropy`` by its
    # qualified name, so its name or an import of it is in the file) and a softmax or
    # log_softmax (``softmax``/``Softmax``/``LogSoftmax``... also by name), or a model class of
    # another file of the project whose forward ends in one (the project implies the word).
    names = facts.identifiers | facts.imported_names
    return any("cross_entropy" in n or "CrossEntropy" in n for n in names) and (
        "softmax" in facts.project_words or any("softmax" in n or "Softmax" in n for n in names)
    )

_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)


def check(model: FileModel) -> Iterable[Finding]:
    seen = set()
    for call, ctx in model.calls:
        if not is_cross_entropy(model, call.func, ctx.scope):
            continue
        arg = _first_arg(call)
        if arg is None:
            continue
        kind = SOFTMAX
        origin = softmax_origin(model, arg, ctx.scope, call)
        if origin is None:
            kind = LOG_SOFTMAX
            origin = softmax_origin(model, arg, ctx.scope, call, kind=LOG_SOFTMAX)
        if origin is None and call not in seen:
            yield from _project_finding(model, call, arg, ctx.scope)
            continue
        if origin is None or call in seen:
            continue
        seen.add(call)
        yield _finding(model, call, arg, origin, kind)
    for call, _ctx in model.calls:
        found = criterion_for_module(model, call)
        if found is None:
            continue
        criterion, module, origin = found
        line = model.position(origin).start.line
        message = (f"`criterion={shorten(model.code_of(criterion), 24)}` gets softmax output from "
                   f"`{shorten(model.code_of(module), 24)}` (line {line}): it softmaxes again")
        detail = (
            f"The wrapper feeds what `{shorten(model.code_of(module), 40)}` returns to the criterion, and its forward ends "
            f"in `{shorten(model.code_of(origin).strip(), 60)}` (line {line}); cross-entropy applies log_softmax itself, "
            f"so the probabilities are squashed twice and training is slower. Return the logits from forward (skorch's "
            f"predict_proba can apply the softmax), or keep the softmax and use NLLLoss on its log."
        )
        yield model.finding(criterion, CODE, NAME, message, _fix(model, origin), detail)


def _project_finding(model: FileModel, call: cst.Call, arg: cst.BaseExpression, scope: str) -> Iterable[Finding]:
    """The model's class is defined in another file of the project and its ``forward`` ends in a
    softmax or log_softmax: reported here, without a fix (the change belongs in that file)."""
    for kind in (SOFTMAX, LOG_SOFTMAX):
        found = project_model_origin(model, arg, scope, kind)
        if found is None:
            continue
        _model_call, where = found
        then = "cross-entropy softmaxes again" if kind is SOFTMAX else "cross-entropy repeats it, use NLLLoss"
        message = f"`{shorten(model.code_of(call), 40)}` gets {kind.name} output from the model's forward ({where}): {then}"
        detail = (
            f"`{shorten(model.code_of(arg), 60)}` is what the model's `forward` returns, and that forward ({where}) "
            f"ends in {kind.name} on every path; cross-entropy applies log_softmax itself. Return the logits from "
            f"forward (apply softmax where probabilities are needed), or use NLLLoss on log-probabilities."
        )
        yield model.finding(call, CODE, NAME, message, None, detail)
        return


def _finding(model: FileModel, call: cst.Call, arg: cst.BaseExpression, origin: cst.CSTNode, kind: Kind) -> Finding:
    line = model.position(origin).start.line
    softmax = model.code_of(origin).strip()
    where = "here" if origin is call or any(a is call for a in model.parents.ancestors(origin)) else f"line {line}"
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
        return model.finding(call, CODE, NAME, message, _fix(model, origin, kind), detail)
    message = f"`{shorten(model.code_of(call), 40)}` gets softmax output ({where}): cross-entropy softmaxes again"
    detail = (
        f"`{shorten(model.code_of(arg), 60)}` already went through `{shorten(softmax, 60)}` (line {line}), and "
        f"cross-entropy applies log_softmax itself: the probabilities are squashed twice, the loss cannot get "
        f"near 0 and its gradients shrink, so training is slower. Pass the logits (drop the softmax, apply it "
        f"only where probabilities are needed), or use log_softmax with NLLLoss."
    )
    return model.finding(call, CODE, NAME, message, _fix(model, origin, kind), detail)


def _fix(model: FileModel, origin: cst.CSTNode, kind: Kind = SOFTMAX) -> Optional[Fix]:
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
    # BCE on sigmoid/softmax outputs: out of scope
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
]
