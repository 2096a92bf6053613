"""``model.forward(x)`` on an nn.Module from outside it skips its hooks: call ``model(x)``.

Why it matters
    Calling a module runs ``nn.Module.__call__``: the forward pre-hooks, then ``forward``,
    then the forward hooks (and the backward hooks it registers). ``model.forward(x)``
    runs ``forward`` alone. Whatever was attached with ``register_forward_hook`` /
    ``register_forward_pre_hook`` is silently skipped: feature extractors and activation
    recorders see nothing, pruning and weight-norm/spectral-norm parametrisations that
    recompute weights in a pre-hook use stale weights, quantisation observers, DDP's and
    FSDP's own bookkeeping, ``torch.compile`` and libraries that wrap a model with hooks
    (accelerate's device hooks, PEFT) are bypassed. No error is raised
    (fixtures/ml011: a forward hook that standardises the model's output; ``.forward(x)``
    gives outputs with mean 2.29 instead of 0.00, and a final loss of 6.49 instead of 1.89).

When the code is fine
    - ``self.forward(x)`` inside the module's own class, ``super().forward(x)`` and
      ``Base.forward(self, x)`` (a subclass extending its parent);
    - ``self.module.forward(x)`` / ``self.model.forward(x)`` inside a wrapper's own
      ``forward`` (or ``__call__``): EMA, DDP-like and compile shims delegate on purpose,
      their own ``__call__`` already ran the hooks;
    - ``.forward`` taken but not called (``fn = model.forward``,
      ``torch.jit.trace(model.forward, x)``, ``torch.func.functional_call``);
    - unit tests (``def test_forward(): out = model.forward(x); assert ...``): a test
      exercising ``forward`` itself on a module without hooks; likewise a ``*_test`` function
      or an ``assert_*`` / ``check_*`` helper that asserts on what ``forward`` returns
      (``torch.testing.assert_close(compiled.forward(**x), eager.forward(**x))``);
    - an ensemble's own forward-like method running each module it holds
      (``for model in self.models: model.decoder.forward(...)``);
    - objects not known to be nn.Modules: only a class of the file deriving from
      ``nn.Module``, a name bound to a torch layer or model, a torchvision/timm/transformers
      model or wrapper, an ``nn.Module`` annotation, or a name that ``.eval()`` /
      ``.parameters()`` are called on count. A name that only looks like a model
      (``self.policy``, ``self.model.generator``, or a compound name with a network word
      in it: ``self.encoder_q``, ``text_encoder``, ``value_head``) counts in a file that
      imports torch or a library built on it (Lightning, pyro, allennlp, fairseq, timm,
      ...) and no other framework with ``forward`` methods, with an unsafe fix only;
      elsewhere (a numpy ``net.forward(x)``) it does not. A name built by a class of the file
      that is not known to be a module (``self.model = RuntimeModel.from_pretrained(p)`` with
      ``RuntimeModel`` deriving from an ONNX/Neuron runtime class) does not count either.

How to fix
    Call the module: ``model(x, mask=m)`` instead of ``model.forward(x, mask=m)``.
    ``--fix`` rewrites the call, keeping its arguments as they are, when the object is a
    known nn.Module whose ``__call__`` is ``Module.__call__`` (no fix for a class of the
    file that defines its own ``__call__``); when only the name says it is a module, the
    same rewrite is offered as an unsafe fix (``--unsafe-fixes``).
"""

from __future__ import annotations

import re
from typing import Iterable

import libcst as cst

from mllint.findings import Applicability, Example, Finding
from mllint.semantics.model import MODULE_SCOPE, FileModel
from mllint.semantics.phases import Phases
from mllint.semantics.modules import (
    LOCAL_CLASS,
    NAMED,
    iterates_own_parts,
    known_module,
    local_module_class,
    overrides_call,
    result_asserted,
    torch_code,
)
from mllint.semantics.names import ref_of, shorten
from mllint.semantics.phases.words import name_tokens

CODE = "ML011"
NAME = "forward-called-directly"
MESSAGE = "`model.forward(x)` skips the module's hooks: call `model(x)`"
TRIGGERS = (".forward(",)
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = "safe"


def SCREEN(facts) -> bool:
    # Sound: every finding is a call ``<ref>.forward(...)`` whose receiver is a reference
    # (check() skips ``super().forward(x)`` and ``make_model().forward(x)``).
    return "forward" in facts.ref_attr_calls

# Methods whose body is a module's own forward pass (a wrapper's forward delegating to the module it wraps).
_FORWARD_METHOD = re.compile(r"^(_*forward\w*|\w+_forward|__call__)$")


