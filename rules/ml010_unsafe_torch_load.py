"""``torch.load`` without ``weights_only=True`` unpickles arbitrary code from the file.

Why it matters
    A PyTorch checkpoint is a zip of pickles. With ``weights_only=False`` ``torch.load``
    runs the full pickle machinery, and a pickle can call any importable function while
    it is being read (``os.system``, ``exec``...): loading a checkpoint downloaded from a
    model hub, a shared drive or a bug report runs whatever its author put in it, with
    your privileges. ``weights_only=True`` restricts the unpickler to tensors, primitive
    types and containers of them, which is all a ``state_dict`` needs.
    Before PyTorch 2.6 the default was ``weights_only=False``, so ``torch.load(path)``
    (also ``torch.load(path, map_location="cpu")``) is unsafe on every older version,
    which much code still runs on. fixtures/ml010: a 1 KB checkpoint whose pickle writes
    a marker file; ``weights_only=False`` runs it, ``weights_only=True`` refuses to load
    it with an ``UnpicklingError`` and the marker is never written.

When the code is fine
    - ``weights_only=True`` is passed;
    - ``weights_only=`` is a variable or expression (the caller decides; not reported), or
      the arguments are passed through ``**kwargs``/``*args`` (unknown: not reported);
    - the argument is missing but the project runs PyTorch 2.6 or newer only: set
      ``torch-version = "2.6"`` (or newer) in ``[tool.mllint]``, or declare the requirement
      (``torch>=2.6`` in ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or
      ``requirements*.txt`` of the project root: the lowest floor found is used, see
      ``mllint --show-settings``), and the missing-argument case is no longer reported (unless ``pickle_module=`` is passed, which turns the
      2.6 default back to ``weights_only=False``). An explicit ``weights_only=False``
      is always reported, whatever the version;
    - the load sits in ``with torch.serialization.safe_globals([...])`` or the file calls
      ``torch.serialization.add_safe_globals([...])``: allow-lists mean something only to the
      weights-only unpickler, so the code targets PyTorch 2.6's default and the missing argument
      is not reported (an explicit False still is);
    - the file is an empty ``io.BytesIO()`` the same function filled with ``torch.save`` a moment
      earlier (a pickling round trip in a test): nothing read comes from outside the process;
    - ``torch.jit.load`` (TorchScript archives are not unpickled into arbitrary
      objects) and ``safetensors`` loaders (``load_file``, ``safe_open``) are not
      pickle and are never reported.
    A checkpoint written by the same program a moment earlier, or a trusted local file,
    cannot hurt by itself; the finding is still true of the call, and ``# noqa: ML010``
    documents that the file is trusted.

How to fix
    Pass ``weights_only=True`` and save ``state_dict()``s rather than whole objects.
    The fix (unsafe, shown by ``--diff`` and applied by ``--unsafe-fixes``) adds
    ``weights_only=True`` or turns ``weights_only=False`` into ``True``: it breaks loading
    checkpoints that pickle whole objects (a model saved with ``torch.save(model)``,
    an ``argparse.Namespace``, NumPy scalars); allow-list such classes with
    ``torch.serialization.add_safe_globals([...])`` or re-save the checkpoint as a
    ``state_dict``. No fix is offered when ``pickle_module=`` is passed (``torch.load``
    refuses ``weights_only=True`` together with a pickle module).
"""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from mllint.findings import Applicability, Edit, Example, Finding, Fix
from mllint.semantics.checkpoints import allow_lists_globals, in_safe_globals_block, is_in_memory_round_trip
from mllint.semantics.model import FileModel
from mllint.semantics.names import dotted

CODE = "ML010"
NAME = "unsafe-torch-load"
MESSAGE = "`torch.load` without `weights_only=True` can run code hidden in the checkpoint: pass `weights_only=True`"
TRIGGERS = ("load",)
REQUIRES = ("torch",)
DEFAULT_ENABLED = True
FRAMEWORK = "torch"  # left out for files of another framework (mllint/frameworks.py)
FIX = "unsafe"


