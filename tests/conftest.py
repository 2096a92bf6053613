"""Suite-wide settings."""

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _memory_cache_outside_home(tmp_path_factory):
    """`mllint memory` caches its in-op measurements under ~/.cache/mllint: the tests (and the
    commands they run) keep theirs in a folder of the session instead."""
    saved = os.environ.get("MLLINT_MEMORY_CACHE")
    os.environ["MLLINT_MEMORY_CACHE"] = str(tmp_path_factory.mktemp("memory-cache"))
    yield
    if saved is None:
        os.environ.pop("MLLINT_MEMORY_CACHE", None)
    else:
        os.environ["MLLINT_MEMORY_CACHE"] = saved
