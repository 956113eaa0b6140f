"""The tt-mlir runtime log with per-operation memory logging, read with polars.

One executed op is an `Executing operation: <MLIR>` line, then a
`Device memory state before operation <OpType>` header and one `MemoryView`
line per buffer type (DRAM, L1, L1_SMALL, TRACE). Other producers (tt-metal,
the PJRT plugin, the user's script) interleave freely; MPI runs prefix lines
with `[a,b]<stdout>:`.

The whole file is read as one column of lines and every step is a vectorised
expression: classification by literal `contains`, block membership by running
counts (`cum_sum` of headers), the program stack by running depth, numbers by
`extract_all`. A snapshot belongs to the header it follows; the op text is the
last op line between the previous header and this one (the real v0 parser
insists on the very next line and silently drops the op otherwise).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import IngestError, ProgressFn
from dashboard.collectors.tt.common import (
    HOUSEKEEPING_MLIR_OPS,
    HOUSEKEEPING_OP_TYPES,
    OpMemoryTables,
    mib_to_bytes,
    op_memory_columns,
)
from dashboard.collectors.tt.mlir_text import parse_op_text, strip_ansi, tensor_facts

_RELEVANT = r"memory state|Executing operation: |execution of program: |Out of Memory: |MemoryView\{"
_MEMORY_VIEW = (
    r"^numBanks: \d+, totalBytesPerBank: \d+\.\d+ MB, totalBytesAllocatedPerBank: \d+\.\d+ MB, "
    r"totalBytesFreePerBank: \d+\.\d+ MB, largestContiguousBytesFreePerBank: \d+\.\d+ MB\}$"
)
_OOM = r"Out of Memory: Not enough space to allocate (\d+) B (\w+) buffer across (\d+) banks"
_MPI_PREFIX = r"^\[(\d+),(\d+)\]<std(?:out|err)>:"
# Kinds of relevant line.
HEADER_OP, HEADER_OTHER, MEMORY, OP, START, END, OOM = range(7)
_MAX_DEPTH = 8
# The in-memory engine needs ~12 % less CPU than the streaming default on these
# wide string frames (measured on a 100 k-op log); the data fits in memory anyway.
ENGINE = "in-memory"
_TYPE_PREFIXES = {"DRAM": "DRAM", "L1 m": "L1", "L1_S": "L1_SMALL", "L1 S": "L1_SMALL", "TRAC": "TRACE"}


def read_lines(data: bytes) -> pl.DataFrame:
    """Every line of a text as (line_no, line); one column, no quoting, bad UTF-8 replaced."""
    frame = pl.read_csv(
        data, has_header=False, separator="\x1f", quote_char=None, new_columns=["line"],
        schema={"line": pl.String}, truncate_ragged_lines=True, encoding="utf8-lossy",
    )
    return frame.with_row_index("line_no", offset=1).with_columns(pl.col("line_no").cast(pl.Int64))


def _after(marker: str) -> pl.Expr:
    line = pl.col("line")
    return line.str.slice(line.str.find(marker, literal=True) + len(marker))


def _classified(lines: pl.DataFrame) -> pl.LazyFrame:
    line = pl.col("line")
    has = lambda text: line.str.contains(text, literal=True)  # noqa: E731
    kind = (
        pl.when(has("Device memory state before operation ")).then(HEADER_OP)
        .when(has("Device memory state ")).then(HEADER_OTHER)
        .when(has(" memory state: ")).then(MEMORY)
        .when(has("Executing operation: ") & has("RuntimeTTNN")).then(OP)
        .when(has("Starting execution of program: ")).then(START)
        .when(has("Finished execution of program: ")).then(END)
        .when(has("Out of Memory: ")).then(OOM)
    )
    relevant = lines.lazy().filter(line.str.contains(_RELEVANT)).with_columns(kind.alias("kind"))
    return relevant.filter(pl.col("kind").is_not_null())


def _with_ranks(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """MPI `[a,b]<stdout>:` prefixes become dense ranks 0..n-1 (sorted by the pair)."""
    single = frame.with_columns(pl.lit(0, pl.Int32).alias("rank"))
    if not frame.select(pl.col("line").str.starts_with("[").any()).item():
        return single, {}
    frame = frame.with_columns(pl.col("line").str.extract_groups(_MPI_PREFIX).alias("_p")).unnest("_p")
    if frame["1"].null_count() == frame.height:
        return single, {}
    pairs = frame.select("1", "2").drop_nulls().unique().with_columns(pl.all().cast(pl.Int64)).sort("1", "2")
    mapping = {f"{a},{b}": rank for rank, (a, b) in enumerate(pairs.iter_rows())}
    host = pl.concat_str("1", pl.lit(","), "2")
    rank = host.replace_strict(mapping, default=0, return_dtype=pl.Int32).fill_null(0)
    return frame.with_columns(rank.alias("rank")).drop("1", "2"), mapping


def _programs_of_headers(relevant: pl.DataFrame, header: int = HEADER_OP) -> pl.DataFrame:
    """(rank, line_no, program) of each op header from the running program stack.

    Only program boundaries and headers take part (memory lines are most of the
    rows and need no program). The program of a header is the latest
    `Starting execution` seen at the current depth.
    """
    frame = relevant.lazy().filter(pl.col("kind").is_in([START, END, header])).select("rank", "line_no", "kind",
                                                                                      "line")
    is_start, is_end = pl.col("kind") == START, pl.col("kind") == END
    raw = (is_start.cast(pl.Int32).cum_sum() - is_end.cast(pl.Int32).cum_sum()).over("rank")
    frame = frame.with_columns(raw.alias("_raw"))
    # An unmatched `Finished` (log cut at the start) must not push later depths below zero.
    depth = pl.col("_raw") - pl.min_horizontal(pl.col("_raw").cum_min().over("rank"), pl.lit(0))
    name = strip_ansi(_after("execution of program: ")).str.strip_chars()
    frame = frame.with_columns(depth.alias("_depth"), pl.when(is_start).then(name).alias("_started"))
    frame = frame.collect(engine=ENGINE)
    deepest = min(int(frame["_depth"].max() or 0), _MAX_DEPTH)
    program = pl.lit(None, pl.String)
    for d in range(1, deepest + 1):
        level = pl.when(is_start & (pl.col("_depth") == d)).then(pl.col("_started")).forward_fill().over("rank")
        program = pl.when(pl.col("_depth") == d).then(level).otherwise(program)
    return frame.lazy().with_columns(program.alias("program")).filter(pl.col("kind") == header).select(
        "rank", "line_no", "program").collect(engine=ENGINE)


def _memory_rows(memory: pl.DataFrame, path: Path) -> pl.DataFrame:
    """Numbers of the `MemoryView{...}` lines, cut at literal positions (cheaper than captures)."""
    line = pl.col("line")
    # "Device <TYPE> memory state: ": four characters tell the types apart (L1 vs L1 SMALL too).
    buffer_type = line.str.slice(line.str.find("Device ", literal=True) + 7, 4).replace_strict(
        _TYPE_PREFIXES, default=None, return_dtype=pl.String)
    # Only the view has decimals (ANSI codes and MPI prefixes have none), so the
    # numbers come from the whole line: cutting the view out first costs more.
    banks_at = line.str.find("numBanks: ", literal=True) + 10
    parsed = memory.with_columns(
        buffer_type.alias("buffer_type"),
        line.str.extract_all(r"\d+\.\d+").list.eval(pl.element().cast(pl.Float64)).alias("_mib"),
        line.str.slice(banks_at, line.str.find(", totalBytesPerBank", literal=True) - banks_at)
        .cast(pl.Int32, strict=False).alias("banks"),
        line.str.ends_with(" MB}").alias("_closed"),
    )
    ok = (pl.col("_mib").list.len() == 4) & pl.col("banks").is_not_null() & pl.col("_closed") & pl.col(
        "buffer_type").is_not_null()
    broken = parsed.filter(~ok.fill_null(False))
    if broken.height:
        row = broken.row(0, named=True)
        text = pl.select(strip_ansi(pl.lit(row["line"])).str.strip_chars().str.slice(0, 160)).item()
        raise IngestError(path, f"line {row['line_no']}: truncated or malformed memory line ({text!r}); "
                                "expected 'Device <DRAM|L1|L1_SMALL|TRACE> memory state: MemoryView{numBanks: N, "
                                "totalBytesPerBank: X MB, ...}'")
    first = parsed["line"][0]
    view = first[first.find("MemoryView{") + 11:].rstrip()
    if not re.match(_MEMORY_VIEW, view):
        raise IngestError(path, f"line {parsed['line_no'][0]}: unexpected MemoryView field order or names "
                                f"({view[:160]!r})")
    values = [pl.col("_mib").list.get(i) for i in range(4)]
    return parsed.select(
        "rank", "block", "line_no", "buffer_type", "banks",
        *(mib_to_bytes(v).alias(f"{n}_per_bank") for v, n in zip(
            values, ("total", "allocated", "free", "largest_free"), strict=True)),
    )


def parse_runtime_log(path: Path, data: bytes, progress: ProgressFn) -> OpMemoryTables:
    """Turn one runtime log into `op_memory` and `op_meta` rows (op_index = executed-op order)."""
    if not data or data.isspace():  # isspace stops at the first visible byte
        raise IngestError(path, "the log is empty")
    lines = read_lines(data)
    progress(0.3, f"{lines.height:,} lines read")
    relevant, hosts = _with_ranks(_classified(lines).collect(engine=ENGINE))
    del lines
    if hosts:  # ranks interleave: each rank's lines must be contiguous for the running counts
        relevant = relevant.sort("rank", "line_no", maintain_order=True)
    count = lambda kind: (pl.col("kind") == kind).cast(pl.Int64).cum_sum().over("rank")  # noqa: E731
    relevant = relevant.lazy().with_columns(
        count(HEADER_OP).alias("_ops_so_far"),
        (count(HEADER_OP) + count(HEADER_OTHER)).alias("block"),
        count(OP).alias("_op_line"),
    ).collect(engine=ENGINE)
    headers = relevant.filter(pl.col("kind") == HEADER_OP)
    op_lines = relevant.filter(pl.col("kind") == OP).height
    if headers.is_empty() and relevant.filter(pl.col("kind") == HEADER_OTHER).height:
        return _program_level(path, relevant, hosts, progress)
    if headers.is_empty():
        raise IngestError(path, _no_memory_problem(op_lines, relevant))
    warnings: list[str] = []

    ops = headers.join(_programs_of_headers(relevant), on=["rank", "line_no"], how="left",
                       maintain_order="left").select(
        "rank", "line_no", "block", "program",
        (pl.col("_ops_so_far") - 1).alias("op_index"),
        strip_ansi(_after("before operation ")).str.strip_chars().alias("op_type"),
        pl.col("_op_line"),
        pl.col("_op_line").shift(1, fill_value=0).over("rank").alias("_prev_op_line"),
    )
    orphaned = op_lines - ops.select((pl.col("_op_line") > pl.col("_prev_op_line")).sum()).item()
    if orphaned:
        warnings.append(f"{path}: {orphaned} 'Executing operation' lines had no memory block after them "
                        "(memory logging off for part of the run?); they are not counted")
    texts = relevant.lazy().filter(pl.col("kind") == OP).select(
        "rank", "_op_line", strip_ansi(_after("Executing operation: ")).str.strip_chars().alias("text"))
    meta = parse_op_text(texts).with_columns(
        *tensor_facts(pl.col("input_types"), "input"),
        *tensor_facts(pl.col("output_types"), "output", with_placement=True),
    )
    ops = ops.lazy().with_columns(
        pl.when(pl.col("_op_line") > pl.col("_prev_op_line")).then(pl.col("_op_line")).alias("_op_line")
    ).join(meta, on=["rank", "_op_line"], how="left", maintain_order="left").with_columns(
        pl.when(pl.col("program").str.contains("const_eval", literal=True)).then(pl.col("program"))
        .alias("const_eval_graph"),
    ).with_columns(
        pl.col("const_eval_graph").is_not_null().alias("is_weight_op"),
        _profiler_index(),
    ).collect(engine=ENGINE)
    progress(0.7, f"{ops.height:,} ops parsed")

    memory = _memory_rows(relevant.filter(pl.col("kind") == MEMORY), path)
    memory = memory.join(ops.select("rank", "block", "op_index"), on=["rank", "block"], how="inner",
                         maintain_order="left")
    per_op = memory.group_by("rank", "op_index").agg(
        pl.len().alias("types"), pl.col("buffer_type").n_unique().alias("distinct"),
        pl.col("line_no").min().alias("first_line"), pl.col("line_no").max().alias("end"))
    duplicated = per_op.filter(pl.col("types") > pl.col("distinct"))
    if duplicated.height:
        row = duplicated.row(0, named=True)
        raise IngestError(path, f"line {row['first_line']}: op {row['op_index']} has a buffer type twice in its "
                                "memory block (output of several processes mixed without MPI prefixes?)")
    _check_truncation(path, relevant, ops, per_op)
    warnings += _missing_type_warnings(path, ops, per_op)

    op_memory = op_memory_columns(
        memory.lazy().drop("block").join(
            ops.lazy().select("rank", "op_index", "program", "op_type", "mlir_op", "loc", "const_eval_graph",
                              "is_weight_op", "profiler_index"),
            on=["rank", "op_index"], how="left", maintain_order="left",
        )
    ).drop("line_no").collect(engine=ENGINE)
    op_meta = ops.select(
        "rank", "program", "op_index", "mlir_op", "loc", "result", "inputs", "attributes", "input_shapes",
        "input_dtypes", "output_shapes", "output_dtypes", "layouts", "buffer_types", "const_eval_graph",
        "is_weight_op", "profiler_index",
    )
    metadata: dict[str, Any] = {"ops": ops.height, "op_lines": op_lines,
                                "deallocates": ops.filter(pl.col("op_type") == "DeallocateOp").height}
    if hosts:
        metadata["mpi_hosts"] = hosts
    oom = _out_of_memory(relevant)
    if oom:
        metadata["out_of_memory"] = oom
        warnings += _oom_warnings(path, oom)
    return OpMemoryTables(op_memory, op_meta, metadata, warnings)


PROGRAM_LEVEL = ("program-level memory states only (before and after each submit): the curve is per submit; "
                 "per-op detail is absent (run with TT_RUNTIME_MEMORY_LOG_LEVEL=operation for it)")


def _program_level(path: Path, relevant: pl.DataFrame, hosts: dict[str, int], progress: ProgressFn) -> OpMemoryTables:
    """A log with `Device memory state before submit` / `after submit` blocks only (TT_RUNTIME_MEMORY_LOG_LEVEL=
    program): one `op_memory` snapshot per block, `op_type` naming the moment (`before submit`)."""
    snapshots = relevant.filter(pl.col("kind") == HEADER_OTHER).join(
        _programs_of_headers(relevant, HEADER_OTHER), on=["rank", "line_no"], how="left", maintain_order="left",
    ).select(
        "rank", "line_no", "block", "program",
        (pl.col("block") - 1).alias("op_index"),
        strip_ansi(_after("Device memory state ")).str.strip_chars().alias("op_type"),
    )
    lines = relevant.filter(pl.col("kind") == MEMORY)
    if lines.is_empty():
        raise IngestError(path, f"the log has {snapshots.height:,} program-level memory state headers (before/after "
                                "submit) but no 'Device <type> memory state: MemoryView{...}' lines after them")
    memory = _memory_rows(lines, path).join(snapshots.select("rank", "block", "op_index"), on=["rank", "block"],
                                            how="inner", maintain_order="left")
    keys = snapshots.lazy().select("rank", "op_index", "program", "op_type", pl.lit(None, pl.String).alias("mlir_op"),
                                   pl.lit(None, pl.String).alias("loc"),
                                   pl.lit(None, pl.String).alias("const_eval_graph"),
                                   pl.lit(False).alias("is_weight_op"), pl.lit(None, pl.Int64).alias("profiler_index"))
    op_memory = op_memory_columns(memory.lazy().drop("block").join(
        keys, on=["rank", "op_index"], how="left", maintain_order="left")).drop("line_no").collect(engine=ENGINE)
    op_meta = snapshots.select("rank", "program", "op_index")
    progress(0.7, f"{snapshots.height:,} submit snapshots parsed")
    metadata: dict[str, Any] = {"granularity": "program", "ops": snapshots.height,
                                "submits": snapshots.filter(pl.col("op_type").str.starts_with("before")).height}
    if hosts:
        metadata["mpi_hosts"] = hosts
    warnings = [f"{path}: {PROGRAM_LEVEL}"]
    oom = _out_of_memory(relevant, "block")  # in the snapshot the failing submit followed
    if oom:
        metadata["out_of_memory"] = oom
        warnings += _oom_warnings(path, oom)
    return OpMemoryTables(op_memory, op_meta, metadata, warnings)


def _oom_warnings(path: Path, oom: list[dict[str, Any]]) -> list[str]:
    return [f"{path}: out of {o['buffer_type']} memory in op {o['op_index']} (rank {o['rank']}): "
            f"{o['bytes']:,} B across {o['banks']} banks could not be allocated"
            + (f" (reported {o['repeats']} times)" if o["repeats"] > 1 else "") for o in oom]


def _profiler_index() -> pl.Expr:
    """The index the profiler's JSON gives: ops with an op line, deallocate / get_device left out."""
    counted = (pl.col("_op_line").is_not_null() & ~pl.col("op_type").is_in(HOUSEKEEPING_OP_TYPES)
               & ~pl.col("mlir_op").fill_null("").is_in(HOUSEKEEPING_MLIR_OPS))
    running = counted.cast(pl.Int64).cum_sum().over("rank") - 1
    return pl.when(counted).then(running).alias("profiler_index")


