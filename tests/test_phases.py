"""mllint.semantics.phases on its own: evaluation code, data flow to backward, grad
protection, model modes, and eval() left on in training loops."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from mllint.semantics import build_model
from mllint.semantics.phases import Phases, eval_name_strength, is_eval_data_ref, name_tokens, related


def phases_of(source: str, path: str = "t.py") -> Phases:
    source = textwrap.dedent(source)
    return Phases.of(build_model(cst.parse_module(source), source, path))


def forward(ph: Phases, ref: str, nth: int = 0):
    found = [e for e in ph.forwards() if e.ref == ref]
    assert len(found) > nth, [e.ref for e in ph.forwards()]
    return found[nth]


def evidence_kind(ph: Phases, ref: str, nth: int = 0):
    found = ph.evidence(forward(ph, ref, nth))
    return found.kind if found else None


# --- words ------------------------------------------------------------------------------------------------


def test_name_tokens_split_snake_and_camel_case():
    assert name_tokens("validateOneEpoch") == ["validate", "one", "epoch"]
    assert name_tokens("_run_validation") == ["run", "validation"]


@pytest.mark.parametrize(
    "name,strength",
    [
        ("evaluate", "strong"),
        ("validate_one_epoch", "strong"),
        ("test", "strong"),
        ("run_inference", "strong"),
        ("predict_proba", "strong"),
        ("compute_val_loss", "strong"),
        ("generate", "weak"),
        ("sample_images", "weak"),
        ("score", "weak"),
        ("generation_loss", None),  # a loss is training
        ("infer_shape", None),  # working something out, not evaluating
        ("generate_square_subsequent_mask", None),
        ("is_valid", None),
        ("train_one_epoch", None),
        ("interval", None),
    ],
)
def test_eval_name_strength(name, strength):
    assert eval_name_strength(name) == strength


@pytest.mark.parametrize(
    "ref,expected",
    [
        ("X_val", True),
        ("val_loader", True),
        ("self.test_data", True),
        ("valid_dl", True),
        ("eval_dataloader", True),
        ("x_test", True),
        ("valid_ratios", False),  # validity, not validation
        ("valid_mask", False),
        ("args.test_batch_size", False),  # a setting
        ("self.val_dim", False),
        ("interval", False),
        ("val", True),
    ],
)
def test_is_eval_data_ref(ref, expected):
    assert is_eval_data_ref(ref) is expected


def test_related_models():
    assert related("model", "model.module")
    assert related("model.encoder", "model")
    assert not related("encoder", "decoder")
    assert not related("model", "model_ema")


# --- forwards ----------------------------------------------------------------------------------------------


def test_forwards_leave_out_constructors_factories_and_methods_without_inputs():
    ph = phases_of(
        """
        import torch
        from models import build_model
        class Net(torch.nn.Module):
            pass
        model = Net()
        other_model = build_model()
        model.fuse_model()
        out = model(x)
        pred = model_transform(out)
        """
    )
    assert [e.ref for e in ph.forwards()] == ["model"]


# --- evaluation code ---------------------------------------------------------------------------------------


def test_evidence_from_function_loop_data_script_and_callers():
    ph = phases_of(
        """
        import torch

        def evaluate(model, loader):
            return [model(x) for x in loader]

        def run(net, batch):
            return net(batch)

        def check(clf, loader):
            for xb in loader:
                run(clf, xb)

        def train(model, train_loader, val_loader, opt):
            for x, y in train_loader:
                opt.zero_grad()
                loss_fn(model(x), y).backward()
                opt.step()
            for x, y in val_loader:
                encoder(x)
            classifier(X_val)
        """
    )
    assert evidence_kind(ph, "model") == "function"
    assert evidence_kind(ph, "encoder") == "loop"
    assert evidence_kind(ph, "classifier") == "data"
    assert evidence_kind(ph, "net") is None  # its only caller is not evaluation code
    assert evidence_kind(ph, "model", 1) is None  # training


def test_callers_evidence_and_script_evidence():
    ph = phases_of(
        """
        import torch

        def embed(encoder, x):
            return encoder(x)

        def validate(encoder, val_loader):
            return [embed(encoder, x) for x in val_loader]
        """
    )
    assert evidence_kind(ph, "encoder") == "callers"
    script = phases_of(
        """
        import torch
        model = Net()
        model.load_state_dict(torch.load("m.pt"))
        print(model(images))
        """
    )
    assert evidence_kind(script, "model") == "script"


def test_no_evidence_for_frameworks_unit_tests_and_model_internals():
    ph = phases_of(
        """
        import torch
        import lightning as L
        from transformers import Trainer

        class Lit(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                return self.model(batch)

        class MyTrainer(Trainer):
            def evaluate(self, dataset):
                return self.net(dataset)

        class Head(torch.nn.Module):
            def predict(self, x):
                return self.classifier(x)
        """
    )
    for ref in ("self.model", "self.net", "self.classifier"):
        assert evidence_kind(ph, ref) is None, ref
    tests = phases_of(
        """
        import pytest
        import torch
        def test_forward_shape():
            assert model(torch.zeros(1, 3)).shape == (1, 2)
        """,
        path="tests/test_model.py",
    )
    assert evidence_kind(tests, "model") is None


def test_unit_tests_are_told_by_their_code_not_their_file_name():
    asserting = phases_of(
        """
        import torch
        def test_forward(model, batch):
            out = model(batch)
            assert out.shape[0] == batch.shape[0]
        """,
        path="test.py",
    )
    assert evidence_kind(asserting, "model") is None
    evaluating = phases_of(
        """
        import torch
        def test(model, test_loader):
            correct = 0
            with torch.no_grad():
                for x, y in test_loader:
                    correct += (model(x).argmax(1) == y).sum().item()
            return correct
        """,
        path="tests/test_eval.py",
    )
    assert evidence_kind(evaluating, "model") == "loop"


def test_an_evaluation_function_whose_result_is_trained_on_is_not_evaluation():
    ph = phases_of(
        """
        import torch

        def infer(net, x):
            return net(x)

        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(infer(model, x), y)
            loss.backward()
            optimizer.step()
        """
    )
    assert evidence_kind(ph, "net") is None


# --- data flow to backward ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        # a frozen teacher's output feeds the loss
        """
        with torch.no_grad():
            soft = teacher(x)
        loss = kd(student(x), soft)
        loss.backward()
        """,
        # collected in a list and backpropagated after the loop (REINFORCE)
        """
        log_probs = []
        for state in episode:
            log_probs.append(policy(state))
        loss = -torch.stack(log_probs).sum()
        loss.backward()
        """,
        # through a context manager's target
        """
        out = model(x)
        with amp.scale_loss(criterion(out, y), opt) as scaled:
            scaled.backward()
        """,
        # straight into autograd.grad
        """
        grads = torch.autograd.grad(model(x).sum(), x)
        """,
        # stored on self and backpropagated by another method
        """
        class GAN:
            def forward_g(self):
                self.fake = self.netG(self.z)

            def backward_g(self):
                loss = self.crit(self.netD(self.fake), ones)
                loss.backward()
        """,
    ],
)
def test_feeds_backward(source):
    ph = phases_of("import torch\n" + textwrap.dedent(source))
    first = ph.forwards()[0]
    assert ph.feeds_backward(first.node, first.ctx.scope)


def test_feeds_backward_follows_returns_and_stops_at_reassignment():
    ph = phases_of(
        """
        import torch

        def step(model, x, y):
            out = model(x)
            return criterion(out, y)

        def evaluate(model, loader):
            loss = 0
            for x, y in loader:
                loss = criterion(model(x), y)
            return loss

        loss = step(model, x, y)
        loss.backward()
        """
    )
    in_step, in_evaluate = ph.forwards()
    assert ph.feeds_backward(in_step.node, in_step.ctx.scope)
    assert not ph.feeds_backward(in_evaluate.node, in_evaluate.ctx.scope)
    flow = phases_of(
        """
        import torch
        for x, y in train_loader:
            loss = criterion(model(x), y)
            loss.backward()
        loss = criterion(model(x_val), y_val)
        print(loss.item())
        """
    )
    train_forward, val_forward = flow.forwards()
    assert flow.feeds_backward(train_forward.node, train_forward.ctx.scope)
    assert not flow.feeds_backward(val_forward.node, val_forward.ctx.scope)


# --- grad protection ---------------------------------------------------------------------------------------------


def test_protected_regions():
    ph = phases_of(
        """
        import torch
        from contextlib import contextmanager

        @contextmanager
        def frozen():
            with torch.no_grad():
                yield

        @torch.inference_mode()
        def a(x):
            return model_a(x)

        def b(x):
            return model_b(x)

        def c(x, phase):
            with torch.set_grad_enabled(phase == "train"):
                model_c(x)
            with frozen():
                model_d(x)
            with torch.no_grad() if not training else contextlib.nullcontext():
                model_e(x)
            with torch.enable_grad():
                model_f(x)
            model_g(x)

        with torch.no_grad():
            b(x)
        """
    )
    protected = {e.ref: ph.protected(e) for e in ph.forwards()}
    assert protected == {
        "model_a": True, "model_b": True, "model_c": True, "model_d": True, "model_e": True, "model_f": False, "model_g": False,
    }


def test_helpers_count_only_when_every_caller_turns_grad_off():
    ph = phases_of(
        """
        import torch
        def helper(x):
            return net(x)
        with torch.no_grad():
            helper(a)
        helper(b)
        """
    )
    assert not ph.protected(forward(ph, "net"))


def test_set_grad_enabled_statement_turns_grad_off_for_the_script():
    ph = phases_of(
        """
        import torch
        torch.set_grad_enabled(False)
        def predict(x):
            return model(x)
        """
    )
    assert ph.protected(forward(ph, "model"))


def test_frozen_models():
    ph = phases_of(
        """
        import torch
        vgg.requires_grad_(False)
        for p in backbone.parameters():
            p.requires_grad = False
        """
    )
    assert ph.frozen("vgg", "<module>")
    assert ph.frozen("backbone.layer1", "<module>")
    assert not ph.frozen("head", "<module>")


# --- modes -----------------------------------------------------------------------------------------------------


def modes(source: str, ref: str, nth: int = 0):
    ph = phases_of(source)
    return ph.mode_at(forward(ph, ref, nth), ref)


def test_mode_in_the_function_and_through_helpers():
    assert modes("import torch\nmodel.eval()\nmodel(x)\n", "model") == {"eval"}
    assert modes("import torch\nmodel.eval()\nmodel.train()\nmodel(x)\n", "model") == {"train"}
    assert modes("import torch\nmodel.train(False)\nmodel(x)\n", "model") == {"eval"}
    assert modes("import torch\nmodel.train(is_training)\nmodel(x)\n", "model") == {"maybe"}
    assert modes("import torch\nif debug:\n    model.eval()\nmodel(x)\n", "model") == {"maybe"}
    assert modes("import torch\nother.eval()\nmodel = Net()\nmodel(x)\n", "model") == {"train"}
    helper = """
    import torch
    def prepare(m):
        m.eval()
    prepare(model)
    model(x)
    """
    assert modes(helper, "model") == {"eval"}


def test_mode_of_a_parameter_comes_from_the_callers():
    source = """
    import torch
    def evaluate(net, loader):
        return [net(x) for x in loader]
    model = Net()
    model.eval()
    evaluate(model, val_loader)
    model.train()
    evaluate(model, val_loader)
    """
    assert modes(source, "net") == {"eval", "train"}
    lonely = """
    import torch
    def evaluate(net, loader):
        return [net(x) for x in loader]
    """
    assert modes(lonely, "net") == {"none"}


def test_mode_around_loops_reaches_the_next_iteration():
    source = """
    import torch
    model.eval()
    for epoch in range(3):
        with torch.no_grad():
            model(x_val)
        model.train()
        run_epoch(model)
    """
    assert modes(source, "model") == {"eval", "train"}


def test_mode_inside_a_local_context_manager():
    source = """
    import torch
    from contextlib import contextmanager

    @contextmanager
    def evaluating(net):
        net.eval()
        yield
        net.train()

    with evaluating(model):
        model(x)
    model(y)
    """
    assert modes(source, "model", 0) == {"eval"}
    assert modes(source, "model", 1) == {"train"}


def test_initial_mode_from_how_the_model_was_made():
    assert modes("import torch\nfrom transformers import AutoModel\nm = AutoModel.from_pretrained('x')\nm(x)\n", "m") == {
        "eval_initial"
    }
    assert modes("import torch\nmodel = torch.jit.load('m.pt')\nmodel(x)\n", "model") == {"maybe"}
    assert modes("import torch\nmodel = Net().to(device)\nmodel(x)\n", "model") == {"train"}


def test_a_shared_train_val_expression_may_set_either_mode():
    source = """
    import torch
    for phase in ["train", "val"]:
        model.train() if phase == "train" else model.eval()
        model(x)
    """
    assert "maybe" in modes(source, "model")


# --- eval() never undone -----------------------------------------------------------------------------------------


def not_undone(source: str):
    ph = phases_of(source)
    return [(ph.m.code_of(item.event.node), item.ref) for item in ph.eval_not_undone()]


TRAINING = """
import torch
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def test_eval_in_the_training_loop_never_undone():
    assert not_undone(
        TRAINING
        + """
for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    model.eval()
"""
    ) == [("model.eval()", "model")]


def test_eval_through_a_helper_never_undone_and_undone_by_a_helper():
    helper = """
def validate(net):
    net.eval()
    return [net(x) for x in val_loader]

for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    validate(model)
"""
    assert not_undone(TRAINING + helper) == [("net.eval()", "model")]
    fixed = helper.replace("for epoch in range(10):\n", "for epoch in range(10):\n    model.train()\n")
    assert not_undone(TRAINING + fixed) == []


def test_eval_undone_by_context_managers_teachers_and_breaks():
    cm = """
from contextlib import contextmanager
@contextmanager
def evaluating(net):
    net.eval()
    yield
    net.train()
for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    with evaluating(model):
        model(x_val)
"""
    assert not_undone(TRAINING + cm) == []
    unknown = TRAINING + cm.replace("with evaluating(model):", "with ema.swapped(model):\n        model.eval()")
    assert not_undone(unknown) == []  # an unknown context manager may restore the mode
    teacher = """
for x, y in train_loader:
    teacher.eval()
    optimizer.zero_grad()
    loss = kd(model(x), teacher(x))
    loss.backward()
    optimizer.step()
"""
    assert not_undone(TRAINING + teacher) == []  # the optimizer does not hold the teacher
    last = """
for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    if epoch == 9:
        model.eval()
        break
"""
    assert not_undone(TRAINING + last) == []


# --- classes and names for fixes ----------------------------------------------------------------------------------


def test_module_like_classes():
    ph = phases_of(
        """
        import torch
        from transformers import BertPreTrainedModel
        class A(torch.nn.Module):
            pass
        class B:
            def forward(self, x):
                return x
        class C(BertPreTrainedModel):
            pass
        class D(SomeForConditionalGeneration):
            pass
        class E(Generic[T]):
            pass
        class F(A):
            pass
        """
    )
    assert {name: ph.module_like(name) for name in "ABCDEF"} == {
        "A": True, "B": True, "C": True, "D": True, "E": False, "F": True,
    }


def test_valid_at():
    ph = phases_of(
        """
        import torch
        net = Net()
        def evaluate(model, loader):
            local = Net()
            for x in loader:
                inner = Net()
                inner(x)
        """
    )
    assert ph.valid_at("model", "evaluate")
    assert ph.valid_at("net", "evaluate")
    assert not ph.valid_at("local", "evaluate")
    loop = next(l for l in ph.m.loops if l.scope == "evaluate")
    assert ph.valid_at("local", "evaluate", loop.node, loop)
    assert not ph.valid_at("inner", "evaluate", loop.node, loop)
