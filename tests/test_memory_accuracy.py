"""The memory estimator against real CPU runs: the FakeTensorMode prediction of the tensor-level peak
and of the model states, compared with an independent plain training loop on real tensors measured by
the same live-storage tracker (mllint.runtime.tracker)."""

import pytest

torch = pytest.importorskip("torch")

from mllint.memory.estimate import Estimator  # noqa: E402
from mllint.memory.replay import default_loss, make_optimizer  # noqa: E402
from mllint.memory.target import Settings, load_target  # noqa: E402
from mllint.runtime.tracker import LiveTensorTracker  # noqa: E402

MODELS = "tests/memory_models.py"


def measure_real(function, mode, optimizer="adamw", batch_size=None, steps=2):
    """A plain loop, written independently of the estimator: real tensors, the base tracker."""
    built = function(batch_size=batch_size) if batch_size is not None else function()
    model, inputs = built[0], built[1]
    loss_fn = built[2] if len(built) > 2 else default_loss
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    tracker = LiveTensorTracker()
    kept = [c.cell_contents for c in (getattr(loss_fn, "__closure__", None) or ()) if torch.is_tensor(c.cell_contents)]
    tracker.track(list(model.parameters()) + list(model.buffers()) + list(inputs) + kept)
    start = tracker.current
    if mode == "inference":
        model.eval()
        with tracker, torch.no_grad():
            out = model(*inputs)
            del out
        return {"peak": tracker.peak, "start": start}
    model.train()
    opt = make_optimizer(optimizer, [p for p in model.parameters() if p.requires_grad], None)
    grads = state = 0
    with tracker:
        for _ in range(steps):
            out = model(*inputs)
            loss = loss_fn(out)
            loss.backward()
            grads = sum({id(p.grad.untyped_storage()): p.grad.untyped_storage().nbytes()
                         for p in model.parameters() if p.grad is not None}.values())
            opt.step()
            state = sum({id(v.untyped_storage()): v.untyped_storage().nbytes()
                         for s in opt.state.values() for v in s.values() if torch.is_tensor(v)}.values())
            opt.zero_grad(set_to_none=True)
            del out, loss
    return {"peak": tracker.peak, "start": start, "grads": grads, "state": state}


CASES = [("mlp", None), ("cnn", None), ("gpt", None), ("lstm", None), ("encoder", None), ("vit", None), ("seq2seq", None)]


@pytest.mark.parametrize("mode", ["train", "inference"])
@pytest.mark.parametrize("name,batch", CASES)
def test_predicted_peak_matches_real_cpu_run(name, batch, mode):
    target = load_target(f"{MODELS}:{name}")
    est = Estimator(target, Settings(mode=mode)).at(batch)  # batch None: the function default
    assert est.method == "fake"
    real = measure_real(target.function, mode, batch_size=batch)
    assert est.run.peak > 0
    predicted = est.run.peak
    assert abs(predicted - real["peak"]) <= 0.02 * real["peak"], (predicted, real["peak"])
    assert predicted == real["peak"]  # in practice byte for byte on CPU
    if mode == "train":
        assert est.run.gradients_bytes == real["grads"]
        assert est.run.optimizer_bytes == real["state"]


@pytest.mark.parametrize("optimizer", ["adam", "adagrad", "rmsprop"])
def test_optimizers_match_real(optimizer):
    target = load_target(f"{MODELS}:mlp")
    est = Estimator(target, Settings(optimizer=optimizer)).at(None)
    real = measure_real(target.function, "train", optimizer=optimizer)
    assert (est.run.peak, est.run.optimizer_bytes) == (real["peak"], real["state"])


def test_model_states_hand_computed():
    # mlp: Linear(256,512), Linear(512,512), Linear(512,10), fp32 AdamW.
    n = 256 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10
    est = Estimator(load_target(f"{MODELS}:mlp"), Settings(optimizer="adamw")).at(None)
    r = est.run
    assert r.n_params == n
    assert r.parameters_bytes == 4 * n
    assert r.gradients_bytes == 4 * n
    assert r.optimizer_bytes == 2 * 4 * n + 4 * 6  # exp_avg + exp_avg_sq, and a 4-byte step per tensor
    assert r.optimizer_tensors == 18
    assert set(r.optimizer_state_names) == {"step", "exp_avg", "exp_avg_sq"}
    # SGD with momentum: one buffer per parameter, no step counter.
    est = Estimator(load_target(f"{MODELS}:mlp"), Settings(optimizer="sgd-momentum")).at(None)
    assert est.run.optimizer_bytes == 4 * n
    est = Estimator(load_target(f"{MODELS}:mlp"), Settings(optimizer="sgd")).at(None)
    assert est.run.optimizer_bytes == 0


def test_tied_weights_counted_once():
    est = Estimator(load_target(f"{MODELS}:gpt"), Settings()).at(None)
    from memory_models import GPT  # tests/ is on sys.path (rootdir-relative test modules)

    vocab, d = 1000, 64
    model = GPT()
    unique = {id(p): p.numel() for p in model.parameters()}
    assert est.run.n_params == sum(unique.values())
    naive = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    assert naive - est.run.n_params == vocab * d  # the head's weight is the embedding's
    assert est.run.parameters_bytes == 4 * est.run.n_params
    assert est.run.other_bytes == 4 * 32 * 8  # the int64 targets captured by loss_fn


def test_breakdown_sums_to_peak_and_activations_scale_with_batch():
    target = load_target(f"{MODELS}:cnn")
    small = Estimator(target, Settings()).at(4)
    large = Estimator(target, Settings()).at(8)
    for est in (small, large):
        assert sum(est.run.breakdown.values()) == est.run.peak
        assert est.run.activations_bytes > 0
        assert est.run.peak_phase in ("forward", "backward", "optimizer step", "end of step")
    assert large.run.parameters_bytes == small.run.parameters_bytes
    assert large.run.activations_bytes > 1.8 * small.run.activations_bytes


