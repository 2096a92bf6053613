"""Is this evaluation code? (mllint/semantics/phases/evaluation.py, words.py, base.py)"""

from __future__ import annotations

import pytest
from phases_helpers import evidence_kind, phases_of

from mllint.semantics.phases import eval_name_strength, is_eval_data_ref, name_tokens, related


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
            def forward(self, x):
                return self.score(x)

            def score(self, x):
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




def test_a_models_own_inference_method_is_evaluation_but_forward_and_what_it_calls_are_not():
    ph = phases_of(
        """
        import torch

        class Net(torch.nn.Module):
            def forward(self, x):
                return self.predict_logits(x)

            def predict_logits(self, x):
                return self.encoder(x)

            def predict(self, x):
                return self(x).argmax(-1)

            def infer_scores(self, x):
                return torch.cat([self.classifier(chunk) for chunk in x.split(64)])

        class Filter:
            def predict(self, state):
                return self.dynamic_model(state)  # a building block: log_prob() elsewhere trains through it
        """
    )
    assert evidence_kind(ph, "self.encoder") is None  # reached from forward: model internals
    assert evidence_kind(ph, "self") == "function"
    assert evidence_kind(ph, "self.classifier") == "function"
    assert evidence_kind(ph, "self.dynamic_model") is None
    fns = ph.m.functions
    assert ph.gradient_free_result(fns["Net.predict"])  # argmax: nothing to train on
    assert not ph.gradient_free_result(fns["Net.infer_scores"])  # a differentiable result


def test_lightning_hook_names_need_a_lightning_class():
    ph = phases_of(
        """
        import torch
        from somewhere import ProjectBase

        class Plain:
            def validation_step(self, batch):
                return self.model(batch)

        class Derived(ProjectBase):
            def validation_step(self, batch):
                return self.net(batch)
        """
    )
    assert evidence_kind(ph, "self.model") == "function"
    assert evidence_kind(ph, "self.net") is None  # an unseen base may be a LightningModule


def test_a_shape_check_before_any_training_is_not_evaluation_but_after_training_or_loading_it_is():
    ph = phases_of(
        """
        import torch
        from torch import nn

        probe = nn.Linear(4, 2)
        images, labels = next(iter(testloader))
        print(probe(images).shape)

        model = nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for images, labels in trainloader:
            optimizer.zero_grad()
            model(images).sum().backward()
            optimizer.step()
        images, labels = next(iter(testloader))
        print(model(images).shape)

        loaded = nn.Linear(4, 2)
        loaded.load_state_dict(torch.load("w.pt"))
        print(loaded(test_x).shape)
        """
    )
    assert evidence_kind(ph, "probe") is None  # a fresh model, nothing trained yet
    assert evidence_kind(ph, "model", 1) == "data"  # trained above, then evaluated
    assert evidence_kind(ph, "loaded") == "data"  # weights loaded


def test_a_batch_fetched_by_naming_an_evaluation_split():
    source = """
    import torch
    def get_batch(split):
        {body}
        return data[:8], data[1:9]
    for it in range(100):
        if it % 10 == 0:
            xv, yv = get_batch("{split}")
            model(xv)
        xb, yb = get_batch("train")
        loss = model(xb).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    """
    picks = "data = train_data if split == 'train' else val_data"
    assert evidence_kind(phases_of(source.format(body=picks, split="val")), "model") == "data"
    assert evidence_kind(phases_of(source.format(body="data = np.load(f'{split}.npy')", split="test")), "model") == "data"
    assert evidence_kind(phases_of(source.format(body="data = self.splits[split]", split="val")), "model") == "data"
    # the split is ignored (training data), or not an evaluation split
    assert evidence_kind(phases_of(source.format(body="data = train_data", split="val")), "model") is None
    assert evidence_kind(phases_of(source.format(body=picks, split="train")), "model") is None


def test_shared_function_flag_and_its_value_at_a_call():
    ph = phases_of("""
    import torch
    def _epoch(loader, train=False):
        for x, y in loader:
            loss = model(x).mean()
            if train:
                loss.backward()
    _epoch(train_loader, train=True)
    _epoch(val_loader)
    _epoch(test_loader, 0)
    _epoch(test_loader, "test")  # a non-empty string: ``if train:`` holds, the backward pass runs
    """)
    assert ph.training_flag("_epoch") == "train"
    sites = ph.call_sites("_epoch")
    assert [ph.flag_off_at("_epoch", s, "train") for s in sites] == [False, True, True, False]
    ph = phases_of("""
    import torch
    def run(model, loader, optimizer=None, phase="train"):
        for x, y in loader:
            loss = model(x).mean()
            if optimizer is not None and phase == "train":
                loss.backward()
                optimizer.step()
    run(model, train_loader, opt)
    run(model, val_loader)
    run(model, val_loader, opt, phase="val")
    run(model, val_loader, opt, phase=current)
    """)
    assert ph.training_flag("run") == "optimizer"
    sites = ph.call_sites("run")
    assert [ph.flag_off_at("run", s, "optimizer") for s in sites] == [False, True, False, False]


