"""Which compiler passes grew the IR most: op and line growth per pass, per compile, and its finding.

A pass's growth = ops after it − ops before it, read from consecutive
snapshots of the same IR unit (compile, anchor, symbol: a function-anchored
dump holds only that function, so it is compared with its own kind). Who ran
between two snapshots: an After/Failed dump names the pass that just ran; a
Before dump follows the pass the previous Before dump was about to run (after
an After dump the passes in between are unknown, so that pair is not
attributed; nor is a pair with another unit's snapshot between them, since
more than one pass ran). SoftwarePipeliner internal snapshots and stage files are not
pass boundaries and are left out.

The finding compares passes within one stage: a conversion into the next
stage (TTGIR -> LLVM dialect) always multiplies the op count, since one
high-level op becomes many low-level ones, so it is reported in the table
(`same_stage` false) but never named as the pass that grew the IR.
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis.finding import Finding, view_href

IR_GROWTH_MIN_OPS = 10  # a pass adding fewer ops than this is never a finding
IR_GROWTH_MIN_SHARE = 0.25  # ... nor one whose added ops are under 25 % of the IR after it

THRESHOLD = ("a pass within one stage (conversions to the next stage always grow it) adding at least "
             f"{IR_GROWTH_MIN_OPS} operations and at least {IR_GROWTH_MIN_SHARE:.0%} "
             "of the IR after it (ops after − ops before the pass)")

_UNIT = ("compile", "anchor", "symbol")
GROWTH_SCHEMA = {"compile": pl.Int64, "kernel": pl.String, "pass_name": pl.String, "stage": pl.String,
                 "from_step": pl.Int32, "step": pl.Int32, "ops_before": pl.Int64, "ops_after": pl.Int64,
                 "ops_growth": pl.Int64, "lines_before": pl.Int64, "lines_after": pl.Int64,
                 "lines_growth": pl.Int64, "same_stage": pl.Boolean}


def pass_growth(ir_steps: pl.DataFrame) -> pl.DataFrame:
    """One row per attributed pass run: ops and lines before and after it, largest growth first per compile."""
    # 0 ops in a non-empty body is a dump the op counter cannot read (LLVM's slot-indexed MIR prints), not an
    # empty IR: such snapshots are left out, so the passes around them are not attributed either.
    snapshots = ir_steps.filter(pl.col("kind").is_in(["before", "after", "failed"])).sort("compile", "step")
    snapshots = snapshots.with_columns(pl.int_range(pl.len()).over("compile").alias("position")).filter(
        pl.col("ops").is_not_null() & ((pl.col("ops") > 0) | (pl.col("lines").fill_null(0) == 0)))
    if snapshots.height == 0:
        return pl.DataFrame(schema=GROWTH_SCHEMA)
    paired = snapshots.with_columns(
        pl.col("position").shift(1).over(_UNIT).alias("previous_position"),
        pl.col("step").shift(1).over(_UNIT).alias("from_step"),
        pl.col("ops").shift(1).over(_UNIT).alias("ops_before"),
        pl.col("lines").shift(1).over(_UNIT).alias("lines_before"),
        pl.col("kind").shift(1).over(_UNIT).alias("previous_kind"),
        pl.col("pass_name").shift(1).over(_UNIT).alias("previous_pass"),
        (pl.col("stage").shift(1).over(_UNIT) == pl.col("stage")).alias("same_stage"),
    ).filter(pl.col("from_step").is_not_null()
             # another unit's snapshot in between: more than one pass ran, so none is attributed
             & (pl.col("position") - pl.col("previous_position") == 1))
    ran = (pl.when(pl.col("kind") != "before").then(pl.col("pass_name"))
           .when(pl.col("previous_kind") == "before").then(pl.col("previous_pass")))
    return paired.with_columns(ran.alias("pass_name")).drop_nulls("pass_name").select(
        "compile", "kernel", "pass_name", "stage", pl.col("from_step").cast(pl.Int32), pl.col("step").cast(pl.Int32),
        "ops_before", pl.col("ops").alias("ops_after"), (pl.col("ops") - pl.col("ops_before")).alias("ops_growth"),
        "lines_before", pl.col("lines").alias("lines_after"),
        (pl.col("lines") - pl.col("lines_before")).alias("lines_growth"), "same_stage",
    ).cast(GROWTH_SCHEMA).sort(["compile", "ops_growth", "step"], descending=[False, True, False])


def top_growth(growth: pl.DataFrame) -> pl.DataFrame:
    """Per compile, the pass run within one stage that added the most ops (earliest step on a tie)."""
    return growth.filter(pl.col("same_stage")).group_by("compile", maintain_order=True).first().sort("compile")


def ir_findings(run_id: str, ir_steps: pl.DataFrame) -> list[Finding]:
    """Per compile, the pass that grew the IR most, when it crosses IR_GROWTH_MIN_OPS and IR_GROWTH_MIN_SHARE."""
    found: list[Finding] = []
    for row in top_growth(pass_growth(ir_steps)).iter_rows(named=True):
        added, after = row["ops_growth"], row["ops_after"]
        share = added / after if after else 0.0
        if added < IR_GROWTH_MIN_OPS or share < IR_GROWTH_MIN_SHARE:
            continue
        found.append(Finding(
            key=f"compiler:growth:{row['compile']}",
            title=f"{row['pass_name']} grew {row['kernel']} (compile {row['compile']}) from {row['ops_before']} "
                  f"to {after} ops (+{added})",
            share=share, at_stake_ops=added, share_of=f"the ops after {row['pass_name']} ({after})",
            url=view_href("/compiler", run_id, compile=row["compile"], step=row["step"], cmp=row["from_step"]),
            advice="check what the pass expanded (unrolled loops, pipelining stages, layout conversions): "
                   "fewer stages, smaller blocks or fewer num_warps shrink what later passes must handle",
            informational=True,  # compile time only: the kernel's runtime is not at stake
            evidence={"would save": f"{added} IR ops of compile work; no runtime at stake",
                      "ops before": row["ops_before"], "ops after": after, "ops added": added,
                      "lines before": row["lines_before"], "lines after": row["lines_after"],
                      "lines added": row["lines_growth"], "stage": row["stage"],
                      "steps compared": f"{row['from_step']} → {row['step']}"}))
    return found
