"""Roles: what kind of ML object a name holds.

A role comes, strongest first, from (1) what the name was assigned from (a qualified
constructor such as ``torch.optim.AdamW`` or a class defined in the file that
subclasses ``nn.Module``), (2) a parameter annotation, (3) how it is used
(``.parameters()`` handed to an optimizer makes a model; ``.backward()`` makes a
loss), and (4) its spelling (``optimizer_g``, ``val_loader``). Spelling is the
weakest evidence and never overrides an assignment.
"""

from __future__ import annotations

import re
from typing import Optional

MODEL = "model"
OPTIMIZER = "optimizer"
SCHEDULER = "scheduler"
SCALER = "grad_scaler"
LOADER = "loader"
LOSS = "loss"  # a tensor that .backward() is called on
CRITERION = "criterion"  # a loss function object (nn.CrossEntropyLoss())
TRANSFORMER = "sklearn_transformer"
ESTIMATOR = "sklearn_estimator"
ACCELERATOR = "accelerator"
OTHER = "other"  # assigned from something known not to be any of the above

# --- qualified constructors -------------------------------------------------------

_TORCH_LOSSES = re.compile(r"^torch\.nn\.(modules\.loss\.)?\w+Loss$")
_SCHEDULER_Q = re.compile(r"(^torch\.optim\.lr_scheduler\.|lr_scheduler|scheduler|Scheduler|get_\w*schedule)")
_OPTIMIZER_Q = re.compile(
    r"(^torch\.optim\.[A-Z]\w*$|^torch\.optim\.\w+\.[A-Z]\w*$|\.optim(izers?)?\.[A-Z]\w*$|Optimizer$|"
    r"^(transformers\.)?AdamW$|(create|build|get|make|configure)_optim(izer)?s?$|^bnb\.optim\.)"
)
_SCALER_Q = re.compile(r"(GradScaler|ShardedGradScaler)$")
_LOADER_Q = re.compile(r"(DataLoader|data\.DataLoader|\w*_?dataloader|\w*_loader)$", re.IGNORECASE)
_MODEL_Q = re.compile(
    r"^(torch\.nn\.(Sequential|ModuleList|ModuleDict|Linear|Conv\dd|LSTM|GRU|RNN|Transformer\w*|Module|Embedding)"
    r"|torchvision\.models\.|timm\.create_model|timm\.models\.|transformers\.\w*(Model|For\w+)(\.from_pretrained)?$"
    r"|torch\.nn\.parallel\.DistributedDataParallel|torch\.nn\.DataParallel|torch\.compile)"
)
_SKLEARN_TRANSFORMER_Q = re.compile(
    r"^(sklearn|imblearn|category_encoders)\.(preprocessing|decomposition|feature_selection|feature_extraction|impute|"
    r"over_sampling|under_sampling|combine|manifold|random_projection|kernel_approximation)\b"
)
_SKLEARN_ESTIMATOR_Q = re.compile(
    r"^(sklearn\.(linear_model|ensemble|svm|tree|neighbors|naive_bayes|neural_network|discriminant_analysis|"
    r"gaussian_process|kernel_ridge|cluster|pipeline)|xgboost|lightgbm|catboost)\b"
)
_ACCELERATOR_Q = re.compile(r"(accelerate\.Accelerator|lightning\.(fabric\.)?Fabric|Accelerator)$")


# Probabilistic-programming and JAX libraries whose objects look like torch's; ``pyro.nn`` is
# left out (PyroModule is an nn.Module), and so is most of ``pyro.contrib`` (its GP and forecasting
# models are PyroModules; its compartmental epidemiology models are not).
_NOT_TORCH_Q = re.compile(
    r"^(pyro\.(poutine|infer|distributions|optim|sample|param|plate|condition|do|contrib\.epidemiology)\b|numpyro\.|funsor\.|optax\.)"
)


def role_of_constructor(qualname: Optional[str]) -> Optional[str]:
    """Role of the object returned by calling ``qualname`` (None when unknown)."""
    if not qualname:
        return None
    last = qualname.rsplit(".", 1)[-1]
    if _NOT_TORCH_Q.match(qualname):
        # Pyro's optimizers and SVI (their step() is not a torch optimizer step), models and
        # guides wrapped by poutine/infer (functions, not nn.Modules); numpyro, funsor, optax.
        return OTHER
    if _SCALER_Q.search(qualname):
        return SCALER
    if _SCHEDULER_Q.search(qualname):
        return SCHEDULER
    if _OPTIMIZER_Q.search(qualname) or is_torch_optimizer(qualname):
        return OPTIMIZER
    if _TORCH_LOSSES.match(qualname) or (qualname.startswith("torch.nn.") and last.endswith("Loss")):
        return CRITERION
    if _MODEL_Q.search(qualname):
        return MODEL
    if _SKLEARN_TRANSFORMER_Q.search(qualname):
        return TRANSFORMER
    if _SKLEARN_ESTIMATOR_Q.search(qualname):
        return ESTIMATOR
    if _ACCELERATOR_Q.search(qualname):
        return ACCELERATOR
    if last == "DataLoader" or _LOADER_Q.search(last):
        return LOADER
    return None


# --- torch optimizers (what a safe fix may call zero_grad() on) -----------------------

