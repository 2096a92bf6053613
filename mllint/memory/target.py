"""What `mllint memory` measures: the TARGET function, the inputs it is called with, and the
training/inference settings. Everything here reports bad input as ``ConfigError`` (one line).

TARGET is ``path/to/file.py:function`` or ``package.module:function``. The function returns

- an ``nn.Module`` (inputs then come from ``--input``),
- ``(model, example_inputs)``, or
- ``(model, example_inputs, loss_fn)`` where ``loss_fn(output)`` returns the scalar loss.

``example_inputs`` is a tensor (called as ``model(x)``), a tuple/list (``model(*inputs)``) or a
dict (``model(**inputs)``). A function with a ``batch_size`` parameter is called with the batch
size being estimated (``--batch-size``, the ``--gpu-memory`` search); otherwise the batch
dimension (dim 0) of the inputs is resized.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Tuple

from mllint.config import ConfigError

OPTIMIZERS = ("sgd", "sgd-momentum", "adam", "adamw", "adagrad", "rmsprop")
DTYPES = ("fp32", "bf16", "fp16", "amp-bf16", "amp-fp16")
MODES = ("train", "inference")

_DTYPE_NAMES = {
    "float32": "float32", "fp32": "float32", "float": "float32", "f32": "float32",
    "float16": "float16", "fp16": "float16", "half": "float16", "f16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float64": "float64", "fp64": "float64", "double": "float64", "f64": "float64",
    "int64": "int64", "long": "int64", "i64": "int64",
    "int32": "int32", "int": "int32", "i32": "int32",
    "int16": "int16", "short": "int16", "i16": "int16",
    "int8": "int8", "i8": "int8", "uint8": "uint8", "u8": "uint8",
    "bool": "bool",
}


@dataclass(frozen=True)
class InputSpec:
    """One ``--input SHAPE[:DTYPE[:HIGH]]``: a tensor of this shape; integer tensors hold values in
    ``[0, HIGH)`` (HIGH defaults to 1, i.e. zeros, always a valid index)."""

    shape: Tuple[int, ...]
    dtype: str = "float32"
    high: Optional[int] = None

    def with_batch(self, batch: int) -> "InputSpec":
        if not self.shape:
            return self
        return InputSpec((batch,) + self.shape[1:], self.dtype, self.high)

    def text(self) -> str:
        out = "x".join(str(d) for d in self.shape) + ":" + self.dtype
        return out + (f":{self.high}" if self.high is not None else "")


def parse_input(text: str, position: Optional[int] = None) -> InputSpec:
    """``--input SHAPE[:DTYPE[:HIGH]]``; `position` (1-based) names it in errors."""
    raw = text.strip()
    parts = raw.split(":")
    if not parts[0] or len(parts) > 3:
        raise ConfigError(f"--input `{text}`: expected SHAPE[:DTYPE[:HIGH]], e.g. 8x3x224x224 or 8x128:int64:50257")
    dims = re.split(r"[x×,]", parts[0].lower())
    try:
        shape = tuple(int(d) for d in dims)
    except ValueError:
        raise ConfigError(f"--input `{text}`: the shape must be integers joined by x, e.g. 8x3x224x224") from None
    if any(d < 0 for d in shape):
        raise ConfigError(f"--input `{text}`: dimensions must not be negative")
    if shape[0] == 0:
        where = f"--input {position} `{text}`" if position is not None else f"--input `{text}`"
        raise ConfigError(f"{where}: a zero-sized batch (dim 0 is 0): there is nothing to estimate; "
                          "give a batch of at least 1")
    dtype = "float32"
    if len(parts) >= 2 and parts[1]:
        dtype = _DTYPE_NAMES.get(parts[1].lower())
        if dtype is None:
            raise ConfigError(
                f"--input `{text}`: unknown dtype `{parts[1]}` (known: {', '.join(sorted(set(_DTYPE_NAMES.values())))})"
            )
    high = None
    if len(parts) == 3:
        if dtype in ("float32", "float16", "bfloat16", "float64", "bool"):
            raise ConfigError(f"--input `{text}`: HIGH applies to integer dtypes only")
        try:
            high = int(parts[2])
        except ValueError:
            raise ConfigError(f"--input `{text}`: HIGH must be an integer") from None
        if high < 1:
            raise ConfigError(f"--input `{text}`: HIGH must be at least 1")
    return InputSpec(shape, dtype, high)


def parse_size(text: str) -> int:
    """``80GiB``, ``24GB``, ``512MiB``, ``1.5TiB``, or a number of bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?i?b?)?\s*", text.lower())
    if not match:
        raise ConfigError(f"--gpu-memory `{text}`: expected a size such as 80GiB, 24GB or 16000MiB")
    number, unit = float(match.group(1)), (match.group(2) or "b")
    if unit == "b":
        scale = 1
    else:
        power = "kmgt".index(unit[0]) + 1
        scale = (1024 if "i" in unit else 1000) ** power
    size = int(number * scale)
    if size <= 0:
        raise ConfigError(f"--gpu-memory `{text}`: must be positive")
    return size


