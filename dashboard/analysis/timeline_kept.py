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


def keep_lane_tables(run: Run) -> dict[str, pl.DataFrame]:
    """The run's lane tables: those kept beside it, else computed from its tables and kept now."""
    kept = run.derived(KEPT_NAME)
    if kept is not None and set(kept) >= _PARTS:
        return kept
    tables = lane_tables(*(run.frame(table) for table in ("kernels", "memcpy", "ranges", "api_calls")))
    run.keep_derived(KEPT_NAME, tables)
    return tables


def run_timeline(run: Run) -> TimelineData:
    """The whole run's timeline index, from its kept lane tables (kept now when there were none)."""
    return prepare_timeline(*(run.frame(table) for table in TIMELINE_TABLES), tables=keep_lane_tables(run))
