"""The suite's own layout: pytest imports test modules by base name (rootdir-relative, no packages),
so two test files with one name in different folders stop the whole run at collection."""

from __future__ import annotations

from collections import Counter
from pathlib import Path


def test_test_module_names_are_unique() -> None:
    tests = Path(__file__).parent
    names = Counter(path.name for path in tests.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