@dataclass
class Target:
    text: str
    function: Callable[..., Any]
    takes_batch_size: bool
    default_batch: Optional[int] = None  # the default of the function's batch_size parameter

    @property
    def name(self) -> str:
        return self.text


def load_target(text: str) -> Target:
    """Import TARGET's module (a file path or a dotted module) and return its function."""
    module_part, sep, func_name = text.rpartition(":")
    if not sep or not module_part or not func_name:
        raise ConfigError(f"TARGET `{text}`: expected path/to/file.py:function or package.module:function")
    if not func_name.isidentifier():
        raise ConfigError(f"TARGET `{text}`: `{func_name}` is not a function name")
    looks_like_path = module_part.endswith(".py") or os.sep in module_part or "/" in module_part
    try:
        if looks_like_path:
            path = os.path.abspath(module_part)
            if not os.path.isfile(path):
                raise ConfigError(f"TARGET `{text}`: no such file: {module_part}")
            name = "_mllint_memory_target_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ConfigError(f"TARGET `{text}`: cannot import {module_part}")
            module = importlib.util.module_from_spec(spec)
            directory = os.path.dirname(path)
            if directory not in sys.path:
                sys.path.insert(0, directory)  # so that the file's sibling imports work
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_part)
    except ConfigError:
        raise
    except ModuleNotFoundError as exc:
        raise ConfigError(f"TARGET `{text}`: cannot import {module_part}: {one_line(exc)}") from None
    except (Exception, SystemExit) as exc:  # the user's module raised while being imported
        raise ConfigError(f"TARGET `{text}`: importing {module_part} raised {describe_exception(exc)}") from None
    function = getattr(module, func_name, None)
    if function is None:
        raise ConfigError(f"TARGET `{text}`: {module_part} has no function `{func_name}`")
    if not callable(function):
        raise ConfigError(f"TARGET `{text}`: `{func_name}` is not callable")
    try:
        params = inspect.signature(function).parameters
    except (TypeError, ValueError):
        params = {}
    takes_batch = "batch_size" in params
    required = [
        p for p in params.values()
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name != "batch_size"
    ]
    if required:
        raise ConfigError(
            f"TARGET `{text}`: `{func_name}` needs arguments ({', '.join(p.name for p in required)}); "
            "it must be callable with none (or with batch_size only)"
        )
    default = params["batch_size"].default if takes_batch else None
    return Target(text, function, takes_batch, default if isinstance(default, int) and default > 0 else None)


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def describe_exception(exc: BaseException) -> str:
    message = one_line(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


@dataclass
class Built:
    """What TARGET returned, normalised."""

    model: Any
    inputs: Any = None  # tensor, tuple/list or dict; None when the function gave none
    loss_fn: Optional[Callable] = None


def normalise(result: Any, target: Target) -> Built:
    import torch

    if isinstance(result, torch.nn.Module):
        return Built(result)
    if isinstance(result, (tuple, list)) and 1 <= len(result) <= 3 and isinstance(result[0], torch.nn.Module):
        model = result[0]
        inputs = result[1] if len(result) > 1 else None
        loss_fn = result[2] if len(result) > 2 else None
        if loss_fn is not None and not callable(loss_fn):
            raise ConfigError(f"TARGET `{target.text}`: the third item it returned (the loss) is not callable")
        return Built(model, inputs, loss_fn)
    raise ConfigError(
        f"TARGET `{target.text}` returned {type(result).__name__}; expected an nn.Module, (model, inputs) "
        "or (model, inputs, loss_fn)"
    )


@dataclass
class Settings:
    mode: str = "train"
    optimizer: str = "adamw"
    dtype: str = "fp32"
    device: str = "cpu"  # the device modelled: cpu, or cuda (CPU replay + CUDA terms)
    batch_size: Optional[int] = None
    inputs: List[InputSpec] = field(default_factory=list)
    steps: int = 2

    @property
    def amp(self) -> bool:
        return self.dtype.startswith("amp-")

    def describe(self) -> str:
        parts = [self.mode]
        if self.mode == "train":
            parts.append(self.optimizer)
        parts.append(self.dtype)
        return ", ".join(parts)