def _in_own_forward(model: FileModel, scope: str) -> bool:
    """Whether ``scope`` is (or is nested in) a forward-like method of a class of the file."""
    cls = model.class_scope_of(scope)
    if cls is None:
        return False
    rest = scope[len(cls) + 1:].split(".")
    return bool(rest) and bool(_FORWARD_METHOD.match(rest[0]))


def _in_unit_test(model: FileModel, scope: str) -> bool:
    """Whether ``scope`` is a unit test or nested in one (``Phases.unit_test``, judged by the code)."""
    phases = Phases.of(model)
    parts = scope.split(".") if scope != MODULE_SCOPE else []
    for end in range(len(parts), 0, -1):
        fn = model.functions.get(".".join(parts[:end]))
        if fn is not None and phases.unit_test(fn):
            return True
    return False


def _ensemble_member(model: FileModel, call: cst.Call, head: str, scope: str) -> bool:
    """``for m in self.models: m.forward(x)`` (or a comprehension over ``self.models``) in the
    method: an element of the object's own collection of modules."""
    fn = model.functions.get(scope)
    return fn is not None and iterates_own_parts(fn.node, call, head)


# A function checking what forward returns: a test (``model_output_test``) or an assertion helper.
_CHECK_WORDS = ("test", "tests")
_CHECK_PREFIXES = ("assert", "check", "verify")


def _checks_forward(model: FileModel, call: cst.Call, scope: str) -> bool:
    """Whether ``call`` sits in a test or assertion helper (``*_test``, ``assert_outputs_match``,
    ``check_forward``) that asserts on what it returns: ``forward`` itself is what is checked."""
    parts = scope.split(".") if scope != MODULE_SCOPE else []
    for end in range(len(parts), 0, -1):
        fn = model.functions.get(".".join(parts[:end]))
        if fn is None:
            continue
        tokens = name_tokens(fn.node.name.value)
        if tokens and (any(t in _CHECK_WORDS for t in tokens) or tokens[0] in _CHECK_PREFIXES):
            return result_asserted(fn.node, call, model.index)
    return False


def _fixable(model: FileModel, ref: str, scope: str, evidence: str) -> bool:
    if evidence == LOCAL_CLASS:
        cls = local_module_class(model, ref, scope)
        return cls is not None and not overrides_call(model, cls)
    return True


def check(model: FileModel) -> Iterable[Finding]:
    if not (torch_code(model) or Phases.of(model).torch_file):
        return  # no torch anywhere (a numpy ``Sequential`` of a course's own modules.py): no hooks to skip
    for call, ctx in model.calls:
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "forward":
            continue
        ref = ref_of(func.value)
        if ref is None:
            continue  # super().forward(x), make_model().forward(x)
        head = ref.split(".", 1)[0].split("[", 1)[0]
        canonical = model.canonical(ref, ctx.scope)
        if _in_own_forward(model, ctx.scope) and (
            head == "self" or canonical.split(".", 1)[0] == "self" or _ensemble_member(model, call, head, ctx.scope)
        ):
            continue  # a wrapper's (or an ensemble's) own forward delegating to the modules it holds
        evidence = known_module(model, ref, ctx.scope)
        if evidence is None or _in_unit_test(model, ctx.scope) or _checks_forward(model, call, ctx.scope):
            continue  # not known to be a module; a unit test exercising ``forward`` itself
        receiver = model.code_of(func.value)
        args = ", ".join(model.code_of(a).rstrip(", ") for a in call.args) if call.args else ""
        shown = shorten(receiver, 24)
        message = f"`{shown}.forward(...)` skips the module's hooks: call `{shown}(...)`"
        detail = (
            f"`{receiver}` is an nn.Module: calling `{receiver}.forward({shorten(args, 40)})` runs `forward` alone, "
            f"without `Module.__call__`, so forward pre-hooks and hooks registered on it (feature recorders, pruning and "
            f"weight-norm pre-hooks, DDP/FSDP, accelerate and PEFT wrappers) are skipped. Call `{receiver}(...)` "
            f"with the same arguments."
        )
        fix = None
        if _fixable(model, ref, ctx.scope, evidence):
            # Only its name says it is a module (its ``__call__`` is not known): the same rewrite, as unsafe.
            applicability = Applicability.UNSAFE if evidence == NAMED else Applicability.SAFE
            fix = model.fix_replacing(
                call, call.with_changes(func=func.value), applicability, f"call `{shorten(receiver, 40)}(...)` instead of `.forward(...)`"
            )
        yield model.finding(call, CODE, NAME, message, fix, detail)