def SCREEN(facts) -> bool:
    # Sound: every finding is a call whose qualified callee is ``torch.load`` or
    # ``torch.serialization.load`` (aliases resolved as ImportTable does).
    return facts.calls_any(TORCH_LOADS)

# The pickle-based loaders of torch (aliases resolve through the file's imports:
# `import torch as T; T.load`, `from torch import load`, `torch.serialization.load`).
TORCH_LOADS = frozenset({"torch.load", "torch.serialization.load"})
SAFE_DEFAULT_SINCE = "2.6"  # torch.load's weights_only defaults to True from this version


def _keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def _is_name(node: cst.BaseExpression, value: str) -> bool:
    return isinstance(node, cst.Name) and node.value == value


def _insert_weights_only(model: FileModel, call: cst.Call) -> Optional[Fix]:
    if not call.args:
        return None
    end = model.position(call.args[-1].value).end
    edit = Edit(end.line, end.column + 1, end.line, end.column + 1, ", weights_only=True")
    return Fix(Applicability.UNSAFE, (edit,), "add `weights_only=True` (breaks checkpoints that pickle whole objects)")


def _replace_false(model: FileModel, value: cst.BaseExpression) -> Fix:
    pos = model.position(value)
    edit = Edit(pos.start.line, pos.start.column + 1, pos.end.line, pos.end.column + 1, "True")
    return Fix(Applicability.UNSAFE, (edit,), "use `weights_only=True` (breaks checkpoints that pickle whole objects)")


def check(model: FileModel) -> Iterable[Finding]:
    # torch >= 2.6 configured or declared, or an allow-list for the weights-only unpickler in the file
    safe_default = model.options.torch_at_least(SAFE_DEFAULT_SINCE) or allow_lists_globals(model)
    for call, ctx in model.calls:
        if model.imports.qualname(call.func) not in TORCH_LOADS:
            continue
        if any(arg.star for arg in call.args):
            continue  # *args / **kwargs: whether weights_only is passed is unknown
        if is_in_memory_round_trip(model, call, ctx):
            continue  # bytes this function pickled itself a moment ago: nothing comes from outside
        spelled = dotted(call.func) or "torch.load"
        weights_only = _keyword(call, "weights_only")
        pickle_module = _keyword(call, "pickle_module")
        if weights_only is not None:
            if not _is_name(weights_only.value, "False"):
                continue  # True, or decided by the caller (a variable, an expression)
            message = f"`{spelled}(..., weights_only=False)` unpickles arbitrary code from the file: load weights only"
            detail = (
                f"`{spelled}` with `weights_only=False` runs the full unpickler: a crafted checkpoint executes "
                "any function it names while it is read, whatever the PyTorch version. Pass `weights_only=True` "
                "and load a `state_dict`; classes a trusted checkpoint really needs can be allow-listed with "
                "`torch.serialization.add_safe_globals`."
            )
            fix = None if pickle_module is not None else _replace_false(model, weights_only.value)
            yield model.finding(call, CODE, NAME, message, fix, detail)
            continue
        if pickle_module is not None:
            message = (f"`{spelled}` with `pickle_module=` and no `weights_only=True` unpickles arbitrary code, "
                       "on any torch")
            detail = (
                f"`{spelled}` is given a `pickle_module` and no `weights_only`: it unpickles the file with that "
                "module, and since PyTorch 2.6 an explicit pickle module also turns the default back to "
                "`weights_only=False`, so a crafted checkpoint can execute code on every version. Drop "
                "`pickle_module=` and pass `weights_only=True` to load a `state_dict`."
            )
            yield model.finding(call, CODE, NAME, message, None, detail)
            continue
        if safe_default or in_safe_globals_block(model, ctx):
            continue  # torch >= 2.6 (configured, declared, or what safe_globals presumes): weights_only=True
        extra = " (`map_location=` does not change that)" if _keyword(call, "map_location") is not None else ""
        message = f"`{spelled}` without `weights_only=True` can run code hidden in the checkpoint (torch < 2.6)"
        detail = (
            f"`{spelled}` is called without `weights_only`{extra}: before PyTorch 2.6 that means "
            "`weights_only=False`, and a crafted checkpoint executes any function it names while it is "
            "unpickled. Pass `weights_only=True` (enough for a `state_dict`), or set `torch-version = \"2.6\"` "
            "in `[tool.mllint]` (or require `torch>=2.6` in the project's metadata) if the project only runs on "
            "PyTorch 2.6 or newer."
        )
        if model.options.torch_version:
            detail += f" The project allows torch {model.options.torch_version}."
        yield model.finding(call, CODE, NAME, message, _insert_weights_only(model, call), detail)


