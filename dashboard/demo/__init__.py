"""The bundled demo: deterministic sources for every kind of evidence, ingested on first start.

Each evidence module writes its own realistic sources (`write(folder)`); the
demo runs are made through the same collectors and store as user data, so the
demo can never show something the importers could not produce.
"""

from __future__ import annotations

import importlib
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from filelock import FileLock

from dashboard.collectors.base import ProgressFn, no_progress
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore

log = logging.getLogger("dashboard.demo")

DEMO_SOURCES_DIR = "demo-sources"

# (run name, generator module writing sources) in the order they are ingested;
# the newest run of each evidence kind is what pages open by default.
SOURCE_DEMOS: tuple[tuple[str, str], ...] = (
    # First: its kernels, ranges and memory must not make it the newest run of those kinds of evidence.
    ("demo-tinygrad", "dashboard.demo.tinygrad_viz"),
    ("demo-memory", "dashboard.demo.tt_memory_log"),
    ("demo-planner", "dashboard.demo.ws_dumps"),
    ("demo-compiler", "dashboard.demo.triton_compile"),
    ("demo-training", "dashboard.demo.kineto_trace"),
)
# Earlier versions of demo-training, ingested first under its name: /history has a trend out of the box.
HISTORY_DEMO = ("demo-training", "dashboard.demo.training_history")
# Captured runs have no source file: the capture session writes tables directly.
CAPTURED_DEMO = ("demo-capture", "dashboard.demo.captured_run")


def _optional_module(name: str) -> object | None:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise


def write_demo_sources(folder: Path, progress: ProgressFn = no_progress) -> dict[str, list[Path]]:
    """Write every demo source under `folder`; returns run name -> paths to ingest."""
    written: dict[str, list[Path]] = {}
    for position, (run_name, module_name) in enumerate(SOURCE_DEMOS):
        module = _optional_module(module_name)
        if module is None:
            continue
        progress(position / len(SOURCE_DEMOS), f"generating {run_name} sources under {folder / run_name}")
        write: Callable[[Path], list[Path]] = module.write  # type: ignore[attr-defined]
        written[run_name] = write(folder / run_name)
    return written


# Shares of the whole first start, for one progress figure: generating sources is quick, ingesting is not.
_WRITE_SHARE = 0.2


def seed_demo(store: RunStore, progress: ProgressFn = no_progress) -> list[str]:
    """Generate the demo sources under DATA/demo-sources and ingest each as a run."""
    run_ids: list[str] = []
    captured = _optional_module(CAPTURED_DEMO[1])
    if captured is not None:
        progress(0.0, f"writing {CAPTURED_DEMO[0]} (a simulated live capture)")
        run_ids.append(store.write(CAPTURED_DEMO[0], captured.tables(),  # type: ignore[attr-defined]
                                   collectors=["cupti"], metadata={"demo": True}))
    folder = store.data_dir / DEMO_SOURCES_DIR
    sources = list(_history_sources(folder)) + list(write_demo_sources(
        folder, lambda fraction, message: progress((fraction or 0.0) * _WRITE_SHARE, message)).items())
    for position, (run_name, paths) in enumerate(sources):
        low = _WRITE_SHARE + (1 - _WRITE_SHARE) * position / len(sources)
        high = _WRITE_SHARE + (1 - _WRITE_SHARE) * (position + 1) / len(sources)

        def within(fraction: float | None, message: str, low: float = low, high: float = high,
                   step: str = f"ingesting {run_name} ({position + 1}/{len(sources)})") -> None:
            progress(None if fraction is None else low + (high - low) * fraction, f"{step}: {message}")

        within(0.0, f"reading {len(paths)} source{'s' if len(paths) != 1 else ''}")
        run_ids.append(ingest_paths(store, paths, name=run_name, progress=within))
    progress(1.0, f"{len(run_ids)} demo runs ready")
    return run_ids


def _history_sources(folder: Path) -> list[tuple[str, list[Path]]]:
    """(run name, paths) of each earlier version of the training demo, oldest first."""
    module = _optional_module(HISTORY_DEMO[1])
    if module is None:
        return []
    versions = len(module.VERSIONS)  # type: ignore[attr-defined]
    return [(HISTORY_DEMO[0], module.write(folder / f"{HISTORY_DEMO[0]}-v{version + 1}", version))  # type: ignore[attr-defined]
            for version in range(versions)]


class FirstStartProgress:
    """First-start progress on a stream, in the CLI's `StderrProgress` format (`label: percent message`).

    A new step (the message up to its first ": ") always gets a line; progress within a step (an
    ingest's "reading ...") at most one a second, so a log stays short.
    """

    INNER_EVERY_SECONDS = 1.0

    def __init__(self, stream: TextIO, label: str = "first start") -> None:
        self.stream = stream
        self.label = label
        self.step = ""
        self.last_print = 0.0

    def __call__(self, fraction: float | None, message: str) -> None:
        now = time.monotonic()
        step = message.split(": ", 1)[0]
        if step == self.step and now - self.last_print < self.INNER_EVERY_SECONDS:
            return
        self.step, self.last_print = step, now
        percent = "" if fraction is None else f"{fraction * 100:5.1f}% "
        self.stream.write(f"{self.label}: {percent}{message}\n")
        self.stream.flush()


def seed_demo_if_empty(store: RunStore, stream: TextIO | None = sys.stderr) -> list[str]:
    """Seed the demo when the data folder has no runs (once, even with several workers).

    The terminal (`stream`; None for silence) says what a first start is doing: it takes seconds,
    and a silent pause before "serving ..." looks like a hang.
    """
    store.data_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(store.data_dir / ".seed.lock")):
        if store.list_runs():
            return []
        log.info("seeding the demo runs into %s", store.data_dir)
        progress: ProgressFn = no_progress
        if stream is not None:
            progress = FirstStartProgress(stream)
            stream.write(f"first start: no runs in {store.data_dir} yet; generating the bundled demo "
                         f"under {store.data_dir / DEMO_SOURCES_DIR} and ingesting it into {store.runs_dir} "
                         "(once; --no-demo skips it)\n")
            stream.flush()
        started = time.monotonic()
        run_ids = seed_demo(store, progress)
        if stream is not None:
            stream.write(f"first start: done in {time.monotonic() - started:.1f} s: {', '.join(run_ids)}\n")
            stream.flush()
        return run_ids
