"""The reference pages under `mllint/docs/` stay in step with the code: each rule's page is what
`mllint explain` prints for it, the rule index and the README's table list every installed rule,
every configuration key and command-line option is documented somewhere, and every relative link of
the README and the pages leads to a file (and heading) that exists.

The rule pages are generated: after changing a rule's documentation, run `python tests/test_docs.py`
to write them again."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "mllint" / "docs"
RULE_PAGES = DOCS / "rules"
REGENERATE = "python tests/test_docs.py"


def _catalogue() -> List[dict]:
    from mllint.cli import _catalogue as catalogue

    return catalogue()


def rule_page(code: str, name: str) -> str:
    from mllint.cli import explain_command

    result = CliRunner().invoke(explain_command, [code], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return (f"# {code} {name}\n\n"
            f"[README](../../../README.md) · [all rules](README.md)\n\n"
            f"What `mllint explain {code}` prints (this page is generated from it):\n\n"
            f"```text\n{result.output.rstrip()}\n```\n")


def rule_index(rows: List[dict]) -> str:
    lines = ["# Rules", "",
             "[README](../../../README.md) · [all pages](../README.md)", "",
             "Generated from the rules themselves (`mllint rules` prints the same table; `mllint explain CODE`"
             " prints a page). `--fix` applies a safe fix; an unsafe one needs `--unsafe-fixes`.", "",
             "| Code | Name | On by default | Fix | Message |", "| --- | --- | --- | --- | --- |"]
    for row in rows:
        message = row["message"].replace("|", "\\|")
        lines.append(f"| [{row['code']}]({row['code']}.md) | {row['name']} | "
                     f"{'yes' if row['default_enabled'] else 'no'} | {row['fix'] or 'none'} | {message} |")
    return "\n".join(lines) + "\n"


def expected_pages() -> Dict[Path, str]:
    rows = _catalogue()
    pages = {RULE_PAGES / f"{row['code']}.md": rule_page(row["code"], row["name"]) for row in rows}
    pages[RULE_PAGES / "README.md"] = rule_index(rows)
    return pages


def write_pages() -> None:
    RULE_PAGES.mkdir(parents=True, exist_ok=True)
    pages = expected_pages()
    for stale in set(RULE_PAGES.glob("*.md")) - set(pages):
        stale.unlink()
    for path, text in pages.items():
        path.write_text(text, encoding="utf-8")


def test_each_rule_page_is_what_explain_prints():
    pages = expected_pages()
    on_disk = set(RULE_PAGES.glob("*.md"))
    assert on_disk == set(pages), f"rule pages out of step with the rules: run `{REGENERATE}`"
    for path, text in pages.items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is out of step: run `{REGENERATE}`"


def test_the_readme_table_lists_every_rule_with_its_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for row in _catalogue():
        if row["code"] == "ML000":
            continue
        assert re.search(rf"^\| \[{row['code']}\]\(mllint/docs/rules/{row['code']}\.md\) \| {re.escape(row['name'])} ",
                         readme, re.M), f"README's rule table has no row for {row['code']}"


def _documentation() -> str:
    texts = [(ROOT / "README.md").read_text(encoding="utf-8")]
    texts += [path.read_text(encoding="utf-8") for path in sorted(DOCS.rglob("*.md"))]
    return "\n".join(texts)


def test_every_configuration_key_is_documented():
    from mllint.config import KNOWN_KEYS

    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [key for key in KNOWN_KEYS if not re.search(rf"^{re.escape(key)} = ", text, re.M)]
    assert not missing, f"configuration keys not in configuration.md's example: {missing}"


def _long_options(command) -> List[str]:
    return sorted({opt for param in command.params for opt in (*param.opts, *param.secondary_opts)
                   if opt.startswith("--") and opt not in ("--help",)})


@pytest.mark.parametrize("name", ["check", "memory", "rules"])
def test_every_command_line_option_is_documented(name):
    from mllint.cli import SUBCOMMANDS

    text = _documentation()
    missing = [opt for opt in _long_options(SUBCOMMANDS[name]())
               if not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text)]
    assert not missing, f"`mllint {name}` options that no page mentions: {missing}"


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    anchors = set()
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def _markdown_files() -> List[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_somewhere(path):
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # an address on the web: not checked offline
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        assert linked.exists(), f"{path.relative_to(ROOT)}: link to {target} leads nowhere"
        if anchor:
            assert anchor in _anchors(linked), f"{path.relative_to(ROOT)}: {target}: no such heading"


def test_every_page_is_linked_from_the_index():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "README.md":
            assert f"]({page.name})" in index, f"mllint/docs/README.md does not link {page.name}"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    write_pages()
    print(f"wrote {len(list(RULE_PAGES.glob('*.md')))} pages under {RULE_PAGES.relative_to(ROOT)}")
