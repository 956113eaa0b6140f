"""The bundled demo: deterministic sources for every kind of evidence, ingested on first start.

Each evidence module writes its own realistic sources (`write(folder)`); the
demo runs are made through the same collectors and store as user data, so the
demo can never show something the importers could not produce.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from dashboard.store import RunStore

log = logging.getLogger("dashboard.demo")

DEMO_SOURCES_DIR = "demo-sources"

# (run name, generator module writing sources) in the order they are ingested;
# the newest run of each evidence kind is what pages open by default.
SOURCE_DEMOS: tuple[tuple[str, str], ...] = (
    ("demo-memory", "dashboard.demo.tt_memory_log"),
    ("demo-planner", "dashboard.demo.ws_dumps"),
    ("demo-compiler", "dashboard.demo.triton_compile"),
    ("demo-training", "dashboard.demo.kineto_trace"),
)
# Captured runs have no source file: the capture session writes tables directly.
CAPTURED_DEMO = ("demo-capture", "dashboard.demo.captured_run")


def _optional_module(name: str) -> object | None:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise


def write_demo_sources(folder: Path) -> dict[str, list[Path]]:
    """Write every demo source under `folder`; returns run name -> paths to ingest."""
    written: dict[str, list[Path]] = {}
    for run_name, module_name in SOURCE_DEMOS:
        module = _optional_module(module_name)
        if module is None:
            continue
        write: Callable[[Path], list[Path]] = module.write  # type: ignore[attr-defined]
        written[run_name] = write(folder / run_name)
    return written


def seed_demo(store: RunStore) -> list[str]:
    """Generate the demo sources under DATA/demo-sources and ingest each as a run."""
    run_ids: list[str] = []
    captured = _optional_module(CAPTURED_DEMO[1])
    if captured is not None:
        run_ids.append(store.write(CAPTURED_DEMO[0], captured.tables(),  # type: ignore[attr-defined]
                                   collectors=["cupti"], metadata={"demo": True}))
    for run_name, paths in write_demo_sources(store.data_dir / DEMO_SOURCES_DIR).items():
        run_ids.append(store.ingest(paths, name=run_name))
    return run_ids


def seed_demo_if_empty(store: RunStore) -> list[str]:
    """Seed the demo when the data folder has no runs (once, even with several workers)."""
    store.data_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(store.data_dir / ".seed.lock")):
        if store.list_runs():
            return []
        log.info("seeding the demo runs into %s", store.data_dir)
        return seed_demo(store)
