"""Text and JSON reports for `mllint memory`."""

from __future__ import annotations

import json
from functools import partial
from typing import Dict, List, Optional

from mllint.runtime.units import format_bytes

from .estimate import BatchSearch, Estimate

LABELS = {
    "parameters": "parameters",
    "buffers": "buffers",
    "inputs": "inputs",
    "other": "other (kept by TARGET)",
    "gradients": "gradients",
    "optimizer": "optimizer state",
    "activations": "saved activations",
    "transient": "transient",
}

OPTIMIZER_NAMES = {"sgd": "SGD", "sgd-momentum": "SGD (momentum)", "adam": "Adam", "adamw": "AdamW",
                   "adagrad": "Adagrad", "rmsprop": "RMSprop"}


human = partial(format_bytes, digits=2)  # 1,536 -> "1.50 KiB"


def count(n: int) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f}{unit}"
    return str(n)


def not_modelled(est: Estimate) -> List[str]:
    s = est.settings
    items = []
    if s.device == "cuda":
        items += [
            "CUDA kernels other than attention and dropout: the replay runs CPU kernels on fake CPU tensors (a "
            "CPU-only torch cannot make fake CUDA tensors); cuDNN convolutions and cuDNN RNNs may save different "
            "tensors than their CPU counterparts, and the scratch inside fused attention kernels (e.g. flash "
            "backward's fp32 dq accumulator) is not a tensor the replay sees",
            "cuDNN workspaces (convolution algorithms, cudnn.benchmark), NCCL buffers, pinned host memory",
        ]
        if est.method != "fake":
            items.append("attention and dropout as CUDA runs them: fake tensors could not run the model, so the "
                         "real CPU runs used CPU kernels (with dropout, attention keeps L x L matrices)")
        if s.mode == "inference":
            items.append("the fused inference fast paths of nn.MultiheadAttention and nn.TransformerEncoderLayer "
                         "(replayed with their CPU kernels, which keep the L x L attention weights transiently)")
        if s.amp:
            items.append("CUDA's autocast op lists (the CPU lists were used, except for scaled_dot_product_attention; "
                         "they differ for a few ops)")
    else:
        items.append("memory outside tensors: the torch runtime (~300 MiB RSS after import), oneDNN caches and "
                     "autograd's first-step allocations (~15-30 MiB), malloc fragmentation")
    if s.dtype == "amp-fp16" and s.mode == "train":
        items.append("GradScaler (loss scaling and the inf checks: a few scalars; gradients are unscaled in place)")
    if s.mode == "train":
        items.append("the data loader and the next batch (inputs are the ones given, reused for both steps)")
    return items


def to_json(est: Estimate, search: Optional[BatchSearch] = None, measured: Optional[dict] = None) -> str:
    return json.dumps(to_dict(est, search, measured), indent=2)


def to_dict(est: Estimate, search: Optional[BatchSearch] = None, measured: Optional[dict] = None) -> dict:
    r, s = est.run, est.settings
    data = {
        "target": None,
        "mode": s.mode,
        "optimizer": s.optimizer if s.mode == "train" else None,
        "dtype": s.dtype,
        "device": s.device,
        "batch_size": r.batch,
        "method": est.method,
        "peak_bytes": r.peak,
        "allocator_peak_bytes": r.allocator.peak if r.allocator is not None else None,
        "phase": r.peak_phase,
        "peak_step": r.peak_step,
        "parameters_bytes": r.parameters_bytes,
        "gradients_bytes": r.gradients_bytes,
        "optimizer_bytes": r.optimizer_bytes,
        "activations_bytes": r.activations_bytes,
        "buffers_bytes": r.buffers_bytes,
        "inputs_bytes": r.inputs_bytes,
        "other_bytes": r.other_bytes,
        "parameters": r.n_params,
        "trainable_parameters": r.trainable_params,
        "parameter_tensors": r.parameter_tensors,
        "optimizer_tensors": r.optimizer_tensors,
        "optimizer_state": r.optimizer_state_names,
        "peak_breakdown": dict(r.breakdown),
        "phases": [{"phase": p.phase, "step": p.step, "peak_bytes": p.peak, "breakdown": p.breakdown}
                   for p in r.phases],
        "top_modules": [{"module": m, "bytes": b} for m, b in top_modules(r.modules)],
        "loss": r.loss,
        "range": {"low": r.peak, "high": r.peak, "what": "tensor-level peak (CPU)"},
        "notes": list(est.notes),
        "not_modelled": not_modelled(est),
        "fallback": ({"reason": est.fallback_reason, "batches": list(est.fallback_batches)}
                     if est.fallback_reason else None),
        "seconds": round(est.seconds, 3),
    }
    if est.cuda is not None:
        c = est.cuda
        data["range"] = {"low": c.total[0], "high": c.total[1],
                         "what": "GPU memory of the process: tensor peak + the CUDA terms"}
        data["cuda"] = {
            "allocated_bytes": list(c.allocated),
            "reserved_bytes": list(c.reserved),
            "total_bytes": list(c.total),
            "terms": [{"name": t.name, "low": t.low, "high": t.high, "counted_in": t.counted_in, "note": t.note}
                      for t in c.terms],
        }
    data["allocator"] = allocator_dict(est)
    if r.cuda_kernels is not None:
        data["cuda_kernels"] = r.cuda_kernels
    if search is not None:
        data["gpu_memory"] = {
            "budget_bytes": search.budget,
            "largest_batch_size": search.largest,
            "capped": search.capped,
            "probes": [{"batch_size": b, "bytes": n, "fits": ok} for b, n, ok in search.probes],
        }
    if measured is not None:
        data["measured"] = measured
    return data