@pytest.mark.parametrize("dtype", ["bf16", "amp-bf16"])
def test_lower_precision_matches_real(dtype):
    target = load_target(f"{MODELS}:mlp")
    settings = Settings(dtype=dtype)
    est = Estimator(target, settings).at(None)
    from mllint.memory.replay import replay

    real = replay(target, settings, None, fake=False)
    assert est.run.peak == real.peak
    if dtype == "bf16":
        assert est.run.parameters_bytes == 2 * est.run.n_params
    else:
        assert est.run.parameters_bytes == 4 * est.run.n_params


def test_data_dependent_small_model_is_measured_at_its_own_batch():
    target = load_target(f"{MODELS}:masked")
    est = Estimator(target, Settings()).at(16)
    assert est.method == "real"  # fake tensors cannot run it; small enough to run for real at batch 16
    assert est.fallback_batches == (16,)
    assert "fake tensors could not run" in est.notes[0]
    real = measure_real(target.function, "train", batch_size=16)
    assert abs(est.run.peak - real["peak"]) <= 0.02 * real["peak"], (est.run.peak, real["peak"])


def test_data_dependent_large_model_is_extrapolated_from_small_real_runs(monkeypatch):
    from mllint.memory import estimate

    monkeypatch.setattr(estimate, "real_run_limit", lambda: 0)  # as if batch 16 were too large to run
    target = load_target(f"{MODELS}:masked")
    est = Estimator(target, Settings()).at(16)
    assert est.method == "extrapolated"
    assert est.fallback_batches == (2, 4)
    real = measure_real(target.function, "train", batch_size=16)
    assert abs(est.run.peak - real["peak"]) <= 0.02 * real["peak"], (est.run.peak, real["peak"])


# --- allocator level ------------------------------------------------------------------------------


def measure_allocator(function, mode, steps=2):
    """The CPU allocator's peak over a plain loop on real tensors: the highest point, during the
    steps, of the allocator's running total since before the model was built (torch.profiler
    memory events)."""
    from mllint.memory.scratch import AllocatorProbe

    with AllocatorProbe() as probe:
        built = function()
        model, inputs = built[0], built[1]
        loss_fn = built[2] if len(built) > 2 else default_loss
        inputs = inputs if isinstance(inputs, tuple) else (inputs,)
        if mode == "inference":
            model.eval()
            with probe.mark("steps"), torch.no_grad():
                out = model(*inputs)
                del out
        else:
            model.train()
            opt = make_optimizer("adamw", [p for p in model.parameters() if p.requires_grad], None)
            with probe.mark("steps"):
                for _ in range(steps):
                    out = model(*inputs)
                    loss = loss_fn(out)
                    loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                    del out, loss
    return probe.held_peak("steps")


@pytest.mark.parametrize("mode", ["train", "inference"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt", "lstm"])
def test_allocator_peak_matches_the_cpu_allocator(name, mode, tmp_path, monkeypatch):
    monkeypatch.setenv("MLLINT_MEMORY_CACHE", str(tmp_path))  # measured afresh, then from the cache
    target = load_target(f"{MODELS}:{name}")
    est = Estimator(target, Settings(mode=mode)).at(None)
    real = measure_allocator(target.function, mode)
    alloc = est.run.allocator
    assert alloc is not None and alloc.peak >= est.run.peak
    assert abs(alloc.peak - real) <= 0.05 * real, (alloc.peak, real, est.run.peak)
    assert alloc.measured > 0 and alloc.unmeasured == 0
    again = Estimator(target, Settings(mode=mode)).at(None).run.allocator
    assert again.measured == 0 and again.peak == alloc.peak  # every signature from the cache


def test_scratch_specs_keep_layouts():
    from mllint.memory.scratch import TensorSpec, call_of

    base = torch.zeros(4, 6)
    expanded = base[:, :1].expand(4, 5)  # stride 0 on dim 1: a kernel sees the same layout
    call = call_of(torch.ops.aten.mm.default, (expanded.t(), base[:, :5]), {})
    a = call.args[0]
    assert isinstance(a, TensorSpec) and a.shape == (5, 4) and a.stride == (0, 6) and a.storage == 24
    real = a.real()
    assert real.shape == (5, 4) and real.stride() == (0, 6)
    assert call.key == call_of(torch.ops.aten.mm.default, (expanded.t(), base[:, :5]), {}).key
    assert call.key != call_of(torch.ops.aten.mm.default, (expanded.t().contiguous(), base[:, :5]), {}).key


@pytest.mark.parametrize("mode", ["train", "inference"])
@pytest.mark.parametrize("name", ["cnn", "lstm", "encoder"])
def test_allocator_peak_of_calls_too_large_to_run_comes_from_smaller_batches(name, mode, tmp_path, monkeypatch):
    import functools

    from mllint.memory import scratch

    monkeypatch.setenv("MLLINT_MEMORY_CACHE", str(tmp_path))
    monkeypatch.setattr(scratch, "MAX_REAL_BYTES", 256 * 1024)  # most calls at batch 16 are "too large"
    target = load_target(f"{MODELS}:{name}")
    alloc = Estimator(target, Settings(mode=mode)).at(16).run.allocator
    real = measure_allocator(functools.partial(target.function, batch_size=16), mode)
    assert alloc.extrapolated > 0 and "smaller batches" in alloc.how
    assert abs(alloc.peak - real) <= 0.05 * real, (alloc.peak, real)
