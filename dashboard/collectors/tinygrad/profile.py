"""The flattened profile (`profile_events`) -> kernels, copies, ranges and device memory.

Each event's row (`device` in tinygrad's words, a row of VIZ's timeline) decides its table:

- `<backend> Graph` batches (a TinyJit graph's span) and the host rows (`TINY`: every compiler
  pass; `USER`: Tensor API calls; `GC`) -> `ranges`, one synthetic thread per row, nested by time;
  `profile_marker` points -> zero-length `marker` ranges on their row;
- `<device>:COPY` / `<device>:SDMA:<queue>` rows and 0.12's `is_copy` ranges -> `memcpy` (bytes
  where the event names them: an HCQ copy's TracingKey carries its size);
- every other row is a device (`CPU`, `NULL`, `AMD:1`, `NV`, ...): its ranges and graph entries
  -> `kernels`, `device` its ordinal (`AMD:1` -> 1) and `device_name` the row itself;
- `alloc` / `free` points -> `device_memory`.

A kernel is linked to its program as serve links it: by `profile_key` (the PROGRAM's key, in
serve's `ref_map`), and, where that fails (HCQ graph entries carry the CALL's key; 0.12 and 0.13
carry none), by its name, the program's function name (the last context of that name winning, as
in serve's `ref_map`). Its FLOPs and bytes are the program's Estimates (`ops`, `mem`) evaluated at
the `var_vals` of the last `exec` point on its row before it (serve's `ei`, in serve's order: by
whole microseconds, then as flattened; with no exec point before it, a constant estimate still
counts, where serve shows none, and a symbolic one stays unknown). Memory follows serve's `graph_layout`: an alloc adds
`min(sz, 1e12) x itemsize`, a free takes off what its buffer's alloc added, per device; a buffer
never freed simply stays allocated (serve frees it at the profile's end, which no peak sees).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from dashboard.collectors.kineto.nesting import PARENT, ROW, nest
from dashboard.collectors.tinygrad.profile_events import FlatEvents
from dashboard.collectors.tinygrad.rewrites import Rewrites
from dashboard.collectors.tinygrad.symbolic import evaluate
from dashboard.collectors.tinygrad.values import Names

HOST_ROWS = ("GC", "USER", "TINY")
_HOST_KINDS = {"TINY", "PYTHON", "CPU", "DISK", "NPY", "USER"}  # copy ends in host memory (kind HtoD / DtoH ...)


def _row_order(row: str) -> tuple[Any, ...]:
    """serve's `device_sort_fn`: GC, USER, TINY first, then the devices by name, DISK last."""
    special = {"GC": 0, "USER": 1, "TINY": 2, "DISK": 999}
    parts = row.split(" ")[0].split(":")
    return special.get(parts[0], 100), parts[0], row