def allocator_dict(est: Estimate) -> dict:
    """The allocator level in JSON: the peak, where, the ops whose scratch counts, how it was found."""
    a = est.run.allocator
    if a is None:
        return {"peak_bytes": None, "how": allocator_missing(est)}
    return {
        "peak_bytes": a.peak,
        "over_tensor_peak_bytes": a.peak - est.run.peak,
        "phase": a.phase,
        "op": a.op,
        "scratch_ops": [{"op": op, "largest_bytes": b, "calls": c} for op, b, c in a.scratch_ops[:10]],
        "signatures": a.signatures,
        "measured_now": a.measured,
        "extrapolated": a.extrapolated,
        "unmeasured": a.unmeasured,
        "how": a.how,
    }


def allocator_missing(est: Estimate) -> str:
    if est.settings.device == "cuda":
        return ("not measured: in-op scratch is measured by running each op on the target device, and this "
                "machine has no GPU; the CUDA range below covers the workspaces as terms")
    if est.method != "fake":
        return "not measured: the estimate comes from real runs (fake tensors could not run the model)"
    return "not computed"


def top_modules(modules: Dict[str, int], n: int = 8):
    return sorted(((m, b) for m, b in modules.items() if b > 0), key=lambda item: -item[1])[:n]


def _table(rows: List[List[str]], right: set, indent: str = "  ") -> List[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def to_text(est: Estimate, target: str, search: Optional[BatchSearch] = None, measured: Optional[dict] = None) -> str:
    r, s = est.run, est.settings
    lines = []
    what = [s.mode]
    if s.mode == "train":
        what.append(OPTIMIZER_NAMES.get(s.optimizer, s.optimizer))
    what.append(s.dtype)
    if r.batch is not None:
        what.append(f"batch {r.batch}")
    what.append("device " + s.device)
    lines.append(f"mllint memory: {target} ({', '.join(what)})")
    method = {
        "fake": (f"FakeTensorMode replay of {s.steps} training steps" if s.mode == "train"
                 else "FakeTensorMode replay of one inference pass (eval mode, no_grad)")
        + " with a tracker of live storages; no real memory of the model's size was allocated",
        "real": "real run with a tracker of live storages (fake tensors could not run the model)",
        "extrapolated": "linear extrapolation in batch from small real runs (fake tensors could not run the model)",
    }[est.method]
    lines.append(f"method: {method} ({est.seconds:.1f} s)")
    lines.append("")
    phase = f"{r.peak_phase} (step {r.peak_step})" if s.mode == "train" else r.peak_phase
    lines.append(f"Peak (tensor level): {human(r.peak)} during {phase}")
    a = r.allocator
    if a is None:
        lines.append(f"Peak (allocator):    {allocator_missing(est)}")
    else:
        over = a.peak - r.peak
        where = f" during {a.phase}, inside {_op_name(a.op)}" if a.op else ""
        share = (f" (+{human(over)}, +{100 * over / r.peak:.1f}%: allocated inside ops)" if over and r.peak
                 else " (the same: no op's scratch rises above it)")
        lines.append(f"Peak (allocator):    {human(a.peak)}{where}{share}")
    if est.cuda is not None:
        c = est.cuda
        lines.append(f"On CUDA:             {human(c.total[0])} - {human(c.total[1])} "
                     f"(GPU memory of the process; terms below)")
    lines.append("")

    lines.append("Model states")
    rows = [["parameters", f"{count(r.n_params)} params in {r.parameter_tensors} storages", human(r.parameters_bytes)]]
    if s.mode == "train":
        rows.append(["gradients", f"{count(r.trainable_params)} trainable", human(r.gradients_bytes)])
        state = ", ".join(r.optimizer_state_names) or "none"
        rows.append(["optimizer state", f"{OPTIMIZER_NAMES.get(s.optimizer, s.optimizer)}: {state}",
                     human(r.optimizer_bytes)])
    rows.append(["buffers", "", human(r.buffers_bytes)])
    rows.append(["inputs", "", human(r.inputs_bytes)])
    if r.other_bytes:
        rows.append(["other", "kept alive by TARGET", human(r.other_bytes)])
    lines += _table(rows, {2})
    if s.mode == "train":
        lines.append(f"  (tied or shared weights counted once; saved activations at the end of forward: "
                     f"{human(r.activations_bytes)})")
    lines.append("")

    lines.append(f"Breakdown at the peak ({phase})")
    rows = []
    for cat, nbytes in r.breakdown.items():
        if nbytes or cat in ("parameters",):
            share = f"{100 * nbytes / r.peak:.1f}%" if r.peak else "-"
            rows.append([LABELS.get(cat, cat), human(nbytes), share])
    rows.append(["total", human(r.peak), "100.0%"])
    lines += _table(rows, {1, 2})
    lines.append("")

    if s.mode == "train" and r.phases:
        lines.append("Peak by phase")
        steps = sorted({p.step for p in r.phases})
        names = []
        for p in r.phases:
            if p.phase not in names:
                names.append(p.phase)
        by = {(p.phase, p.step): p.peak for p in r.phases}
        rows = [["phase"] + [f"step {n}" for n in steps]]
        for name in names:
            rows.append([name] + [human(by[(name, n)]) if (name, n) in by else "-" for n in steps])
        lines += _table(rows, set(range(1, len(steps) + 1)))
        lines.append("")

    tops = top_modules(r.modules)
    if tops:
        lines.append("Top modules by saved activations (end of forward)" if s.mode == "train"
                     else "Top modules by activation memory live at the peak")
        lines += _table([[m, human(b)] for m, b in tops], {1})
        lines.append("")

    if est.cuda is not None:
        c = est.cuda
        lines.append("CUDA range (on top of the tensor-level peak)")
        rows = [["tensor peak (CPU replay)", human(r.peak), human(r.peak), ""]]
        for t in c.terms:
            rows.append([t.name, "+" + human(t.low), "+" + human(t.high), t.note])
        rows.append(["max_memory_allocated", human(c.allocated[0]), human(c.allocated[1]), ""])
        rows.append(["max_memory_reserved", human(c.reserved[0]), human(c.reserved[1]), ""])
        rows.append(["GPU memory of the process", human(c.total[0]), human(c.total[1]), "as nvidia-smi shows it"])
        lines += _table([["term", "low", "high", ""]] + rows, {1, 2})
        if s.mode == "train":
            lines.append("  (optimizer replayed with foreach=True, the CUDA default)")
        lines.append("")

    shown = [(op, b, c) for op, b, c in (a.scratch_ops if a is not None else []) if b >= 1024][:6]
    if shown:  # (a few bytes: a Python scalar wrapped in a tensor inside an op)
        lines.append("Ops that allocate scratch inside themselves (largest, beyond their outputs)")
        lines += _table([[_op_name(op), human(b), f"{c} call{'s' if c != 1 else ''}"] for op, b, c in shown], {1, 2})
        done = f"{a.measured} measured now, the rest cached" if a.measured else "all from the cache"
        lines.append(f"  ({a.signatures} distinct op calls; {done}"
                     + (f"; {a.extrapolated} extrapolated from smaller batches" if a.extrapolated else "")
                     + (f"; {a.unmeasured} not measurable (counted without scratch)" if a.unmeasured else "") + ")")
        lines.append("")

    if r.cuda_kernels is not None and (r.cuda_kernels["attention"] or r.cuda_kernels["dropout"]["calls"]):
        lines += _kernel_lines(r.cuda_kernels)
        lines.append("")

    if search is not None:
        lines.append(f"Largest batch size that fits {human(search.budget)}: "
                     + (f"{search.largest}" + (" (search capped)" if search.capped else "")
                        if search.largest else "none (batch 1 does not fit)"))
        rows = [["batch", "needs", ""]]
        for b, n, ok in sorted(search.probes):
            rows.append([str(b), human(n), "fits" if ok else "does not fit"])
        lines += _table(rows, {0, 1})
        basis = "the high end of the CUDA range" if est.cuda is not None else "the tensor-level peak"
        lines.append(f"  (each probe is a replay at that batch size; compared: {basis})")
        lines.append("")

    if measured is not None:
        lines.append("Predicted vs measured")
        lines += _measured_lines(est, measured)
        lines.append("")

    for note in est.notes:
        lines.append("note: " + note)
    if r.loss == "default" and s.mode == "train":
        lines.append("loss: default, the mean of each floating-point output in fp32, summed "
                     "(return a loss_fn as the third item to use your own)")
    lines.append("not modelled: " + "; ".join(not_modelled(est)))
    return "\n".join(lines)


def _kernel_lines(kernels: dict) -> List[str]:
    """The attention backend assumed for each scaled_dot_product_attention call (grouped when the
    calls differ only by module), why the backends before it were not taken, and dropout."""
    lines = [f"CUDA kernels replayed (assumed: {kernels['assumed']})"]
    groups: Dict[tuple, List[dict]] = {}
    for item in kernels["attention"]:
        key = (item["backend"], tuple(item["query_shape"]), item["dtype"], item["dropout_p"], item["is_causal"],
               item["attn_mask"], tuple(item["skipped"]))
        groups.setdefault(key, []).append(item)
    rows = [["attention in", "backend", "query shape", "dtype", "dropout", "calls (all steps)"]]
    saves: Dict[str, str] = {}
    why: Dict[str, List[str]] = {}
    for (backend, shape, dtype, dropout_p, causal, mask, skipped), items in groups.items():
        modules = [i["module"] for i in items]
        where = modules[0] if len(modules) == 1 else f"{modules[0]} ... {modules[-1]} ({len(modules)} modules)"
        extra = (", causal" if causal else "") + (f", {mask} mask" if mask else "")
        rows.append([where, items[0]["kernel"], "x".join(str(n) for n in shape), dtype + extra, f"{dropout_p:g}",
                     str(sum(i["calls"] for i in items))])
        saves[items[0]["kernel"]] = items[0]["saved_for_backward"]
        for reason in skipped:
            why.setdefault(reason, []).append(where)
    if len(rows) > 1:
        lines += _table(rows, {5})
        lines += [f"  {kernel} saves {saved}" for kernel, saved in saves.items()]
        lines += [f"  not taken: {reason} ({', '.join(where)})" for reason, where in why.items()]
    if kernels["dropout"]["calls"]:
        lines.append(f"  dropout: {kernels['dropout']['kernel']}, {kernels['dropout']['calls']} calls")
    return lines


def _measured_lines(est: Estimate, measured: dict) -> List[str]:
    rows = [["", "predicted", "measured", "error"]]
    if measured.get("device") == "cuda":
        c = est.cuda
        for key, label, pred in (("allocated", "max_memory_allocated", c.allocated if c else None),
                                 ("reserved", "max_memory_reserved", c.reserved if c else None)):
            if pred is None:
                continue
            m = measured[key]
            inside = pred[0] <= m <= pred[1]
            rows.append([label, f"{human(pred[0])} - {human(pred[1])}", human(m), "inside" if inside else "outside"])
        rows.append(["tensor peak (live storages)", human(est.run.peak), human(measured.get("tensor_peak", 0)),
                     _err(est.run.peak, measured.get("tensor_peak", 0))])
    else:
        if "allocator_peak" in measured and est.run.allocator is not None:
            pred = est.run.allocator.peak
            rows.append(["allocator peak", human(pred), human(measured["allocator_peak"]), _err(pred, measured["allocator_peak"])])
        for key, label in (("peak", "tensor peak"), ("parameters", "parameters"), ("gradients", "gradients"),
                           ("optimizer", "optimizer state"), ("activations", "activations")):
            pred = {"peak": est.run.peak, "parameters": est.run.parameters_bytes,
                    "gradients": est.run.gradients_bytes, "optimizer": est.run.optimizer_bytes,
                    "activations": est.run.activations_bytes}[key]
            if key in measured:
                rows.append([label, human(pred), human(measured[key]), _err(pred, measured[key])])
    out = _table(rows, {1, 2, 3})
    if measured.get("phase"):
        out.append(f"  measured peak during {measured['phase']}; real run took {measured.get('seconds', 0):.1f} s")
    return out


def _op_name(op: Optional[str]) -> str:
    """``aten.convolution_backward.default`` -> ``convolution_backward``."""
    if not op:
        return ""
    parts = op.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] == "aten" else op


def _err(pred: int, real: int) -> str:
    if not real:
        return "exact" if pred == real else "-"
    value = 100 * (pred - real) / real
    return "exact" if pred == real else f"{value:+.2f}%"
