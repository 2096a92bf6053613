"""Function summaries settle on recursive helpers (semantics/summaries.py)."""

from __future__ import annotations

import textwrap

import libcst as cst

from mllint.semantics import build_model

RECURSIVE = textwrap.dedent(
    """
    def reset(model, depth):
        if depth > 0:
            model.zero_grad()
            reset(model, depth - 1)

    def ping(model, n):
        if n % 2:
            model.zero_grad()
        pong(model, n - 1)

    def pong(model, n):
        if n > 0:
            ping(model, n)
    """
)


def test_recursive_helpers_keep_one_site_per_clearing():
    model = build_model(cst.parse_module(RECURSIVE), RECURSIVE, "helpers.py")
    for key in ("reset", "ping", "pong"):
        clears = model.summaries[key].clears
        assert clears, key
        for site in clears:
            assert len(site.conds) == len(set(site.conds)), (key, site.conds)
        # before: the call's condition was added again on every round, one more site each time
        assert len(clears) <= 2, (key, len(clears))


TANGLED = textwrap.dedent(
    """
    def a(m, n):
        if n > 1:
            m.zero_grad()
        if n % 2:
            b(m, n - 1)
        if n % 3:
            c(m, n - 1)

    def b(m, n):
        if n > 2:
            a(m, n)
        if n > 3:
            c(m, n)

    def c(m, n):
        if n > 4:
            a(m, n)
        if n > 5:
            b(m, n)
    """
)


def test_helpers_calling_each_other_keep_one_site_per_set_of_conditions():
    model = build_model(cst.parse_module(TANGLED), TANGLED, "helpers.py")
    for key in ("a", "b", "c"):
        clears = model.summaries[key].clears
        assert clears, key
        # before: every order of every subset of the calls' conditions was a site of its own
        assert len({(site.ref, frozenset(site.conds)) for site in clears}) == len(clears), key
