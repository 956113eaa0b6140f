"""A user's paths to a published run, in one process: detect, parse, write, publish.

    run_id = ingest_paths(RunStore("data"), [Path("rank0.json.gz")], name="step-1200")

The walk reads downward: the inputs are checked here (no links), the
collectors' registry detects and parses them, and the store publishes the
staging folder this fills. Budgets (a child process with a time and memory
limit) wrap this in `budget.py`; many ranks on a cluster are `cluster.py`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from dashboard.collectors import registry
from dashboard.collectors.base import IngestError, ProgressFn, no_progress
from dashboard.ingest.analyses import keep_analyses
from dashboard.ingest.archives import UNPACKED_DIR, Unpacked, named_in, remove_unpacked, unpack_inputs
from dashboard.ingest.sources import default_name, refuse_symlink_inputs, symlinks_under
from dashboard.store import SOURCE_DIR, RunStore
from dashboard.store.files import TableWriter, copy_sources


class SourceCopy:
    """The inputs copied under `target` in a background thread while they are parsed (the copy needs nothing
    from the parse and is kernel work that does not hold the GIL; see `store.files`)."""

    def __init__(self, sources: Sequence[Path], target: Path) -> None:
        self._sources, self._target = list(sources), target
        self._copied: list[str] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="copy-sources", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._copied = copy_sources(self._sources, self._target)
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def wait(self) -> None:
        """Until the copy ended (before its folder may be removed)."""
        self._thread.join()

    def result(self) -> list[str]:
        """The copied paths relative to `target`; the copy's own error when it failed."""
        self.wait()
        if self._error is not None:
            raise self._error
        return self._copied


def ingest_paths(store: RunStore, paths: Sequence[Path | str], name: str | None = None,
                 progress: ProgressFn = no_progress) -> str:
    """Detect, parse and store the inputs as one new run of `store`; return its id."""
    inputs = [Path(p) for p in paths]
    if not inputs:
        raise IngestError("(no input)", "nothing to ingest: give at least one file or folder")
    store.remove_stale_staging()
    refuse_symlink_inputs(inputs)
    skipped_links = [f"{link}: symbolic link, skipped" for link in symlinks_under(inputs)]
    name = name or default_name(inputs)
    staging = store.new_staging(name)
    # The inputs are copied into the run while they are parsed: the copy needs nothing from the parse.
    copying = SourceCopy(inputs, staging / SOURCE_DIR)
    # Tables a collector hands over as they are ready are written while it builds the next.
    writer = TableWriter(staging)
    unpacked = Unpacked(inputs=inputs)
    try:
        # Archives are opened like folders; the run's source keeps the archive itself (the copy above).
        unpacked = unpack_inputs(inputs, staging / UNPACKED_DIR, progress=progress)
        collected = registry.collect(unpacked.inputs, progress, sink=writer.write)
        warnings = unpacked.warnings + [unpacked.name(w) for w in collected.warnings]
        if not collected.tables and not writer.tables:
            # Say why when the rows were there but none could be kept.
            reasons = "; ".join(w.removeprefix(f"{inputs[0]}: ") for w in warnings[:3])
            raise IngestError(inputs[0], "recognised, but it holds no events or records to show"
                              + (f" ({reasons})" if reasons else ""))
        progress(None, "writing run")
        for table, frame in collected.tables.items():
            writer.write(table, frame)
        row_counts = writer.finish()
        remove_unpacked(staging / UNPACKED_DIR)  # not part of the run: its source is the archive
        metadata = named_in(collected.metadata, unpacked)
        collected.tables.clear()  # written: the analyses below read them back, column by column
        keep_analyses(staging, name, row_counts, metadata, progress)
        return store.publish_staging(staging, name, row_counts, copying.result(), inputs,
                                     collected.parse_seconds, collected.collectors, metadata,
                                     skipped_links + warnings)
    except IngestError as error:
        if not unpacked.folders:
            raise
        raise IngestError(unpacked.name(error.path), unpacked.name(error.problem)) from error
    finally:
        writer.close()  # before the folder it writes into is removed
        copying.wait()
        store.drop_staging(staging)
