"""The memory estimator (`mllint memory`): predicts peak training and inference memory by
category. Imports torch lazily (extra `torch`)."""

from mllint import runtime  # noqa: F401  (before any import of torch: its numpy warning is not shown)
