"""What the verifier and the memory estimator share: the device interface and the live-storage
tracker. Everything here imports torch, so nothing on the lint path may import this package."""