# ---------------------------------------------------------------------------------------
# Examples (collected by the test suite). INVALID examples carry the expected --fix output.

VALID = [
    # a from-scratch numpy network of a course's own module (no torch anywhere in the file):
    # ``train()`` and ``forward`` are that class's, no hooks to skip
    """
import numpy as np
from modules import Sequential, Linear, ReLU

net = Sequential()
net.add(Linear(2, 4))
net.add(ReLU())
net.train()
for x_batch in np.split(np.random.randn(64, 2), 8):
    predictions = net.forward(x_batch)
    net.backward(x_batch, predictions - 1.0)
""",
    # a wrapper's own forward delegating to the module it wraps (EMA shim)
    """
    import copy
    import torch.nn as nn

    class ModelEMA(nn.Module):
        def __init__(self, model, decay=0.999):
            super().__init__()
            self.module = copy.deepcopy(model).eval()
            self.decay = decay

        def forward(self, *args, **kwargs):
            return self.module.forward(*args, **kwargs)
    """,
    # super().forward and self.forward inside the class
    """
    import torch.nn as nn

    class MaskedLinear(nn.Linear):
        def forward(self, x):
            return super().forward(x) * self.mask

        def predict(self, x):
            return self.forward(x).argmax(-1)
    """,
    # Base.forward(self, x): a subclass calling its parent's forward explicitly
    """
    import torch.nn as nn

    class Backbone(nn.Module):
        def forward(self, x):
            return x

    class Head(Backbone):
        def forward(self, x):
            return Backbone.forward(self, x) + 1
    """,
    # .forward taken but not called: tracing
    """
    import torch
    import torchvision

    model = torchvision.models.resnet18()
    example = torch.randn(1, 3, 224, 224)
    traced = torch.jit.trace(model.forward, example)
    fn = model.forward
    """,
    # a name that only looks like a model: nothing says it is an nn.Module
    """
    from mypkg import load_pipeline

    model = load_pipeline("ckpt/")
    for batch in batches:
        out = model.forward(batch)
    """,
    # a parameter of a helper named net: spelling alone is not evidence
    """
    def run(net, x):
        return net.forward(x)
    """,
    # a class of the file that is not an nn.Module (a numpy network)
    """
    import numpy as np

    class TwoLayerNet:
        def __init__(self):
            self.w = np.zeros((4, 2))

        def forward(self, x):
            return x @ self.w

    net = TwoLayerNet()
    scores = net.forward(np.ones((3, 4)))
    """,
    # a DDP-like wrapper's __call__ that delegates to the wrapped model
    """
    import torch.nn as nn

    class Shim:
        def __init__(self, model: nn.Module):
            self.model = model

        def __call__(self, x):
            return self.model.forward(x)
    """,
    # a wrapper's forward_features delegating to a submodule's forward
    """
    import torch.nn as nn

    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

        def forward_features(self, x):
            return self.body.forward(x)
    """,
    # a unit test exercising forward itself
    """
    import torch
    import timm

    def test_forward_without_head():
        model = timm.create_model("resnet18", num_classes=0)
        out = model.forward(torch.randn(2, 3, 64, 64))
        assert out.shape == (2, 512)
    """,
    # a gradient-checkpointing closure inside the module's own forward
    """
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Sequential(nn.Linear(16, 16), nn.GELU())

        def forward(self, x):
            block = self.block

            def run(*inputs):
                return block.forward(*inputs)

            return checkpoint(run, x, use_reentrant=False)
    """,
    # an ensemble's own forward-like method delegating to each model it holds (self.models)
    """
    import torch.nn as nn

    class EnsembleModel(nn.Module):
        def __init__(self, models):
            super().__init__()
            self.models = nn.ModuleList(models)

        def forward_decoder(self, tokens, encoder_outs):
            outs = []
            for i, model in enumerate(self.models):
                outs.append(model.decoder.forward(tokens, encoder_out=encoder_outs[i]))
            return outs

        def forward(self, states):
            return [m.forward(s) for m, s in zip(self.models, states)]
    """,
    # a test function asserting on what forward returns: forward itself is under test
    """
    import torch
    from mytts.models import ForwardTTS, ForwardTTSArgs

    def model_input_output_test():
        model = ForwardTTS(ForwardTTSArgs(num_chars=10))
        x = torch.randint(0, 10, (2, 21))
        outputs = model.forward(x, torch.tensor([21, 21]))
        assert outputs["model_outputs"].shape[0] == 2
    """,
    # an assertion helper comparing eager and compiled forward outputs
    """
    import torch

    @torch.no_grad()
    def assert_compiled_matches_eager(eager_model, compiled_model, inputs):
        expected = eager_model.forward(**inputs)
        actual = compiled_model.forward(**inputs)
        torch.testing.assert_close(actual, expected)
    """,
    # a runtime wrapper class of the file (its base is not known to be an nn.Module), built
    # by a class method: self.model is that class's instance, not a torch module by its name
    """
    import torch
    import torch.nn.functional as F

    try:
        from optimum.neuron import NeuronModelForCausalLM
    except ImportError:
        NeuronModelForCausalLM = object

    class CustomNeuronModel(NeuronModelForCausalLM):
        def generate(self, input_ids, **kwargs):
            return input_ids

    class NeuronLM:
        def __init__(self, path):
            self.model = CustomNeuronModel.from_pretrained(path)

        def loglikelihood(self, inputs):
            return F.log_softmax(self.model.forward(**inputs).logits, dim=-1)
    """,
    # a compound network name, but the file works with numpy only: nothing says it is a torch module
    """
    import numpy as np
    from toy_layers import load_layers

    text_encoder = load_layers("weights.npz")
    hidden = text_encoder.forward(np.ones((2, 8)))
    """,
]

