"""The package's import graph flows one way: collectors / capture -> store -> analysis -> views -> figures
-> pages, with no cycles and no Dash below the page layer (docs/architecture.md draws it).

Every import counts, those inside functions too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dashboard"
DASH_MODULES = ("dash", "dash_ag_grid", "dash_bootstrap_components", "dash_cytoscape")
# Packages that must never import Dash (the page layer and the app entry may).
DASH_FREE = ("collectors", "capture", "analysis", "figures", "views", "exports", "demo")
# A layer may import the ones before it, never those after it.
LAYERS = ("collectors", "capture", "analysis", "figures", "views", "exports", "layouts", "pages")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_main_guard(node: ast.AST) -> bool:
    """`if __name__ == "__main__":` (what runs only when the module is the program) and `if TYPE_CHECKING:`
    (names for annotations only) are not dependencies at run time."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING":
        return True
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"


def _imports(path: Path, modules: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    guarded = {id(inner) for node in ast.walk(tree) if _is_main_guard(node) for inner in ast.walk(node)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & modules
            names.update(submodules)
            if len(submodules) < len(node.names):  # names defined in the module itself
                names.add(node.module)
    return names


def _graph() -> tuple[nx.DiGraph, dict[str, set[str]]]:
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    raw: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph.add_node(name)
        raw[name] = _imports(path, set(modules))
        for target in raw[name]:
            # The root package (its version and the `dashboard.mark` re-export) is run before any
            # module of the package anyway: an edge to it says nothing about the flow.
            if target in modules and target not in (name, "dashboard"):
                graph.add_edge(name, target)
    return graph, raw


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in LAYERS else None


def test_no_import_cycles() -> None:
    graph, _ = _graph()
    cycles = [sorted(component) for component in nx.strongly_connected_components(graph) if len(component) > 1]
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("package", DASH_FREE)
def test_no_dash_below_the_pages(package: str) -> None:
    _, raw = _graph()
    offenders = {module: sorted(name for name in imports if name.split(".")[0] in DASH_MODULES)
                 for module, imports in raw.items() if module.startswith(f"dashboard.{package}.")}
    assert not {module: names for module, names in offenders.items() if names}


def test_the_security_module_and_the_cli_import_no_dash() -> None:
    _, raw = _graph()
    for module in ("dashboard.server_security", "dashboard.cli", "dashboard.store", "dashboard.schema"):
        assert not [name for name in raw[module] if name.split(".")[0] in DASH_MODULES], module


def test_layers_import_only_downward() -> None:
    graph, _ = _graph()
    upward = []
    for source, target in graph.edges:
        low, high = _layer(source), _layer(target)
        if low and high and LAYERS.index(high) > LAYERS.index(low):
            upward.append(f"{source} -> {target}")
    assert not upward, "imports against the flow:\n" + "\n".join(sorted(upward))
