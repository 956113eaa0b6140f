"""Where a capture's tables go: a new run in the store, or one rank's partial in a staging folder (joined
later by `rank_merge`). A `CaptureSession` only returns tables (`session.tables()`); this writes them, for
the `dashboard capture` command and for a session given a data folder."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from dashboard.capture.rank_merge import write_rank_partial


class CapturedTables(Protocol):
    """What is written of a capture: a `CaptureSession` is one (this module does not import it: the session
    calls here, so the type is stated by shape rather than by an import back)."""

    name: str
    rank: int
    warnings: list[str]

    def tables(self) -> dict[str, pl.DataFrame]: ...

    def metadata(self) -> dict[str, Any]: ...


def write_run(session: CapturedTables, data_dir: Path | str, name: str | None = None,
              metadata: Mapping[str, Any] | None = None, extra_warnings: Iterable[str] = ()) -> str:
    """The session's tables as a new run; returns its id."""
    from dashboard.collectors.validation import drop_impossible_rows
    from dashboard.store import RunStore  # the store loads only when a run is written

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


def write_partial(session: CapturedTables, staging: Path | str, metadata: Mapping[str, Any] | None = None) -> Path:
    """This rank's tables in a shared staging folder (`rank_merge` joins the ranks into one run)."""
    return write_rank_partial(Path(staging), session.rank, session.tables(),
                              metadata={**session.metadata(), **(metadata or {})}, warnings=session.warnings)
