"""mllint: a linter for silent machine-learning bugs in PyTorch and scikit-learn code."""

__version__ = "0.2.0"
