"""mllint's rules, one module each; installed as the package ``mllint.rules``.

Each module defines CODE, NAME, MESSAGE, TRIGGERS, DEFAULT_ENABLED, FIX ("safe",
"unsafe" or None), FRAMEWORK ("torch", the default: left out for TensorFlow, Keras or
JAX files; "sklearn"; or None), a docstring (the user-facing documentation), VALID and
INVALID examples, and ``check(model) -> Iterable[Finding]``.
"""

RULE_MODULES = [
    "ml001_missing_zero_grad",
    "ml002_inference_without_no_grad",
    "ml003_data_leakage",
    "ml004_per_batch_tensor_allocation",
    "ml005_missing_eval_mode",
    "ml006_loss_accumulated_with_graph",
    "ml007_host_sync_in_hot_loop",
    "ml008_dataloader_not_tuned",
    "ml009_python_loop_over_tensor",
    "ml010_unsafe_torch_load",
    "ml011_forward_called_directly",
    "ml012_clip_without_unscale",
    "ml013_softmax_before_cross_entropy",
    "ml014_scheduler_before_optimizer_step",
    "ml015_accumulation_without_loss_scaling",
    "ml016_functional_dropout_ignores_mode",
    "ml017_sampler_epoch_not_set",
    "ml018_host_tensor_moved_to_device",
    "ml100_unused_noqa",
]

# The codes off by default (each module's DEFAULT_ENABLED is False), so that the settings
# can be resolved without importing the rule modules (a warm run imports none of them);
# tests/test_lazy_imports.py checks this against the modules.
DEFAULT_OFF = ("ML007", "ML008", "ML100")
