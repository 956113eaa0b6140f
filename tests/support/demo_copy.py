"""A module's own copy of the session's seeded demo (tests/conftest.py `demo_template`)."""

from __future__ import annotations

import shutil
from pathlib import Path


def demo_copy(template: Path, target: Path) -> Path:
    """`target` (created) holding the demo's runs and sources as seeded in `template`; returns `target`."""
    shutil.copytree(template, target, symlinks=True)
    return target


def demo_sources(template: Path, run_name: str) -> list[Path]:
    """The files the seeding generated and ingested as the demo run `run_name` (its newest of that name), in
    the order ingested: e.g. the real Triton compile's dump, made once per session instead of once per test
    that needs one (~6 s each). They lie in the template: read them or copy them, never write to them."""
    from dashboard.demo import DEMO_SOURCES_DIR
    from dashboard.store import RunStore

    info = next(info for info in RunStore(template).list_runs() if info.name == run_name)
    paths = [template / DEMO_SOURCES_DIR / run_name / name for name in info.sources]
    assert paths and all(path.is_file() for path in paths), (run_name, info.sources)
    return paths