# Packages whose "optimizers" are not torch optimizers: Pyro's wrap torch ones and clear
# gradients themselves (SVI.step), the others belong to other frameworks.
_NOT_TORCH_ROOTS = frozenset({"pyro", "numpyro", "tensorflow", "keras", "jax", "optax", "flax", "mxnet", "paddle"})
_TORCH_OPTIMIZER_NAMES = (
    "SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "ASGD", "LBFGS", "NAdam", "RAdam", "RMSprop",
    "Rprop", "SparseAdam", "Adafactor", "Lamb", "LAMB", "Lion", "Adan", "Muon",
)
# Third-party packages whose optimizer classes subclass torch.optim.Optimizer.
_TORCH_OPTIMIZER_PACKAGES = frozenset({"transformers", "apex", "bitsandbytes", "timm", "torch_optimizer", "deepspeed"})
_TORCH_OPTIMIZER_FACTORIES = frozenset({
    "timm.optim.create_optimizer_v2", "timm.optim.create_optimizer",
    "timm.optim.optim_factory.create_optimizer_v2", "timm.optim.optim_factory.create_optimizer",
})
_NOT_ZERO_GRAD_OPTIMIZERS = frozenset({"torch.distributed.optim.DistributedOptimizer"})


def is_torch_optimizer(qualname: Optional[str]) -> bool:
    """Whether calling ``qualname`` (a qualified constructor or factory, or an annotation)
    returns a ``torch.optim.Optimizer``: a class of ``torch.optim``, a class of a known
    torch-ecosystem package whose name ends with a torch optimizer's name (``FusedAdam``,
    ``AdamW8bit`` of bitsandbytes), or a known factory (timm's ``create_optimizer_v2``)."""
    if not qualname or qualname in _NOT_ZERO_GRAD_OPTIMIZERS:
        return False
    if qualname in _TORCH_OPTIMIZER_FACTORIES:
        return True
    root, _, rest = qualname.partition(".")
    last = qualname.rsplit(".", 1)[-1]
    if root == "torch" and rest.startswith(("optim.", "distributed.optim.")):
        return last[:1].isupper() and ("lr_scheduler" not in qualname and "swa_utils" not in qualname)
    if root in _TORCH_OPTIMIZER_PACKAGES and last[:1].isupper():
        return last.endswith(_TORCH_OPTIMIZER_NAMES) or (root == "bitsandbytes" and ".optim." in qualname)
    return False


def lacks_zero_grad(qualname: Optional[str]) -> bool:
    """Whether calling ``qualname`` returns an optimizer known to have no ``zero_grad()``."""
    return qualname in _NOT_ZERO_GRAD_OPTIMIZERS or (qualname or "").split(".", 1)[0] in _NOT_TORCH_ROOTS


# --- spelling ------------------------------------------------------------------------

_OPTIMIZER_NAME = re.compile(r"^(optimi[sz]er|optim|opt)(s|[A-Z]\w*|_\w+|\d+)?$|^[A-Za-z0-9]{1,16}_(optimi[sz]er|optim|opt)s?$|optimi[sz]er")
_SCHEDULER_NAME = re.compile(r"sched|lr_policy|warmup", re.IGNORECASE)
_SCALER_NAME = re.compile(r"scaler$", re.IGNORECASE)
_LOADER_NAME = re.compile(r"(loader|dataloader|_dl|^dl)(_\w+)?$|^(train|val|valid|test|eval)_?(dl|iter|batches)$", re.IGNORECASE)
_MODEL_NAME = re.compile(
    r"^(model|net|network|module|encoder|decoder|generator|discriminator|classifier|backbone|student|teacher|"
    r"critic|actor|policy|q_net|qnet|unet|vae|gan|autoencoder|ae|cnn|rnn|lstm|mlp|resnet|transformer|"
    r"net[A-Z_]?\w*|model_\w+|\w+_model|\w+_net|net_\w+|\w+Net|[gd]_?net|net[gd])$"
)
_NOT_MODEL_SUFFIX = re.compile(r"_(path|name|names|dir|file|files|config|cfg|args|kwargs|type|types|id|str|url|kind|cls|class|fn|func|state|dict|params|size|dim|version)$")


def role_of_name(ref: str) -> Optional[str]:
    """Role suggested by the spelling of the last part of a reference (weak evidence)."""
    last = ref.rsplit(".", 1)[-1]
    last = last.split("[", 1)[0]
    if not last or last.startswith("__"):
        return None
    last = last.strip("_")  # ``self._net``, skorch's ``self.module_``
    if not last:
        return None
    if _SCALER_NAME.search(last):
        return SCALER
    if _SCHEDULER_NAME.search(last):
        return SCHEDULER
    if _OPTIMIZER_NAME.search(last.lower() if "optimi" in last.lower() else last):
        return OPTIMIZER
    if _LOADER_NAME.search(last):
        return LOADER
    if _MODEL_NAME.match(last) and not _NOT_MODEL_SUFFIX.search(last):
        return MODEL
    return None


def role_of_annotation(qualname: Optional[str]) -> Optional[str]:
    if not qualname:
        return None
    last = qualname.rsplit(".", 1)[-1]
    if last in ("Module",) or qualname.endswith("nn.Module") or last == "PreTrainedModel":
        return MODEL
    if last in ("Optimizer",):
        return OPTIMIZER
    if last in ("DataLoader",):
        return LOADER
    if last in ("GradScaler",):
        return SCALER
    if last in ("LRScheduler", "_LRScheduler"):
        return SCHEDULER
    return role_of_constructor(qualname)


# Base classes that make a class defined in the file a torch model (one list, the project
# model's: mllint/project/facts.py).
from mllint.project.facts import is_module_base  # noqa: E402,F401
