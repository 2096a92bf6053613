"""The runtime verifier (`mllint --verify`): runs flagged scripts, original against fixed, and
confirms findings with measured evidence. Imports torch lazily (extra `torch`)."""
