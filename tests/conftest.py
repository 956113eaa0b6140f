"""Fixtures shared by every test module."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared folder with real samples; tests that need it skip where it is absent."""
    if not (SHARED_DIR / "samples").is_dir():
        pytest.skip("../shared/samples is absent (CI-only sample checks)")
    return SHARED_DIR


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder holding the bundled demo, seeded once per test session (a seeding costs ~6 s: real
    Triton and tinygrad runs, eight ingests). Never written to: a module copies it (`demo_copy`)."""
    from dashboard.demo import seed_demo
    from dashboard.store import RunStore

    data = tmp_path_factory.mktemp("demo-template") / "data"
    seed_demo(RunStore(data))
    return data


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """An empty data folder for a store."""
    folder = tmp_path / "data"
    folder.mkdir()
    return folder


@pytest.fixture
def csv_collector():
    """A small real collector (kernel CSV) registered for the test, for store/registry/CLI tests."""
    from dashboard.collectors import register, unregister
    from tests.support.csv_collector import KernelCsvCollector

    collector = KernelCsvCollector()
    register(collector)
    yield collector
    unregister(collector)