VALID = [
    # the safe loader: a state_dict needs nothing else
    """
    import torch
    state = torch.load(args.checkpoint, map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])
    """,
    # the caller decides: a variable, forwarded from a function parameter
    """
    import torch

    def load_checkpoint(path, trusted=False):
        return torch.load(path, map_location="cpu", weights_only=not trusted)
    """,
    # keyword arguments forwarded: whether weights_only is among them is unknown
    """
    import torch

    def load(path, **load_kwargs):
        return torch.load(path, **load_kwargs)
    """,
    # TorchScript archives are not arbitrary pickles
    """
    import torch
    scripted = torch.jit.load("model_scripted.pt", map_location="cpu")
    scripted.eval()
    """,
    # safetensors: no pickle at all
    """
    from safetensors.torch import load_file
    from safetensors import safe_open
    state_dict = load_file("model.safetensors", device="cpu")
    with safe_open("model.safetensors", framework="pt") as f:
        embed = f.get_tensor("embed.weight")
    """,
    # other libraries' `load` functions
    """
    import json
    import numpy as np
    import pickle
    import torch
    config = json.load(open("config.json"))
    features = np.load("features.npy")
    vocab = pickle.load(open("vocab.pkl", "rb"))
    model = torch.hub.load("pytorch/vision", "resnet18")
    """,
    # the alias spelling with the argument
    """
    from torch import load as torch_load
    ckpt = torch_load(ckpt_path, weights_only=True)
    """,
    # a method of another object named load
    """
    import torch
    model = MyModel()
    model.load(path)
    tokenizer.load(vocab_path)
    """,
    # a weights_only flag from the configuration
    """
    import torch
    state = torch.load(cfg.resume, map_location=device, weights_only=cfg.weights_only)
    """,
    # positional arguments forwarded by a wrapper: unknown
    """
    import torch

    def cached_load(*args):
        return torch.load(*args)
    """,
    # a local function that happens to be called load
    """
    import torch

    def load(path):
        with open(path) as handle:
            return handle.read()

    text = load("notes.txt")
    """,
    # an in-memory round trip: the test pickles a whole object and loads it back; nothing from outside
    """
    import io
    import torch

    def test_pickling(guide):
        buffer = io.BytesIO()
        torch.save(guide, buffer)
        buffer.seek(0)
        restored = torch.load(buffer, weights_only=False)
        assert type(restored) is type(guide)
    """,
    # an allow-list for the weights-only unpickler: the code targets torch >= 2.6, where it is the default
    """
    import torch

    def load_model(path, device):
        safe = [TransformerModel, torch.nn.Dropout, torch.nn.Linear]
        with torch.serialization.safe_globals(safe):
            return torch.load(path, map_location=device)
    """,
    # the same, allow-listed once for the whole file
    """
    from torch.serialization import add_safe_globals
    import torch

    add_safe_globals([TrainConfig])

    def resume(path):
        return torch.load(path, map_location="cpu")
    """,
]