def _no_memory_problem(op_lines: int, relevant: pl.DataFrame) -> str:
    if relevant.filter(pl.col("kind") == HEADER_OTHER).height:
        return ("the log has only program-level memory states (before/after submit), no per-op ones; "
                "run with TT_RUNTIME_MEMORY_LOG_LEVEL=operation")
    if op_lines:
        return (f"the log has {op_lines:,} 'Executing operation' lines but no memory lines; run with "
                "TT_RUNTIME_MEMORY_LOG_LEVEL=operation (tt-mlir built with TT_RUNTIME_DEBUG=ON)")
    return ("no tt-mlir memory lines ('Device memory state before operation ...' followed by "
            "'Device DRAM memory state: MemoryView{...}') in this log")


def _check_truncation(path: Path, relevant: pl.DataFrame, ops: pl.DataFrame, per_op: pl.DataFrame) -> None:
    """The last op of a rank whose memory block stops short at the end of the file is a cut log."""
    usual = per_op["types"].max() or 0
    last_line = relevant.group_by("rank").agg(pl.col("line_no").max().alias("last"))
    last_op = ops.group_by("rank").agg(pl.col("op_index").max(), pl.col("line_no").max())
    last_op = last_op.join(per_op, on=["rank", "op_index"], how="left").join(last_line, on="rank").with_columns(
        pl.col("types").fill_null(0), pl.coalesce("end", "line_no").alias("end"))
    cut = last_op.filter((pl.col("types") < usual) & (pl.col("end") == pl.col("last")))
    if cut.height:
        row = cut.row(0, named=True)
        raise IngestError(path, f"the log ends inside the memory block of op {row['op_index']} (header at line "
                                f"{row['line_no']}): {row['types']} of {usual} buffer types printed; the file "
                                "looks truncated")


