"""The benchmarks import what exists: a module moved by a refactor broke `nsys_ingest.py` unnoticed once.

Every `from dashboard... import name` in `benchmarks/*.py`, also inside the code strings they run in
child processes, must name a module and attribute that exist. Page modules are left out: they can only
be imported once a Dash app exists, which the benchmarks that use them create first.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every `from dashboard... import name` in the file and in its code strings."""
    tree = ast.parse(path.read_text())
    trees = [tree]
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "import" in node.value:
            try:
                trees.append(ast.parse(node.value))
            except SyntaxError:
                continue
    return [
        (node.module, alias.name)
        for part in trees
        for node in ast.walk(part)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dashboard"
        for alias in node.names
    ]


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda path: path.name)
def test_benchmark_imports_exist(path: Path) -> None:
    missing = []
    for module_name, name in _imports(path):
        if module_name == "dashboard.pages" or module_name.startswith("dashboard.pages."):
            continue
        module = importlib.import_module(module_name)
        if not hasattr(module, name):
            try:
                importlib.import_module(f"{module_name}.{name}")
            except ImportError:
                missing.append(f"{module_name}.{name}")
    assert not missing, f"{path.name} imports names that do not exist: {missing}"


def test_benchmark_code_strings_are_found() -> None:
    # The check above must see imports inside code strings (nsys_ingest runs its collector in one).
    nsys = next(path for path in BENCHMARKS if path.name == "nsys_ingest.py")
    assert ("dashboard.collectors.nsys.collector", "COLLECTOR") in _imports(nsys)
