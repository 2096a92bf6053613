"""One way through the house: each module imports only what lies below it (every import counts,
those inside functions too), and the import graph has no circle.

    files -> facts (project/) -> per-file model (semantics/) -> rules -> findings
          -> engine -> fixes (fixing) and reports (report/) -> CLI
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Set

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> Dict[str, Path]:
    found = {}
    for path in (ROOT / "mllint").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    for path in (ROOT / "rules").glob("*.py"):  # installed as the package mllint.rules
        found["mllint.rules." + path.stem if path.stem != "__init__" else "mllint.rules"] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(module: str, path: Path) -> Set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = anchor + ("." + base if base else "")
            names = [base + "." + alias.name if base + "." + alias.name in MODULES else base for alias in node.names]
        else:
            continue
        out.update(_resolve(name) for name in names if name.startswith("mllint"))
    out.discard(module)
    out.discard("")
    return out


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def test_the_import_graph_has_no_circle():
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack, on_stack, circles = [], set(), []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(GRAPH.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert circles == []


def _under(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


UPPER = ("mllint.cli", "mllint.stdin", "mllint.server", "mllint.flake8_plugin", "mllint.fixing", "mllint.report",
         "mllint.adoption", "mllint.baseline", "mllint.verify", "mllint.memory")
# (what a layer must not import: anything above it)
FORBIDDEN = {
    ("mllint.findings", "mllint.pyast", "mllint.sources"): ("mllint",),
    ("mllint.project",): ("mllint.semantics", "mllint.rules", "mllint.registry", "mllint.engine", *UPPER),
    ("mllint.semantics",): ("mllint.rules", "mllint.registry", "mllint.engine", "mllint.screen", *UPPER),
    ("mllint.rules",): ("mllint.registry", "mllint.engine", "mllint.screen", "mllint.config", *UPPER),
    ("mllint.notebook", "mllint.files", "mllint.noqa"): ("mllint.engine", "mllint.registry", *UPPER),
    ("mllint.engine",): UPPER,
    ("mllint.report",): ("mllint.engine", "mllint.fixing", "mllint.cli", "mllint.stdin"),
}


@pytest.mark.parametrize("lower", sorted(FORBIDDEN), ids=lambda names: names[0])
def test_lower_layers_do_not_reach_up(lower):
    above = FORBIDDEN[lower]
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items() if _under(module, lower)
        for target in targets
        if _under(target, above) and not (lower == ("mllint.findings", "mllint.pyast", "mllint.sources")
                                          and target == "mllint.findings")
    )
    assert wrong == []
