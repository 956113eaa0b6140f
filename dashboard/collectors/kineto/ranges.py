"""Ranges: nesting, pass, profiler step, layer and FLOPs, all from the trace itself.

* pass and step: `passes` (backward / optimizer / forward by the
  enclosing ranges, never by the position on the timeline).
* forward op of a backward node: among the non-backward ranges with the same
  `Sequence number`, the one that ends last before the backward node starts;
  nested ops share a number and the outermost ends last, no-grad ops reuse
  the number *before* the op that takes it.
* layer: the innermost enclosing module; a backward node takes the layer of
  its forward op, and the ops inside it inherit that.
* FLOPs (`dashboard.collectors.kineto.flops`) are inclusive: a range with a formula
  gets its own value; any other range gets the sum over the outermost
  computable ranges inside it (a layer's FLOPs), or null when there are none.
"""

from __future__ import annotations

import re

import polars as pl

from dashboard.collectors.kineto.flops import flops_from_shapes
from dashboard.collectors.kineto.nesting import PARENT, ROW, flag_inherited, inherit, nest
from dashboard.collectors.kineto.passes import (
    ANNOTATIONS,
    PASS_FEATURES,
    TRACK,
    backward_roots,
    pass_name_features,
    range_passes,
    ranges_step,
)

OP_CATEGORIES = ("cpu_op", "user_annotation", "profiler_step")
_ANNOTATIONS = ANNOTATIONS
_PRIORITY = {"profiler_step": 0, "user_annotation": 1, "gpu_user_annotation": 1, "python_function": 2, "cpu_op": 3}
# DOTALL and \Z: the first `)` followed by `::` (or the end) ends the class name, and `.*` then reaches
# the end at once; with `$` a newline made every later `)` a new try: quadratic (issue 14).
_MODULE_PART = re.compile(r"^(\w+)\((.*?)\)(?:::.*)?\Z", re.S)


def module_path(hierarchy: str | None) -> str | None:
    """`TOP(Net)::forward.encoder(Encoder)::forward.fc1(Linear)::forward.` -> `encoder.fc1`."""
    if not hierarchy:
        return None
    names: list[str] = []
    top = None
    for part in hierarchy.split("."):
        match = _MODULE_PART.match(part.strip())
        if match is None:
            continue
        instance, kind = match.groups()
        if instance == "TOP":
            top = kind
        elif instance != "SELF":
            names.append(instance)
    return ".".join(names) or top


_NAME_FEATURES = (*PASS_FEATURES, "_nn_module", "_forward_of", "_class_of")


def _with_name_features(frame: pl.DataFrame) -> pl.DataFrame:
    """String tests of `name`, run once per distinct name and joined back.

    A trace has a few hundred names over millions of ranges: regexes per row
    took ~0.4 s of a 1 M-op ingest, per name they take ~1 ms plus one join.
    """
    name = pl.col("name")
    features = frame.select(name.unique()).with_columns(
        *pass_name_features(name),
        name.str.extract(r"^nn\.Module: (.+)$", 1).alias("_nn_module"),
        name.str.extract(r"^([A-Za-z_]\w*)\.forward$", 1).alias("_forward_of"),
        name.str.extract(r"^<class '(?:[^']*\.)?([^.']+)'>$", 1).alias("_class_of"),
    )
    per_row = frame.select("name").join(features, on="name", how="left", maintain_order="left", nulls_equal=True)
    return frame.hstack(per_row.drop("name").get_columns())


def _own_layer(frame: pl.DataFrame) -> pl.DataFrame:
    distinct = frame.get_column("module_hierarchy").drop_nulls().unique()
    paths = pl.Series([module_path(text) for text in distinct], dtype=pl.String)
    hierarchy = pl.col("module_hierarchy").replace_strict(distinct, paths, default=None, return_dtype=pl.String)
    module = pl.coalesce(
        pl.col("_nn_module"),
        pl.when(pl.col("category").is_in(_ANNOTATIONS)).then(pl.col("_forward_of")),
        pl.col("_class_of"),
    )
    return frame.with_columns(module.alias("_module"), hierarchy.alias("_hierarchy_layer"))


def prepare(ranges: pl.DataFrame) -> pl.DataFrame:
    """Categories (profiler steps), tie-break order, then nesting per thread."""
    if ranges.height == 0:
        return ranges
    # The GPU projection of a step (gpu_user_annotation) keeps its category, so
    # that steps are counted once, on the CPU side.
    step = pl.col("name").str.starts_with("ProfilerStep#") & pl.col("category").is_in(["cpu_op", "user_annotation"])
    ranges = ranges.with_columns(
        pl.when(step).then(pl.lit("profiler_step")).otherwise(pl.col("category")).alias("category")
    ).with_columns(
        pl.col("category").replace_strict(_PRIORITY, default=4, return_dtype=pl.Int8).alias("_priority"),
    )
    # Equal intervals: steps outside annotations outside Python frames outside
    # ops; then External id, which grows as ops start, so a parent comes first.
    return nest(ranges, TRACK, order=["_priority", "external_id", "python_id"])


