"""A run's timeline lane tables, computed once and kept beside the run (`store.derived`): every process
serving the run indexes its timeline from them instead of building the lane events again (seconds at a
million kernels, on each worker's first /timeline of a run). The ingest keeps them before it publishes.

The name carries a version: a change to what `timeline.lane_tables` returns must change it, so tables an
older version kept are never read.
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis.timeline import TIMELINE_TABLES, TimelineData, lane_tables, prepare_timeline
from dashboard.store import Run

KEPT_NAME = "timeline-1"
_PARTS = {"events", "lanes", "names"}


def _kept(run: Run) -> dict[str, pl.DataFrame] | None:
    kept = run.derived(KEPT_NAME)
    return kept if kept is not None and set(kept) >= _PARTS else None


def keep_lane_tables(run: Run) -> None:
    """Compute and keep the run's lane tables, unless they are kept already."""
    if _kept(run) is None:
        kernels, memcpy, ranges, _stack, api_calls = (run.frame(table) for table in TIMELINE_TABLES)
        run.keep_derived(KEPT_NAME, lane_tables(kernels, memcpy, ranges, api_calls))


def run_timeline(run: Run) -> TimelineData:
    """The whole run's timeline index, from its kept lane tables (kept now when there were none)."""
    frames = [run.frame(table) for table in TIMELINE_TABLES]
    tables = _kept(run)
    if tables is None:
        kernels, memcpy, ranges, _stack, api_calls = frames
        tables = lane_tables(kernels, memcpy, ranges, api_calls)
        run.keep_derived(KEPT_NAME, tables)
    return prepare_timeline(*frames, tables=tables)