def _serve_order(frame: pl.DataFrame) -> pl.DataFrame:
    """Each row's events as serve orders them: by whole microseconds (int() truncates), then as flattened."""
    start = pl.col("start_ns")
    whole_us = pl.when(start >= 0).then(start // 1000).otherwise(-((-start) // 1000))
    return frame.with_columns(whole_us.alias("_us")).sort("row", "_us", "position")


def _ordinal(row: pl.Expr) -> pl.Expr:
    """`AMD:1` -> 1, `CPU` -> 0, `AMD:1:SDMA:0` -> 1."""
    second = row.str.split(":").list.get(1, null_on_oob=True)
    return pl.when(second.str.contains(r"^\d{1,6}$")).then(second.cast(pl.Int32, strict=False)).otherwise(0)


def profile_tables(flat: FlatEvents, rewrites: Rewrites | None, rank: int) -> tuple[dict[str, pl.DataFrame],
                                                                                       list[str]]:
    """(tables, warnings) of one profile.pkl; `rewrites` links kernels to their programs when given."""
    events = flat.frame
    timed = events.filter(pl.col("kind") != "point")
    copies = pl.col("row").str.contains(r":COPY|:SDMA") | pl.col("is_copy").fill_null(False)
    ranges = timed.filter((pl.col("kind") == "batch") | (pl.col("row").is_in(HOST_ROWS) & ~copies))
    copy_rows = timed.filter(copies & (pl.col("kind") != "batch"))
    device_rows = timed.filter(~copies & ~pl.col("row").is_in(HOST_ROWS) & (pl.col("kind") != "batch"))
    points = events.filter(pl.col("kind") == "point")
    tables = {
        "kernels": _kernels(device_rows, points, flat, rewrites, rank),
        "ranges": _ranges(ranges, points.filter(pl.col("point") == "marker"), rank),
        "memcpy": _memcpy(copy_rows, rank),
    }
    tables["device_memory"], warnings = _device_memory(points, rank)
    return tables, warnings


def _kernels(device_rows: pl.DataFrame, points: pl.DataFrame, flat: FlatEvents, rewrites: Rewrites | None,
             rank: int) -> pl.DataFrame:
    execs = points.filter(pl.col("point") == "exec").with_columns(pl.lit(True).alias("_exec"))
    ordered = _serve_order(pl.concat([device_rows.with_columns(pl.lit(False).alias("_exec")), execs],
                                     how="vertical"))
    ordered = ordered.with_columns(  # serve's `ei`: the last exec point on the row so far
        pl.when("_exec").then("var_vals").forward_fill().over("row").alias("_vv"),
    ).filter(~pl.col("_exec"))
    kernels = ordered.with_columns(pl.lit(None, pl.Int64).alias("context"))
    if rewrites is not None and rewrites.programs:
        kernels = _link(kernels, rewrites)
        kernels = kernels.join(_estimates(kernels, flat, rewrites), on=["context", "_vv"], how="left",
                               nulls_equal=True)
        names = rewrites.tables["rewrite_contexts"].select("context", pl.col("name").alias("_program_name"))
        kernels = kernels.join(names, on="context", how="left").with_columns(
            pl.coalesce("_program_name", "name").alias("name"))
    missing = {column: dtype for column, dtype in _ESTIMATED.items() if column not in kernels.columns}
    kernels = kernels.with_columns(pl.lit(None, dtype).alias(column) for column, dtype in missing.items())
    return kernels.select(
        pl.lit(rank, pl.Int32).alias("rank"), _ordinal(pl.col("row")).alias("device"),
        pl.col("row").alias("device_name"), pl.lit(0, pl.Int64).alias("stream"), "name", "start_ns", "end_ns",
        *_ESTIMATED,
    ).sort("start_ns")


# What a kernel gets from its program's estimates and sizes (`_estimates`), null when unlinked.
_ESTIMATED: dict[str, pl.DataType] = {"flops": pl.Float64, "bytes": pl.Int64, **{
    f"{kind}_{axis}": pl.Int32 for kind in ("grid", "block") for axis in "xyz"}}


def _link(kernels: pl.DataFrame, rewrites: Rewrites) -> pl.DataFrame:
    """`context`: the program by profile key, else by function name (serve's ref_map: a later context wins)."""
    programs = rewrites.programs
    by_key = {key: index for key, index in rewrites.ref_map.items() if type(key) is bytes and index in programs}
    by_name = {key: index for key, index in rewrites.ref_map.items() if type(key) is str and index in programs}
    keyed = pl.DataFrame({"profile_key": list(by_key), "_by_key": list(by_key.values())},
                         schema={"profile_key": pl.Binary, "_by_key": pl.Int64})
    named = pl.DataFrame({"name": list(by_name), "_by_name": list(by_name.values())},
                         schema={"name": pl.String, "_by_name": pl.Int64})
    return (kernels.drop("context").join(keyed, on="profile_key", how="left").join(named, on="name", how="left")
            .with_columns(pl.coalesce("_by_key", "_by_name").alias("context")))


def _sizes(values: Any, var_vals: dict[str, int], names: Names) -> list[int | None]:
    sizes = list(values) if type(values) in (tuple, list) else []
    out = [evaluate(size, var_vals, names) for size in sizes[:3]]
    return [int(v) if type(v) is int and 0 <= v < 2**31 else None for v in out] + [None] * (3 - len(out))


def _estimates(kernels: pl.DataFrame, flat: FlatEvents, rewrites: Rewrites) -> pl.DataFrame:
    """FLOPs, bytes and launch sizes per (program, var_vals of the launch): each pair evaluated once."""
    pairs = kernels.filter(pl.col("context").is_not_null()).select("context", "_vv").unique()
    rows: dict[str, list[Any]] = {name: [] for name in ("context", "_vv", "flops", "bytes", *list(_ESTIMATED)[2:])}
    for context, vv in pairs.iter_rows():
        program = rewrites.programs[context]
        var_vals = flat.var_vals[vv] if vv is not None and 0 <= vv < len(flat.var_vals) else {}
        estimates = program.estimates
        flops = evaluate(estimates.get("ops"), var_vals, rewrites.names) if estimates is not None else None
        mem = evaluate(estimates.get("mem"), var_vals, rewrites.names) if estimates is not None else None
        grid = _sizes(program.global_size, var_vals, rewrites.names)
        block = _sizes(program.local_size, var_vals, rewrites.names)
        for column, value in zip(rows, (context, vv, flops, mem, *grid, *block), strict=True):
            rows[column].append(value)
    frame = pl.DataFrame(rows, schema={"context": pl.Int64, "_vv": pl.Int64, "flops": pl.Float64, "bytes": pl.Float64,
                                       **{c: pl.Int32 for c in list(rows)[4:]}}, strict=False)
    # An estimate that is no count (negative, past int64: a damaged file) is unknown, never a wrong number.
    mem, flops = pl.col("bytes"), pl.col("flops")
    return frame.with_columns(pl.when((mem >= 0) & (mem < 2**62)).then(mem).cast(pl.Int64).alias("bytes"),
                              pl.when(flops >= 0).then(flops).alias("flops"))


def _ranges(spans: pl.DataFrame, markers: pl.DataFrame, rank: int) -> pl.DataFrame:
    rows = sorted(set(spans.get_column("row").to_list()) | set(markers.get_column("row").to_list()), key=_row_order)
    threads = pl.DataFrame({"row": rows, "thread": list(range(1, len(rows) + 1))},
                           schema={"row": pl.String, "thread": pl.Int64})
    frame = pl.concat([
        spans.with_columns(pl.col("row").alias("category")),
        markers.with_columns(pl.lit("marker").alias("category")),
    ], how="vertical").join(threads, on="row", how="left")
    device = pl.when(pl.col("kind") == "batch").then(_ordinal(pl.col("row"))).otherwise(None)
    nested = nest(frame.select("thread", "name", "category", "start_ns", "end_ns", "position",
                               device.alias("device")), ["thread"], ["position"])
    return nested.select(
        pl.lit(rank, pl.Int32).alias("rank"), pl.col(ROW).alias("id"), "device", "thread", "name", "category",
        "start_ns", "end_ns", "depth", pl.col(PARENT).alias("parent"))


def _memcpy(copies: pl.DataFrame, rank: int) -> pl.DataFrame:
    ends = pl.col("name").str.split(" -> ")
    source = ends.list.get(0, null_on_oob=True).str.split(":").list.get(0, null_on_oob=True)
    target = ends.list.get(1, null_on_oob=True).str.split(":").list.get(0, null_on_oob=True)
    on_host = source.is_in(list(_HOST_KINDS)), target.is_in(list(_HOST_KINDS))
    kind = (pl.when(ends.list.len() != 2).then(None)
            .when(on_host[0] & on_host[1]).then(pl.lit("HtoH")).when(on_host[0]).then(pl.lit("HtoD"))
            .when(on_host[1]).then(pl.lit("DtoH")).when(source == target).then(pl.lit("DtoD"))
            .otherwise(pl.lit("PtoP")))
    queue = pl.col("row").str.extract(r":SDMA:(\d{1,6})$").cast(pl.Int64, strict=False).fill_null(0)
    return copies.select(pl.lit(rank, pl.Int32).alias("rank"), _ordinal(pl.col("row")).alias("device"),
                         queue.alias("stream"), kind.alias("kind"), pl.col("ret_bytes").alias("bytes"), "start_ns",
                         "end_ns").sort("start_ns")


def _device_memory(points: pl.DataFrame, rank: int) -> tuple[pl.DataFrame, list[str]]:
    events = _serve_order(points.filter(pl.col("point").is_in(["alloc", "free"]) & pl.col("key").is_not_null()))
    unsized = events.filter((pl.col("point") == "alloc") & pl.col("item_bytes").is_null()).height
    events = events.filter((pl.col("point") == "free") | pl.col("item_bytes").is_not_null())
    # A free takes off what its buffer's alloc added; only the first free after an alloc counts (serve's dict).
    by_buffer = events.with_row_index("_order").sort("row", "key", "_order").with_columns(
        pl.col("point").shift(1).over("row", "key").alias("_previous"),
        pl.col("item_bytes").shift(1).over("row", "key").alias("_allocated"))
    events = by_buffer.sort("_order").with_columns(
        pl.when(pl.col("point") == "alloc").then("item_bytes")
        .when(pl.col("_previous") == "alloc").then(-pl.col("_allocated")).otherwise(0).alias("bytes_delta"))
    unmatched = events.filter((pl.col("point") == "free") & (pl.col("_previous") != "alloc")
                              | pl.col("_previous").is_null() & (pl.col("point") == "free")).height
    table = events.select(
        pl.lit(rank, pl.Int32).alias("rank"), pl.col("row").alias("device"), pl.col("start_ns").alias("time_ns"),
        pl.col("key").alias("addr"), "bytes_delta", pl.col("bytes_delta").cum_sum().over("row").alias("allocated"),
        pl.lit(False).alias("relative"), pl.col("point").alias("action"))
    warnings = []
    if unsized:
        warnings.append(f"{unsized:,} allocations without a usable size or dtype were left out")
    if unmatched:
        warnings.append(f"{unmatched:,} frees of buffers with no allocation before them count 0 bytes")
    return table, warnings
