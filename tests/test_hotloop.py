"""The hot-loop facts ML007 and ML008 query (mllint/semantics/hotloop.py)."""

from __future__ import annotations

import textwrap

import libcst as cst

from mllint.semantics import build_model
from mllint.semantics import hotloop


def _model(src: str):
    src = textwrap.dedent(src)
    return build_model(cst.parse_module(src), src, "t.py")


def test_training_loops_are_the_loops_that_run_backward_themselves():
    m = _model("""
        for epoch in range(10):
            for x, y in loader:
                loss = crit(model(x), y)
                loss.backward()
                opt.step()
            print(epoch)
    """)
    loops = hotloop.training_loops(m)
    assert [l.iter_ref for l in loops] == ["loader"]


def test_tensor_names_follow_losses_and_model_outputs_but_not_host_reads():
    m = _model("""
        def train(model, loader, opt, criterion):
            for x, y in loader:
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                value = loss.item()
                probs = out.softmax(-1)
    """)
    known = hotloop.tensor_names(m, "train")
    assert {"out", "loss", "probs"} <= known
    assert "value" not in known and "y" not in known


def test_targets_device():
    assert hotloop.targets_device(_model("x = x.to(device)\n"))
    assert hotloop.targets_device(_model("x = x.cuda()\n"))
    assert not hotloop.targets_device(_model("x = x.to(torch.float16)\n"))


def test_loops_over_follows_wrappers_calls_and_module_globals():
    m = _model("""
        def fit(dl):
            for b in dl:
                pass

        def train():
            for b in train_loader:
                pass

        train_loader = DataLoader(ds)
        bar = tqdm(enumerate(train_loader))
        for i, b in bar:
            pass
        fit(train_loader)
    """)
    scopes = sorted(l.scope for l in hotloop.loops_over(m, "train_loader", "<module>"))
    assert scopes == ["<module>", "fit", "train"]


def test_cuda_derived_devices():
    m = _model("""
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        cpu = torch.device("cpu")
    """)
    assert hotloop.cuda_derived(m, cst.parse_expression("device"), "<module>")
    assert hotloop.cuda_derived(m, cst.parse_expression("'cuda:0'"), "<module>")
    assert not hotloop.cuda_derived(m, cst.parse_expression("cpu"), "<module>")
