"""The memory estimator (`mllint memory`): predicts peak training and inference memory by
category. Imports torch lazily (extra `torch`)."""