INVALID = [
    # the most common shape: resume from a path given on the command line
    Example(
        """
        import torch
        if args.resume:
            checkpoint = torch.load(args.resume)
            model.load_state_dict(checkpoint["state_dict"])
        """,
        unsafe_fixed="""
        import torch
        if args.resume:
            checkpoint = torch.load(args.resume, weights_only=True)
            model.load_state_dict(checkpoint["state_dict"])
        """,
    ),
    # map_location alone does not make it safe
    Example(
        """
        import torch
        model.load_state_dict(torch.load("best.pt", map_location=torch.device("cpu")))
        """,
        unsafe_fixed="""
        import torch
        model.load_state_dict(torch.load("best.pt", map_location=torch.device("cpu"), weights_only=True))
        """,
    ),
    # explicit False
    Example(
        """
        import torch
        ckpt = torch.load(ckpt_path, map_location=device, weights_only=False)
        """,
        unsafe_fixed="""
        import torch
        ckpt = torch.load(ckpt_path, map_location=device, weights_only=True)
        """,
    ),
    # aliased module
    Example(
        """
        import torch as T
        weights = T.load(os.path.join(out_dir, "ckpt.pt"))
        """,
        unsafe_fixed="""
        import torch as T
        weights = T.load(os.path.join(out_dir, "ckpt.pt"), weights_only=True)
        """,
    ),
    # imported function
    Example(
        """
        from torch import load
        def restore(path, model):
            model.load_state_dict(load(path)["model"])
        """,
        unsafe_fixed="""
        from torch import load
        def restore(path, model):
            model.load_state_dict(load(path, weights_only=True)["model"])
        """,
    ),
    # torch.serialization.load, multi-line with a trailing comma
    Example(
        """
        import torch
        state = torch.serialization.load(
            checkpoint_file,
            map_location="cpu",
        )
        """,
        unsafe_fixed="""
        import torch
        state = torch.serialization.load(
            checkpoint_file,
            map_location="cpu", weights_only=True,
        )
        """,
    ),
    # from a file object (a download)
    Example(
        """
        import io
        import torch
        import urllib.request
        data = urllib.request.urlopen(url).read()
        state = torch.load(io.BytesIO(data), map_location="cpu")
        """,
        unsafe_fixed="""
        import io
        import torch
        import urllib.request
        data = urllib.request.urlopen(url).read()
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        """,
    ),
    # a pickle module given explicitly: no weights_only default helps, and no fix
    """
    import dill
    import torch
    model = torch.load(path, pickle_module=dill)
    """,
    # averaging the checkpoints of several runs
    Example(
        """
        import glob
        import torch
        states = [torch.load(p, map_location="cpu")["model"] for p in sorted(glob.glob("runs/*/last.pt"))]
        """,
        unsafe_fixed="""
        import glob
        import torch
        states = [torch.load(p, map_location="cpu", weights_only=True)["model"] for p in sorted(glob.glob("runs/*/last.pt"))]
        """,
    ),
    # explicit False in a helper inside a class
    Example(
        """
        import torch

        class Trainer:
            def resume(self, path):
                ckpt = torch.load(path, weights_only=False, map_location=self.device)
                self.model.load_state_dict(ckpt["model"])
                self.optimizer.load_state_dict(ckpt["optimizer"])
        """,
        unsafe_fixed="""
        import torch

        class Trainer:
            def resume(self, path):
                ckpt = torch.load(path, weights_only=True, map_location=self.device)
                self.model.load_state_dict(ckpt["model"])
                self.optimizer.load_state_dict(ckpt["optimizer"])
        """,
    ),
    # a buffer filled with bytes from elsewhere (another rank, a download) is not a round trip
    Example(
        """
        import io
        import torch

        def receive(sock):
            buffer = io.BytesIO(sock.recv_all())
            return torch.load(buffer, weights_only=False)
        """,
        unsafe_fixed="""
        import io
        import torch

        def receive(sock):
            buffer = io.BytesIO(sock.recv_all())
            return torch.load(buffer, weights_only=True)
        """,
    ),
    # an allow-list does not make an explicit False safe
    Example(
        """
        import torch

        with torch.serialization.safe_globals([Config]):
            state = torch.load(args.checkpoint, weights_only=False)
        """,
        unsafe_fixed="""
        import torch

        with torch.serialization.safe_globals([Config]):
            state = torch.load(args.checkpoint, weights_only=True)
        """,
    ),
]