def _missing_type_warnings(path: Path, ops: pl.DataFrame, per_op: pl.DataFrame) -> list[str]:
    usual = per_op["types"].max() or 0
    short = ops.height - per_op.filter(pl.col("types") == usual).height
    if not short:
        return []
    return [f"{path}: {short} ops lack some buffer types in their memory block (kept; those types are "
            "absent for those ops)"]


def _out_of_memory(relevant: pl.DataFrame, ops_so_far: str = "_ops_so_far") -> list[dict[str, Any]]:
    """Each failed allocation once: tt-metal's TT_FATAL prints the message, and the Python exception that carries
    it up prints it again, in the same op (same rank, op, bytes, buffer type and banks), so repeats are counted."""
    oom = relevant.filter(pl.col("kind") == OOM).select(
        "rank", "line_no", (pl.col(ops_so_far) - 1).alias("op_index"),
        pl.col("line").str.extract_groups(_OOM).alias("o"),
    ).unnest("o")
    once = oom.group_by("rank", "op_index", "1", "2", "3", maintain_order=True).agg(
        pl.col("line_no").min(), pl.len().alias("repeats"))
    return [
        {"rank": r["rank"], "op_index": r["op_index"], "line": r["line_no"], "bytes": int(r["1"] or 0),
         "buffer_type": r["2"], "banks": int(r["3"] or 0), "repeats": r["repeats"]}
        for r in once.head(100).iter_rows(named=True)
    ]
