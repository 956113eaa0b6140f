"""The frames one group of decoded Kineto events becomes, by kind: GPU activity, API calls, ranges, flows and
memory instants (times still in µs). `columns.RawColumns` pulls each attribute out as a typed series."""

from __future__ import annotations

import polars as pl

from dashboard.collectors.kineto.columns import CONV_NAMES, MEMORY_NAME, RawColumns


def _common(columns: RawColumns, categorical_name: bool = False) -> list[pl.Series]:
    """Name, times and ids of every event; the name as a categorical for `CATEGORICAL_NAMES` kinds."""
    pid_key, pid_num = columns.ids("pid")
    tid_key, tid_num = columns.ids("tid")
    name = columns.text("name")
    return [
        name.cast(pl.Categorical) if categorical_name else name,
        columns.real("ts"),
        columns.real("dur"),
        pid_key.alias("pid_key"),
        pid_num.alias("pid_num"),
        tid_key.alias("tid_key"),
        tid_num.alias("tid_num"),
    ]


def _external_id(columns: RawColumns) -> pl.Series:
    """`External id`, or the legacy lower-case `external id` when a group has none."""
    modern = columns.integer("args.external_id")
    if modern.null_count() == len(columns):
        modern = columns.integer("args.external_id_legacy")
    return modern.alias("external_id")


def _constant(name: str, value: str | None, height: int) -> pl.Series:
    return pl.Series(name, [value], dtype=pl.String).new_from_index(0, height)


# Kinds whose `name` stays categorical until the tables are built: a million kernels carry a few hundred
# distinct names, often long templates (25 of the 61 MB of a 300 k-kernel trace's GPU events as strings,
# 1 as a categorical, in every copy the ingest makes until the kernels table). Op names stay strings:
# they are short, and the range code matches them as text.
CATEGORICAL_NAMES = ("gpu", "api")


def gpu_frame(columns: RawColumns, category: str) -> pl.DataFrame:
    """Kernels, copies and memsets with the args the canonical tables need."""
    series = [
        *_common(columns, categorical_name=True),
        _constant("category", category, len(columns)),
        columns.integer("args.correlation"),
        _external_id(columns),
        # device and stream are the event's pid and tid (args.device / args.stream
        # repeat them), which saves two columns per GPU event
    ]
    if category == "kernel":
        series += [
            *columns.triple("args.grid", "grid"),
            *columns.triple("args.block", "block"),
            columns.integer("args.registers"),
            columns.integer("args.shared_memory"),
        ]
    else:
        series.append(columns.integer("args.bytes"))
    return pl.DataFrame(series)


def api_frame(columns: RawColumns, category: str) -> pl.DataFrame:
    """CUDA runtime / driver calls."""
    return pl.DataFrame(
        [
            *_common(columns, categorical_name=True),
            _constant("category", category, len(columns)),
            columns.integer("args.correlation"),
            _external_id(columns),
        ]
    )


def range_frame(columns: RawColumns, category: str | None) -> pl.DataFrame:
    """CPU ops, annotations, Python frames and any unknown category of interval."""
    common = _common(columns)
    names = common[0]
    height = len(columns)
    python_id = (
        columns.integer("args.python_id")
        if category == "python_function"
        else pl.Series("python_id", [None], dtype=pl.Int64).new_from_index(0, height)
    )
    # Every range's input shapes and dtypes (what `record_shapes=True` wrote), as raw JSON until the ranges
    # table is built (`shapes`); the concrete inputs only for convolutions, whose FLOPs need their
    # stride / padding / dilation: a few of a million ops.
    convolutions = names.is_in(list(CONV_NAMES)).arg_true()
    return pl.DataFrame(
        [
            *common,
            _constant("category", category if category is not None else "uncategorised", height),
            _external_id(columns),
            columns.integer("args.sequence"),
            columns.integer("args.fwd_thread"),
            python_id,
            columns.text("args.module_hierarchy"),
            columns.real("args.flops"),
            columns.json_texts("args.input_dims"),
            columns.json_texts("args.input_types"),
            columns.raw_text("concrete_inputs", convolutions),
        ]
    )


def flow_frame(columns: RawColumns) -> pl.DataFrame:
    """`fwdbwd` flow starts and finishes: they tie a forward op to its backward op."""
    pid_key, _ = columns.ids("pid")
    tid_key, _ = columns.ids("tid")
    return pl.DataFrame(
        [
            columns.text("ph"),
            columns.integer("id").alias("flow_id"),
            pid_key.alias("pid_key"),
            tid_key.alias("tid_key"),
            columns.real("ts"),
        ]
    )


def memory_frame(columns: RawColumns) -> pl.DataFrame:
    """`[memory]` instants of one instant group (other instants are left out): device, address, sizes."""
    pid_key, _ = columns.ids("pid")
    tid_key, _ = columns.ids("tid")
    frame = pl.DataFrame(
        [
            columns.text("name"),
            columns.real("ts"),
            pid_key.alias("pid_key"),
            tid_key.alias("tid_key"),
            columns.integer("args.device_type"),
            columns.integer("args.device_id"),
            columns.integer("args.addr"),
            columns.integer("args.mem_bytes"),
            columns.integer("args.total_allocated"),
            columns.integer("args.total_reserved"),
        ]
    )
    return frame.filter(pl.col("name") == MEMORY_NAME).drop("name")