INVALID = [
    # a torchvision model run with .forward in an evaluation loop
    Example(
        """
    import torch
    import torchvision

    model = torchvision.models.resnet18(num_classes=10)
    model.eval()
    with torch.no_grad():
        for images, labels in loader:
            logits = model.forward(images)
    """,
        fixed="""
    import torch
    import torchvision

    model = torchvision.models.resnet18(num_classes=10)
    model.eval()
    with torch.no_grad():
        for images, labels in loader:
            logits = model(images)
    """,
    ),
    # a module of the file, with keyword arguments kept exactly
    Example(
        """
    import torch.nn as nn

    class Encoder(nn.Module):
        def forward(self, x, mask=None):
            return x

    encoder = Encoder()
    hidden = encoder.forward(tokens, mask=attention_mask)
    """,
        fixed="""
    import torch.nn as nn

    class Encoder(nn.Module):
        def forward(self, x, mask=None):
            return x

    encoder = Encoder()
    hidden = encoder(tokens, mask=attention_mask)
    """,
    ),
    # a Lightning module's training_step calling a submodule's forward
    Example(
        """
    import torch.nn as nn
    import torch.nn.functional as F
    import lightning as L

    class LitClassifier(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Linear(28 * 28, 64), nn.ReLU(), nn.Linear(64, 10))

        def training_step(self, batch, batch_idx):
            x, y = batch
            logits = self.backbone.forward(x.view(x.size(0), -1))
            return F.cross_entropy(logits, y)
    """,
        fixed="""
    import torch.nn as nn
    import torch.nn.functional as F
    import lightning as L

    class LitClassifier(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Linear(28 * 28, 64), nn.ReLU(), nn.Linear(64, 10))

        def training_step(self, batch, batch_idx):
            x, y = batch
            logits = self.backbone(x.view(x.size(0), -1))
            return F.cross_entropy(logits, y)
    """,
    ),
    # a Hugging Face model called with keyword-only extras
    Example(
        """
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    outputs = model.forward(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    """,
        fixed="""
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    outputs = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    """,
    ),
    # a parameter annotated nn.Module in an evaluation helper
    Example(
        """
    import torch
    from torch import nn

    @torch.no_grad()
    def evaluate(net: nn.Module, loader):
        correct = 0
        for x, y in loader:
            correct += (net.forward(x).argmax(1) == y).sum().item()
        return correct
    """,
        fixed="""
    import torch
    from torch import nn

    @torch.no_grad()
    def evaluate(net: nn.Module, loader):
        correct = 0
        for x, y in loader:
            correct += (net(x).argmax(1) == y).sum().item()
        return correct
    """,
    ),
    # a training loop on a local module, feature hook registered
    Example(
        """
    import torch
    import torch.nn as nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 2)

        def forward(self, x):
            return self.fc(x)

    net = MLP()
    net.fc.register_forward_hook(lambda m, i, o: feats.append(o))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.mse_loss(net.forward(x), y)
        loss.backward()
        opt.step()
    """,
        fixed="""
    import torch
    import torch.nn as nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 2)

        def forward(self, x):
            return self.fc(x)

    net = MLP()
    net.fc.register_forward_hook(lambda m, i, o: feats.append(o))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
    """,
    ),
    # a timm model wrapped by DDP
    Example(
        """
    import timm
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(timm.create_model("vit_small_patch16_224").cuda(), device_ids=[rank])
    out = model.forward(images)
    """,
        fixed="""
    import timm
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(timm.create_model("vit_small_patch16_224").cuda(), device_ids=[rank])
    out = model(images)
    """,
    ),
    # a torch layer bound to a name, called with .forward in a script
    Example(
        """
    import torch
    import torch.nn as nn

    proj = nn.Linear(16, 4)
    nn.utils.parametrizations.weight_norm(proj)
    y = proj.forward(torch.randn(2, 16))
    """,
        fixed="""
    import torch
    import torch.nn as nn

    proj = nn.Linear(16, 4)
    nn.utils.parametrizations.weight_norm(proj)
    y = proj(torch.randn(2, 16))
    """,
    ),
    # an attribute known only by its name, in a file importing torch: unsafe fix
    Example(
        """
    import torch
    import torch.nn as nn

    class Translator:
        def __init__(self, model):
            self.model = model

        def step(self, dec_out):
            return self.model.generator.forward(dec_out.squeeze(0))
    """,
        unsafe_fixed="""
    import torch
    import torch.nn as nn

    class Translator:
        def __init__(self, model):
            self.model = model

        def step(self, dec_out):
            return self.model.generator(dec_out.squeeze(0))
    """,
    ),
    # a module class with its own __call__: reported, but no automatic fix
    Example(
        """
    import torch.nn as nn

    class Policy(nn.Module):
        def forward(self, obs):
            return obs

        def __call__(self, obs, deterministic=False):
            return self.forward(obs)

    policy = Policy()
    action = policy.forward(observation)
    """,
    ),
    # a name the file calls .eval() on, run with .forward in a helper of another class
    Example(
        """
    import torch

    class Evaluator:
        def __init__(self, model):
            self.model = model
            self.model.eval()

        def score(self, batch):
            with torch.no_grad():
                return self.model.forward(batch)
    """,
        fixed="""
    import torch

    class Evaluator:
        def __init__(self, model):
            self.model = model
            self.model.eval()

        def score(self, batch):
            with torch.no_grad():
                return self.model(batch)
    """,
    ),
    # a pyro model function (pyro is built on torch): a compound encoder name run with .forward
    Example(
        """
    import pyro
    import pyro.distributions as dist

    def guide(self, xs):
        pyro.module("ssvae", self)
        with pyro.plate("data", xs.shape[0]):
            z_loc, z_scale = self.encoder_z.forward(xs)
            pyro.sample("z", dist.Normal(z_loc, z_scale).to_event(1))
    """,
        unsafe_fixed="""
    import pyro
    import pyro.distributions as dist

    def guide(self, xs):
        pyro.module("ssvae", self)
        with pyro.plate("data", xs.shape[0]):
            z_loc, z_scale = self.encoder_z(xs)
            pyro.sample("z", dist.Normal(z_loc, z_scale).to_event(1))
    """,
    ),
    # an ensemble's predict (not a forward of its own) running each held module with .forward
    Example(
        """
    import torch.nn as nn

    class Ensemble(nn.Module):
        def __init__(self, models):
            super().__init__()
            self.models = nn.ModuleList(models)

        def predict(self, states):
            return [model.forward(s) for model, s in zip(self.models, states)]
    """,
    ),
    # a helper named like a test that does not check what forward returns: a training step
    Example(
        """
    import torch
    import torch.nn as nn

    def make_test_checkpoint(path):
        policy = nn.Linear(4, 2)
        optimizer = torch.optim.Adam(policy.parameters())
        policy.forward(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        torch.save(policy.state_dict(), path)
    """,
        fixed="""
    import torch
    import torch.nn as nn

    def make_test_checkpoint(path):
        policy = nn.Linear(4, 2)
        optimizer = torch.optim.Adam(policy.parameters())
        policy(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        torch.save(policy.state_dict(), path)
    """,
    ),
    # a query encoder (MoCo-style name) run with .forward from a training helper
    Example(
        """
    import torch
    import torch.nn.functional as F

    def contrastive_step(encoder_q, encoder_k, im_q, im_k, tau=0.07):
        q = F.normalize(encoder_q.forward(im_q), dim=1)
        with torch.no_grad():
            k = F.normalize(encoder_k(im_k), dim=1)
        return (q * k).sum(1).div(tau)
    """,
        unsafe_fixed="""
    import torch
    import torch.nn.functional as F

    def contrastive_step(encoder_q, encoder_k, im_q, im_k, tau=0.07):
        q = F.normalize(encoder_q(im_q), dim=1)
        with torch.no_grad():
            k = F.normalize(encoder_k(im_k), dim=1)
        return (q * k).sum(1).div(tau)
    """,
    ),
]
