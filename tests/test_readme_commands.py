"""The console examples of the README and of the reference pages (`mllint/docs/`), run: each block
that starts with `$ mllint ...` on paths of this repository prints what the page shows (a `--verify` block: its findings and summary; the
measurements under them vary from run to run)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cli_helpers import run

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(?:console|text)\n(\$ mllint [^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


PAGES = [ROOT / "README.md", *sorted((ROOT / "mllint" / "docs").rglob("*.md"))]


def _examples():
    seen = set()
    for page in PAGES:
        for match in FENCE.finditer(page.read_text(encoding="utf-8")):
            args = shlex.split(match.group(1))[2:]
            paths = [a for a in args if not a.startswith("-") and ("/" in a or a.endswith((".py", ".ipynb")))]
            key = (tuple(args), match.group(2))
            if paths and all((ROOT / p).exists() for p in paths) and key not in seen:  # `src/`: the reader's code
                seen.add(key)
                yield pytest.param(args, match.group(2), id=f"{page.relative_to(ROOT)}: {' '.join(args)}")


EXAMPLES = list(_examples())


def test_the_readme_has_examples_to_run():
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("args,shown", EXAMPLES)
def test_readme_example_prints_what_the_readme_shows(args, shown):
    if "--verify" in args:
        pytest.importorskip("torch")
    proc = run(["--no-cache", *args], ROOT)
    assert "Traceback" not in proc.stderr
    out = proc.stdout
    if "--verify" in args:  # the findings and the summary; not the measurements
        keep = lambda lines: [line for line in lines if line and not line.startswith(" ")]  # noqa: E731
        assert keep(out.splitlines()) == keep(shown.splitlines())
    else:
        assert out == shown
