"""Where a capture's tables go: a new run in the store, or one rank's partial in a staging folder (joined
later by `rank_merge`). A `CaptureSession` only returns tables (`session.tables()`); this writes them, for
the `dashboard capture` command and for a session given a data folder."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dashboard.capture.rank_merge import write_rank_partial

if TYPE_CHECKING:
    from dashboard.capture.session import CaptureSession


def write_run(session: CaptureSession, data_dir: Path | str, name: str | None = None,
              metadata: Mapping[str, Any] | None = None, extra_warnings: Iterable[str] = ()) -> str:
    """The session's tables as a new run; returns its id."""
    from dashboard.store import RunStore  # the store loads only when a run is written
    from dashboard.validation import drop_impossible_rows

    started = time.perf_counter()
    # Live records go through the same rules as ingested files: nothing impossible is kept silently.
    tables, dropped = drop_impossible_rows(session.tables(), f"capture {name or session.name}")
    build_seconds = time.perf_counter() - started
    return RunStore(data_dir).write(
        name=name or session.name,
        tables=tables,
        parse_seconds=build_seconds,
        collectors=["cupti"],
        metadata={**session.metadata(), **(metadata or {})},
        warnings=[*session.warnings, *extra_warnings, *dropped],
    )


def write_partial(session: CaptureSession, staging: Path | str, metadata: Mapping[str, Any] | None = None) -> Path:
    """This rank's tables in a shared staging folder (`rank_merge` joins the ranks into one run)."""
    return write_rank_partial(Path(staging), session.rank, session.tables(),
                              metadata={**session.metadata(), **(metadata or {})}, warnings=session.warnings)
