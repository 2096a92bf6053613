"""`mllint memory TARGET ...`: the click command. Imported only when the subcommand is used."""

from __future__ import annotations

import click

from mllint.config import ConfigError

from .target import DTYPES, MODES, OPTIMIZERS, Settings, load_target, parse_input, parse_size


@click.command(
    "memory",
    context_settings={"help_option_names": ["-h", "--help"]},
    help=(
        "Predict the peak memory of a training step or an inference pass of the model that TARGET "
        "builds, without allocating it: the model and inputs are built under FakeTensorMode and two "
        "training steps (or one inference pass) are replayed with a tracker of live storages.\n\n"
        "TARGET is path/to/file.py:function or package.module:function. The function returns an "
        "nn.Module, (model, example_inputs) or (model, example_inputs, loss_fn); loss_fn(output) "
        "returns the loss. The default loss is the mean of each floating-point output in fp32, summed. "
        "A function with a batch_size parameter is called with the batch size being estimated."
    ),
)
@click.argument("target")
@click.option("--input", "inputs", multiple=True, metavar="SHAPE[:DTYPE[:HIGH]]",
              help="An input tensor, e.g. 8x3x224x224 or 8x128:int64:50257 (token ids below 50257). "
                   "Repeat for several positional inputs. Overrides the inputs TARGET returns.")
@click.option("--mode", type=click.Choice(MODES), default="train", show_default=True)
@click.option("--optimizer", type=click.Choice(OPTIMIZERS), default="adamw", show_default=True)
@click.option("--dtype", type=click.Choice(DTYPES), default="fp32", show_default=True,
              help="bf16/fp16: the model is cast; amp-*: fp32 weights and autocast.")
@click.option("--device", type=click.Choice(("cpu", "cuda")), default=None,
              help="The device to model [default: cpu, or cuda with --gpu-memory]. cuda adds the CUDA "
                   "terms (allocator rounding, fragmentation, context, cuBLAS workspace) as a range.")
@click.option("--gpu-memory", metavar="SIZE", default=None,
              help="Find the largest batch size that fits in SIZE (e.g. 80GiB, 24GB).")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Estimate at this batch size (dim 0 of the inputs, or TARGET's batch_size parameter).")
@click.option("--measure", is_flag=True, help="Also run the step for real on the device and print predicted vs measured.")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def memory_command(target, inputs, mode, optimizer, dtype, device, gpu_memory, batch_size, measure, fmt):
    from mllint.runtime.device import DeviceError, require_torch

    budget = parse_size(gpu_memory) if gpu_memory is not None else None
    specs = [parse_input(text, i + 1) for i, text in enumerate(inputs)]
    try:
        require_torch("mllint memory")
    except DeviceError as exc:
        raise ConfigError(str(exc)) from None
    import logging

    # Fake tensors log the ops they cannot run before raising; the estimator handles those itself.
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)
    if budget is not None and device == "cpu":
        raise click.UsageError("--gpu-memory models a GPU: use it with --device cuda (or without --device)")
    device = device or ("cuda" if budget is not None else "cpu")
    settings = Settings(mode=mode, optimizer=optimizer, dtype=dtype, device=device, batch_size=batch_size,
                        inputs=specs)
    measure_device = None
    if measure:
        from mllint.runtime.device import select

        try:
            measure_device = select(device)
        except DeviceError as exc:
            raise ConfigError(f"--measure: {exc}") from None
    loaded = load_target(target)

    import torch

    from .estimate import Estimator, search_batch
    from .report import to_dict, to_text

    torch.set_num_threads(max(1, torch.get_num_threads()))
    import sys

    from mllint.output import Status

    # A status line on a terminal (stderr): estimates can take minutes. None with JSON sent to a pipe.
    status = Status("mllint memory", enabled=fmt == "text" or sys.stdout.isatty())
    click.get_current_context().call_on_close(status.close)  # erased before an error is printed
    estimator = Estimator(loaded, settings, progress=status.show)
    search = None
    if budget is not None:
        search = search_batch(estimator, budget)
        est = search.estimate if search.estimate is not None else estimator.at(1)
    else:
        est = estimator.at(batch_size)
    measured = None
    if measure_device is not None:
        status.show(f"--measure: running the {settings.mode} step for real at batch {est.run.batch} on "
                    f"{measure_device.name}")
        measured = run_measurement(loaded, settings, est, measure_device)
    status.close()
    if fmt == "json":
        import json

        data = to_dict(est, search, measured)
        data["target"] = target
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(to_text(est, target, search, measured))
    return 0


def run_measurement(target, settings: Settings, est, device) -> dict:
    """Run the same step for real at the estimate's batch size: on CPU the tensor peak from the
    tracker; on CUDA also the allocator's max_memory_allocated / reserved."""
    from .replay import StepError, replay

    foreach = True if (device.name == "cuda" and settings.mode == "train") else None
    try:
        run = replay(target, settings, est.run.batch, fake=False, foreach=foreach, device=device,
                     allocator=device.name == "cpu")
    except StepError as exc:
        raise ConfigError(f"--measure: TARGET `{target.text}` raised {exc}") from None
    out = {
        "device": device.name,
        "peak": run.peak,
        "phase": f"{run.peak_phase} (step {run.peak_step})" if settings.mode == "train" else run.peak_phase,
        "parameters": run.parameters_bytes,
        "gradients": run.gradients_bytes,
        "optimizer": run.optimizer_bytes,
        "activations": run.activations_bytes,
        "seconds": round(run.seconds, 3),
    }
    if run.allocator is not None:
        out["allocator_peak"] = run.allocator.peak
    if device.name == "cuda":
        stats = device.allocator_peak() or {}
        out["allocated"] = stats.get("allocated", 0)
        out["reserved"] = stats.get("reserved", 0)
        out["tensor_peak"] = run.peak
    return out
