"""What the verifier and the memory estimator share: the device interface and the live-storage
tracker. Everything here imports torch, so nothing on the lint path may import this package."""

import warnings

# torch installed without numpy (the `torch` extra does not bring it) warns on import that it
# "Failed to initialize NumPy"; neither the verifier nor the estimator needs numpy: not a word
# the user should see on every run.
QUIET_TORCH_IMPORT = "Failed to initialize NumPy"
warnings.filterwarnings("ignore", message=QUIET_TORCH_IMPORT)
