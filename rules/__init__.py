"""mllint's rules, one module each; installed as the package ``mllint.rules``.

Each module defines CODE, NAME, MESSAGE, TRIGGERS, DEFAULT_ENABLED, FIX ("safe",
"unsafe" or None), a docstring (the user-facing documentation), VALID and INVALID
examples, and ``check(model) -> Iterable[Finding]``.
"""

RULE_MODULES = [
    "ml001_missing_zero_grad",
    "ml002_inference_without_no_grad",
    "ml003_data_leakage",
    "ml004_per_batch_tensor_allocation",
    "ml005_missing_eval_mode",
    "ml012_clip_without_unscale",
    "ml100_unused_noqa",
]
