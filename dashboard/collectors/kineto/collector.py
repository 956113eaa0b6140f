"""PyTorch-profiler (Kineto) Chrome-trace JSON: kernels, copies, ops, API calls.

Reads `*.pt.trace.json` / `*.json.gz` as written by `torch.profiler`
(`export_chrome_trace`, `tensorboard_trace_handler`), modern and legacy (2021)
category and argument names alike, one file per rank. Several files in one
collect (or a folder's files) become one set of tables, `rank` taken from
`distributedInfo`, else from the file name (`rank-3`, `_rank_3`,
`rank3of8`), else a distinct index per file.

Tables: `kernels`, `memcpy` (memsets as kind "Memset"), `ranges` (cpu_op,
user_annotation, gpu_user_annotation, python_function, profiler_step and
any unknown category of complete event, kept under its own name; each op's
`Input Dims` / `Input type` as `input_shapes` / `input_dtypes` text, see
`shapes`), and `api_calls` (cuda_runtime / cuda_driver). Kernels and copies carry their
launching op, layer, pass and (kernels) FLOPs; see `attribution`,
`ranges` for how: the pass comes from autograd evidence in the trace
(backward nodes, `Fwd thread id`, `Sequence number`, `fwdbwd` flows, module
frames), never from the position on the timeline; FLOPs come from a `flops`
arg or from `Input Dims` (`dashboard.collectors.kineto.flops`), backward FLOPs from
the backward ops' own shapes (no "2x forward" guess), null where unknown.
Times are int64 ns: `round(ts * 1000)` (+ `baseTimeNanoseconds`).
`deviceProperties` and `distributedInfo` go to the run metadata. Pipeline:
`decode` (msgspec, chunked; `parallel` spreads big files over
processes) -> `columns` -> `tables`
(ns, ranks, cleaning) -> `nesting` / `ranges` ->
`attribution` (-> `shapes` for the ranges table).

How bad input is handled:

* truncated JSON, truncated or corrupt gzip, not JSON, a top level that is not
  an object, no `traceEvents` array, an empty event list: IngestError naming
  the file and the problem.
* events without a name, `ts` or `dur`: skipped, counted in a warning.
* numbers given as strings (`"ts": "1682725898.5"`): converted and counted;
  strings that are not numbers make the value missing (the event is skipped
  and counted when it is `ts` / `dur`).
* events that are not JSON objects: skipped and counted.
* negative `dur`: dropped, counted. Exact duplicate events: kept once, counted.
* unknown categories: kept as ranges under their own category name.
* `[memory]` instants (`profile_memory=True`) become `device_memory`
  (`memory`); other instants, metadata (`M`) and launch flows carry
  nothing the tables need and are ignored; the profiler span (`Trace`) too. What a file
  holds is counted per category (`census`): a file without kernels,
  interval categories the dashboard does not know (other accelerators' device
  activity) and ignored instants are named in warnings with their counts.
* sampled traces (missing events): orphan correlations simply stay unlinked.
* `Input Dims` / `Input type` that are not lists: left empty, counted; longer
  than 8,192 characters as text (a foreach op over every parameter): cut,
  counted with the longest and its op.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import Collected, IngestError, Probe, ProgressFn, TableStream
from dashboard.collectors.kineto.attribution import (
    api_table,
    in_time_order_by_kind,
    kernels_table,
    link_gpu,
    memcpy_table,
    ranges_table,
)
from dashboard.collectors.kineto.census import census_warnings
from dashboard.collectors.kineto.decode import DecodedTrace, decode_file
from dashboard.collectors.kineto.memory import DEVICE_VENDORS, device_memory_table, device_vendors
from dashboard.collectors.kineto.parallel import decode_parallel
from dashboard.collectors.kineto.ranges import annotate, prepare
from dashboard.collectors.kineto.shapes import input_texts
from dashboard.collectors.kineto.tables import assign_ranks, file_metadata, normalise

_TOP_KEYS = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"', b'"baseTimeNanoseconds"')


def _metadata(traces: Sequence[DecodedTrace], ranks: Sequence[int]) -> dict[str, Any]:
    files = [file_metadata(trace, rank) for trace, rank in zip(traces, ranks, strict=True)]
    metadata: dict[str, Any] = {"files": files, "ranks": sorted(set(ranks))}
    for key in ("deviceProperties", "distributedInfo"):
        per_rank = {str(meta["rank"]): meta[key] for meta in files if key in meta}
        if per_rank:
            metadata[key] = per_rank
    return metadata


class KinetoCollector:
    name = "kineto"
    description = "PyTorch-profiler (Kineto) trace JSON (.json/.json.gz)"

    def sniff(self, probe: Probe) -> bool:
        head = probe.head.lstrip(b"\xef\xbb\xbf \t\r\n")
        if not head.startswith(b"{"):
            return False
        if b'"traceEvents"' in head:
            return True
        # Kineto writes its own top-level keys before a (possibly long) event list.
        return sum(key in head for key in _TOP_KEYS) >= 2

    def collect(self, sources: Sequence[Path], progress: ProgressFn) -> Collected:
        kept = _KeptTables()
        result = self.collect_streaming(sources, progress, kept)
        return Collected(tables=kept.tables, metadata=result.metadata, warnings=result.warnings)

    def collect_streaming(self, sources: Sequence[Path], progress: ProgressFn, stream: TableStream) -> Collected:
        """Each table goes to `stream` once final: API calls right after the times are normalised, then
        kernels, copies, ranges and device memory; each is written while the next is built."""
        sources = [Path(source) for source in sources]
        if not sources:
            raise IngestError("(no files)", "no Kineto trace files were given")
        traces: list[DecodedTrace] = []
        share = 0.7 / len(sources)  # decoding is most of the work
        for index, path in enumerate(sources):
            message = f"decoding {path.name}"
            progress(share * index, message)

            def report(done: float, i: int = index, m: str = message) -> None:
                progress(share * (i + done), m)

            # Big files decode on every core; small or unusual ones in this process.
            trace = decode_parallel(path, report) or decode_file(path, report)
            if trace.events == 0:
                raise IngestError(path, "the trace holds no events (`traceEvents` is empty)")
            traces.append(trace)
        ranks, warnings = assign_ranks(traces)
        for trace in traces:
            warnings += census_warnings(trace.path, trace.categories)
        metadata = _metadata(traces, ranks)
        progress(0.7, "normalising times")
        events = normalise(traces, ranks)
        warnings += events.warnings
        for trace in traces:  # the decoded frames are copied into `events`: keep one copy, not two
            trace.frames = {}
        del traces
        frames = events.frames
        # Every table's rows are these events' (kernels and copies the GPU events, and so on).
        stream.time_base([frame.get_column("start_ns") for frame in frames.values() if frame.height])
        emitted: list[int] = []

        def emit(table: str, frame: pl.DataFrame) -> None:
            emitted.append(frame.height)
            stream.emit(table, frame)

        if frames["api"].height:
            emit("api_calls", api_table(frames["api"]))  # a projection: shares the columns linking reads

        progress(0.75, "nesting ranges")
        ranges = prepare(frames.pop("range"))
        progress(0.85, "linking GPU activity to ops, passes and layers")
        # Linking, then passes and layers, one after the other: side by side they saved ~0.1 s but lifted the
        # peak by ~40 MB at 262 MB, headroom that the ingest's allocator setting needs (it keeps freed pages
        # briefly, which saves ~20 % of the time; see `dashboard.ingest.allocator`).
        linked = link_gpu(frames.pop("gpu"), frames.pop("api"), ranges) if frames["gpu"].height else None
        ranges = annotate(ranges, frames.pop("flow"))
        if linked is not None:
            # The linked events (the largest frame) go once split; both tables are built before either is
            # written, so that a table's encoding buffers do not join the peak.
            kernel_events, copy_events = in_time_order_by_kind(linked)
            del linked
            kernels = kernels_table(kernel_events, ranges)
            del kernel_events
            copies = memcpy_table(copy_events, ranges)
            del copy_events
            emit("kernels", kernels)
            emit("memcpy", copies)
            del kernels, copies
        if ranges.height:  # last: written while the kernels table was built, it lifted the peak ~30 MB at 262 MB
            # Shapes and dtypes as text only now: categorical raw JSON until here (4 bytes a row in every sort).
            inputs = input_texts(ranges, sources)
            warnings += inputs.warnings
            emit("ranges", ranges_table(ranges.with_columns(inputs.columns)))
        if frames["memory"].height:
            vendors = device_vendors(frames["memory"])
            if any(vendor != DEVICE_VENDORS[1] for vendor in vendors.values()):  # CUDA goes without saying
                metadata["device_vendors"] = vendors
            memory, memory_warnings = device_memory_table(frames.pop("memory"), ranges)
            emit("device_memory", memory)
            warnings += [f"{', '.join(map(str, sources))}: {warning}" for warning in memory_warnings]
        if not any(emitted):
            warnings.append(f"{', '.join(map(str, sources))}: no kernels, copies, ranges, API calls or memory events")
        progress(1.0, "done")
        return Collected(tables={}, metadata=metadata, warnings=warnings)


class _KeptTables:
    """A stream that keeps the tables, for `collect`."""

    def __init__(self) -> None:
        self.tables: dict[str, pl.DataFrame] = {}

    def time_base(self, starts: Sequence[pl.Series]) -> None:
        pass  # the registry checks the returned tables together

    def emit(self, table: str, frame: pl.DataFrame) -> None:
        self.tables[table] = frame


COLLECTOR = KinetoCollector()