def test_generate_calls_on_known_models_only():
    ph = phases_of("""
    import torch
    from transformers import AutoModelForCausalLM
    from vllm import LLM
    lm = AutoModelForCausalLM.from_pretrained("gpt2")
    llm = LLM(model="gpt2")
    def evaluate(model, loader):
        return [model.generate(**b) for b in loader]
    def decode(net, loader):
        return [net.generate(**b) for b in loader]
    lm.generate(ids)
    llm.generate(prompts)
    model.generate(ids)
    evaluate(lm, val_loader)
    decode(get_model(), val_loader)
    """)
    assert sorted(ph.m.code_of(e.node.func) for e in ph.generate_calls()) == ["lm.generate", "model.generate"]


def test_a_loop_over_batches_made_of_evaluation_data():
    source = """
    import torch
    from torch.utils.data import DataLoader
    def get_batches(arr, n):
        {body}
    for step in range(100):
        loss = model(next(train_iter)).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            for xb in {source}:
                print(model(xb).mean().item())
    """
    yields = "for i in range(0, len(arr), n):\n                yield arr[i:i + n]"
    assert evidence_kind(phases_of(source.format(body=yields, source="get_batches(val_data, 8)")), "model", 1) == "loop"
    assert evidence_kind(phases_of(source.format(body=yields, source="DataLoader(val_set, batch_size=8)")), "model", 1) == "loop"
    # the function ignores what it is given, or training data is handed over too
    ignores = "for i in range(0, len(train_x), n):\n                yield train_x[i:i + n]"
    assert evidence_kind(phases_of(source.format(body=ignores, source="get_batches(val_data, 8)")), "model", 1) is None
    assert evidence_kind(phases_of(source.format(body=yields, source="get_batches(val_x, train_x)")), "model", 1) is None


# --- a batch drawn from evaluation data rebinds the training loop's variable ----------------------

_REBOUND = """
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = torch.utils.data.DataLoader(range(8))
test_loader = torch.utils.data.DataLoader(range(8))

for i, data in enumerate(train_loader):
    x, y = data
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
    if i % 10 == 0:
        {draw}
        x, y = data
        x = x.float()
        model(x)
    model(data)
"""


@pytest.mark.parametrize("draw", [
    "_, data = next(enumerate(test_loader))",
    "data = next(iter(test_loader))",
])
def test_batch_drawn_from_test_loader_rebinds_the_loop_variable(draw):
    from phases_helpers import forward

    ph = phases_of(_REBOUND.format(draw=draw))
    evaluated = ph.data_evidence(forward(ph, "model", 1))
    assert evaluated is not None and evaluated.kind == "data"
    # after the branch the training batch may be what ``data`` holds: no evidence
    assert ph.data_evidence(forward(ph, "model", 2)) is None


def test_batch_drawn_before_the_loop_is_not_what_the_loop_variable_holds():
    from phases_helpers import forward

    ph = phases_of("""
        import torch
        import torch.nn as nn

        model = nn.Linear(4, 2)
        train_loader = torch.utils.data.DataLoader(range(8))
        val_loader = torch.utils.data.DataLoader(range(8))
        x, y = next(iter(val_loader))
        print(x.shape)
        for x, y in train_loader:
            print(model(x).shape)
    """)
    assert ph.data_evidence(forward(ph, "model")) is None


# --- a loop over a variable that holds a wrapper of the evaluation loader --------------------------

_WRAPPED = """
import torch
from tqdm import tqdm

def run(model, train_loader, valid_loader, flag):
    {bind}
    for i, batch in enumerate(bar):
        print(model(batch).sum())
"""


@pytest.mark.parametrize("bind,expected", [
    ("bar = tqdm(iter(valid_loader), total=len(valid_loader))", "valid_loader"),
    ("bar = tqdm(train_loader)\n    bar = tqdm(valid_loader)", "valid_loader"),  # the last binding
    ("bar = tqdm(valid_loader)\n    bar = tqdm(train_loader)", None),
    ("bar = tqdm(train_loader)\n    if flag:\n        bar = tqdm(valid_loader)", None),  # either
    ("bar = iter(train_loader)", None),
])
def test_loop_over_a_variable_bound_to_a_wrapped_loader(bind, expected):
    from phases_helpers import forward

    ph = phases_of(_WRAPPED.format(bind=bind))
    assert ph.iterated_data(forward(ph, "model").ctx.loop) == expected
