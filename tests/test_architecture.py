"""The package's import graph flows one way, with no circles and no Dash below the page layer
(docs/architecture.md draws it).

Every import counts: those inside functions (a lazy import is still a dependency), those under
`if TYPE_CHECKING:` (a type named from a module is knowledge of it) and those under
`if __name__ == "__main__":` (a module that runs another is bound to it).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dashboard"
DASH_MODULES = ("dash", "dash_ag_grid", "dash_bootstrap_components", "dash_cytoscape")
# Everything but the page layer and the app entry is Dash-free.
DASH_FREE = ("schema", "settings", "store", "server", "collectors", "capture", "analysis", "ingest", "demo",
             "figures", "views", "exports", "cli")
# The top-level parts in the order of the flow: each may import itself and those before it, never those after.
# A user's paths walk down it: cli (or an upload's page) -> ingest -> collectors -> store.
ORDER = ("schema", "settings", "store", "server", "collectors", "capture", "analysis", "ingest", "demo", "figures",
         "views", "exports", "layouts", "pages", "cli", "app")
# Programs, started by name and imported by nothing in the package: they may import anything.
ENTRY_POINTS = ("dashboard.server.wsgi", "dashboard.cli.__main__")


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The modules `path` imports, absolute imports of the package resolved to modules where they name one."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & modules
            names.update(submodules)
            if len(submodules) < len(node.names):  # names defined in the module itself
                names.add(node.module)
    return names


def import_graph(package: Path = PACKAGE) -> tuple[nx.DiGraph, dict[str, set[str]]]:
    modules = {module_name(path, package): path for path in package.rglob("*.py")}
    root = package.name
    graph = nx.DiGraph()
    raw: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph.add_node(name)
        raw[name] = imports_of(path, set(modules))
        for target in raw[name]:
            # The root package (its version and the `dashboard.mark` re-export) is run before any
            # module of the package anyway: an edge to it says nothing about the flow.
            if target in modules and target not in (name, root):
                graph.add_edge(name, target)
    return graph, raw


@functools.cache
def package_graph() -> tuple[nx.DiGraph, dict[str, set[str]]]:
    """The package's own import graph, parsed once for the module's tests (~1.5 s a parse): they only read it."""
    return import_graph()


def import_cycles(graph: nx.DiGraph) -> list[list[str]]:
    return [sorted(component) for component in nx.strongly_connected_components(graph) if len(component) > 1]


def part(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ORDER else None


def test_every_top_level_part_has_a_place_in_the_order() -> None:
    tops = {path.stem if path.is_file() else path.name for path in PACKAGE.iterdir()
            if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()}
    assert tops <= set(ORDER), f"not placed in ORDER: {sorted(tops - set(ORDER))}"
    # The top level keeps what every layer shares and the entry; everything else lives in a package.
    assert {path.stem for path in PACKAGE.glob("*.py")} == {"__init__", "app", "settings"}


def test_no_import_cycles() -> None:
    graph, _ = package_graph()
    assert not import_cycles(graph), f"import cycles: {import_cycles(graph)}"


@pytest.mark.parametrize("guard", ["if TYPE_CHECKING:", 'if __name__ == "__main__":', "def later() -> None:"])
def test_a_planted_circle_is_found_however_it_hides(tmp_path: Path, guard: str) -> None:
    package = tmp_path / "planted"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from planted.b import thing\n")
    (package / "b.py").write_text(f"thing = 1\n{guard}\n    from planted.a import thing as other\n")
    graph, _ = import_graph(package)
    assert import_cycles(graph) == [["planted.a", "planted.b"]]


@pytest.mark.parametrize("package", DASH_FREE)
def test_no_dash_below_the_pages(package: str) -> None:
    _, raw = package_graph()
    offenders = {module: sorted(name for name in imports if name.split(".")[0] in DASH_MODULES)
                 for module, imports in raw.items()
                 if module == f"dashboard.{package}" or module.startswith(f"dashboard.{package}.")}
    assert not {module: names for module, names in offenders.items() if names}


def test_parts_import_only_downward() -> None:
    graph, _ = package_graph()
    upward = []
    for source, target in graph.edges:
        low, high = part(source), part(target)
        if source in ENTRY_POINTS or not low or not high:
            continue
        if ORDER.index(high) > ORDER.index(low):
            upward.append(f"{source} -> {target}")
    assert not upward, "imports against the flow:\n" + "\n".join(sorted(upward))


def test_entry_points_are_imported_by_nothing() -> None:
    graph, _ = package_graph()
    assert not {entry: sorted(graph.predecessors(entry)) for entry in ENTRY_POINTS if list(graph.predecessors(entry))}


def test_the_store_knows_nothing_of_ingesting() -> None:
    graph, _ = package_graph()
    store_imports = {target for module in graph if part(module) == "store" for target in graph.successors(module)}
    assert {part(target) for target in store_imports} <= {"schema", "store"}, sorted(store_imports)


def test_pages_holds_only_registered_pages() -> None:
    for path in (PACKAGE / "pages").glob("*.py"):
        if path.stem != "__init__":
            assert "register_page(" in path.read_text(), f"{path.name} is not a registered page: move it to layouts/"