def _sequence_links(frame: pl.DataFrame, backward: pl.Series) -> pl.DataFrame:
    """(row of a backward node, row of its forward op) by `Sequence number`."""
    node = (pl.col("fwd_thread") > 0).fill_null(False) | pl.col("_engine_node") | pl.col("_backward_op_name")
    with_flag = frame.select(
        "file", "sequence", "start_ns", "end_ns", ROW, "fwd_thread", "_engine_node", "_backward_op_name"
    ).with_columns(backward.alias("_backward"))
    nodes = (
        with_flag.filter(pl.col("_backward") & pl.col("sequence").is_not_null() & node)
        .select("file", "sequence", "start_ns", ROW)
        .sort("file", "sequence", "start_ns")
    )
    forwards = (
        with_flag.filter(~pl.col("_backward") & pl.col("sequence").is_not_null())
        .select("file", "sequence", "end_ns", pl.col(ROW).alias("fwd_row"))
        .sort("file", "sequence", "end_ns", "fwd_row")
    )
    if nodes.height == 0 or forwards.height == 0:
        return pl.DataFrame(schema={ROW: pl.Int64, "fwd_row": pl.Int64})
    linked = nodes.join_asof(
        forwards,
        left_on="start_ns",
        right_on="end_ns",
        by=["file", "sequence"],
        strategy="backward",
        check_sortedness=False,
    )
    return linked.select(ROW, "fwd_row").drop_nulls()


def _flow_links(frame: pl.DataFrame, flows: pl.DataFrame) -> pl.DataFrame:
    """(backward row, forward row) from `fwdbwd` flows bound to the outermost range at their ts."""
    if flows.height == 0:
        return pl.DataFrame(schema={ROW: pl.Int64, "fwd_row": pl.Int64})
    bound = (
        flows.select("file", "ph", "flow_id", "pid_key", "tid_key", "start_ns")
        .join(frame.select(*TRACK, "start_ns", "depth", ROW), on=[*TRACK, "start_ns"], how="inner")
        .sort("depth", ROW)
        .group_by("file", "ph", "flow_id", "pid_key", "tid_key", "start_ns", maintain_order=True)
        .first()
    )
    starts = bound.filter(pl.col("ph") == "s").select("file", "flow_id", pl.col(ROW).alias("fwd_row"))
    finishes = bound.filter(pl.col("ph") == "f").select("file", "flow_id", ROW)
    starts = starts.unique(["file", "flow_id"], keep="first", maintain_order=True)
    return finishes.join(starts, on=["file", "flow_id"], how="inner").select(ROW, "fwd_row")


def _forward_evidence(frame: pl.DataFrame, links: pl.DataFrame) -> pl.Series:
    """Ranges that show their thread runs forward code: forward ops of backward nodes, modules, forward marks."""
    return (
        frame.get_column(ROW).is_in(links.get_column("fwd_row").implode())
        | frame.get_column("_module").is_not_null()
        | frame.get_column("_hierarchy_layer").is_not_null()
        | frame.select(pl.col("category").is_in(_ANNOTATIONS) & pl.col("_forward_word")).to_series()
    )


def _layers(frame: pl.DataFrame, parent: pl.Series, links: pl.DataFrame) -> pl.Series:
    """Innermost module per range; a backward node takes its forward op's layer."""
    own_layer = frame.get_column("_module").fill_null(frame.get_column("_hierarchy_layer"))
    forward_layer = inherit(own_layer, parent)
    forward_op = frame.select(ROW).join(links, on=ROW, how="left", maintain_order="left").get_column("fwd_row")
    return inherit(own_layer.fill_null(forward_layer.gather(forward_op)), parent)


def annotate(nested: pl.DataFrame, flows: pl.DataFrame) -> pl.DataFrame:
    """Add `pass`, `step`, `layer`, `own_flops`, `flops_inclusive` and `flop_owner` to nested ranges."""
    if nested.height == 0:
        return nested
    parent = nested.get_column(PARENT)
    featured = _with_name_features(nested)
    backward = flag_inherited(backward_roots(featured), parent)
    links = _sequence_links(featured, backward)
    flow_links = _flow_links(nested, flows)
    links = pl.concat([links, flow_links.join(links, on=ROW, how="anti")]).unique(ROW, keep="first")
    frame = _own_layer(featured)
    own_flops, inclusive, owner = _flops(frame, parent)
    passes = range_passes(frame, parent, _forward_evidence(frame, links))
    return frame.with_columns(
        *passes.get_columns(),
        ranges_step(frame).alias("step"),
        _layers(frame, parent, links).alias("layer"),
        own_flops.alias("own_flops"),
        inclusive.alias("flops_inclusive"),
        owner.alias("flop_owner"),
    ).drop("_module", "_hierarchy_layer", *_NAME_FEATURES)


def _flops(frame: pl.DataFrame, parent: pl.Series) -> tuple[pl.Series, pl.Series, pl.Series]:
    """Own FLOPs, inclusive FLOPs and, per row, the outermost computable range enclosing it."""
    own = flops_from_shapes(frame.select("name", "input_dims", "concrete_inputs", "flops"))
    computable = own.is_not_null()
    rows = frame.get_column(ROW)
    if not computable.any():
        empty = pl.Series([None], dtype=pl.Float64).new_from_index(0, frame.height)
        return own, empty, pl.Series([None], dtype=pl.Int64).new_from_index(0, frame.height)
    covered_above = flag_inherited(computable, parent).gather(parent).fill_null(False)
    outermost = computable & ~covered_above
    marker = rows.to_frame().select(pl.when(pl.lit(outermost)).then(pl.col(ROW))).to_series()
    owner = inherit(marker, parent)

    level = pl.DataFrame({ROW: rows.filter(outermost), "flops": own.filter(outermost)})
    totals = [level]
    while level.height:
        level = (
            level.with_columns(parent.gather(level.get_column(ROW)).alias(ROW))
            .drop_nulls(ROW)
            .group_by(ROW)
            .agg(pl.col("flops").sum())
        )
        totals.append(level)
    summed = pl.concat(totals).group_by(ROW).agg(pl.col("flops").sum())
    inclusive = (
        rows.to_frame()
        .join(summed, on=ROW, how="left", maintain_order="left")
        .get_column("flops")
    )
    return own, own.fill_null(inclusive), owner
