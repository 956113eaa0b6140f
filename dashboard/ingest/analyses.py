"""Analyses computed once at ingest and kept beside the new run (`store.derived`), before it is published.

Every process that serves the run then reads them instead of computing them on its first visit: a team
server's workers are separate processes, and a new run is every user's default page at once. Today: the
GPU-time tables of /insights, `report` and the findings (idle gaps and their causes: seconds at a million
kernels) and the timeline's lane tables (analysis.timeline_kept). An analysis that fails is logged and
left to the pages, which compute it as before: it never costs the user the run.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from dashboard import schema
from dashboard.analysis.insights import run_time_tables
from dashboard.analysis.timeline_kept import keep_lane_tables
from dashboard.collectors.base import ProgressFn
from dashboard.store import Run, RunInfo

log = logging.getLogger(__name__)


def keep_analyses(staging: Path, name: str, row_counts: dict[str, int], metadata: dict[str, Any],
                  progress: ProgressFn) -> None:
    """Compute the kept analyses of the run in `staging` (its tables written, not yet published)."""
    run = Run(RunInfo(id=staging.name, path=staging, name=name, created="", sources=[],
                      evidence=schema.evidence_of(row_counts), row_counts=row_counts, parse_seconds=0.0,
                      schema_version=schema.SCHEMA_VERSION, size_bytes=0, metadata=metadata))
    if not (run.has("kernels") or run.has("memcpy")):
        return
    for step, analysis in (("analysing GPU time (idle gaps and their causes)", run_time_tables),
                           ("laying out the timeline", keep_lane_tables)):
        progress(None, step)
        try:
            analysis(run)
        except Exception:  # the pages compute it themselves: an analysis must never cost the run
            log.exception("%s of %s: not kept at ingest; the pages will compute it", step, name)
