"""Runs on disk: one run and its tables (`run.py`), open, list, publish and delete them (`runs.py`), write
their files (`files.py`), and tell whose a piece of work in progress is (`owners.py`), and check a run as it
is opened (`checks.py`).
The store parses nothing: `dashboard.ingest` does."""

from dashboard.store.runs import (
    OWNER_SUFFIX,
    PARTITION_GLOB,
    RUN_FILE,
    SOURCE_DIR,
    STAGING_DIR,
    SUMMARY_PREFIX,
    Run,
    RunDamaged,
    RunInfo,
    RunNotFound,
    RunStore,
    safe_name,
)

__all__ = ["OWNER_SUFFIX", "PARTITION_GLOB", "RUN_FILE", "SOURCE_DIR", "STAGING_DIR", "SUMMARY_PREFIX", "Run",
           "RunDamaged", "RunInfo", "RunNotFound", "RunStore", "safe_name"]
