"""The kernel table's rows and columns and the texts beside it, shared by /kernels, /layers and /compare.

Dash-free: rows are plain dicts and column definitions are ag-grid's JSON, so
the page and any export build the same table from the same view.
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis.units import format_ns, time_unit_for, window_span_text
from dashboard.figures.kernels import SHARE_DEFINITION, TOTAL_ONE_RANK, TOTAL_RANK_MEAN, total_rank_sum

WINDOW_RULES = {
    "kernels": "Kernels overlapping the window count; totals include only their time inside it, "
               "per-launch statistics use whole durations",
    "layers": "Layer occurrences overlapping the window count, each with its whole duration",
}
# Numbers in the grid: 4 significant digits, thousands separators (d3 is in dash-ag-grid's function scope).
# assets/grid-formats.js: d3.format(",.4~r") and d3.format(","), with "–" for a missing value.
NUMBER_FORMAT = {"function": "formatSig4(params.value)"}
RATE_DEFINITION = ("Achieved rate: the kernel's estimated FLOPs (bytes moved) over the summed whole durations of "
                   "its launches that have an estimate (tinygrad: Estimates.ops / Estimates.mem, as VIZ's GFLOPS "
                   "and GB/s)")
COUNT_FORMAT = {"function": "formatCount(params.value)"}


def window_text(window: tuple[int, int] | None, origin_ns: int) -> str:
    """`window: 1,200.0–1,500.0 ms (300 ms)`, times from the run's first instant (as on /timeline)."""
    if window is None:
        return ""
    start, end = window
    return f"window: {window_span_text(start, end, origin_ns)} ({format_ns(end - start)})"


def busy_text(busy: pl.DataFrame) -> str:
    """`GPU busy 32.0% of its 1.25 s span` (one rank) or the range over ranks (gpu_busy.gpu_busy rows)."""
    shares = busy.drop_nulls("busy_share")
    if shares.height == 0:
        return ""
    low, high = shares.get_column("busy_share").min(), shares.get_column("busy_share").max()
    if shares.height == 1:
        rank, span = shares.get_column("rank")[0], shares.get_column("span_ns")[0]
        return f"GPU busy {low:.1%} of its {format_ns(span)} span (rank {rank})"
    spans = shares.get_column("span_ns")
    share = f"{low:.1%}" if f"{low:.1%}" == f"{high:.1%}" else f"{low * 100:.1f}–{high:.1%}"
    span = (format_ns(spans.min()) if format_ns(spans.min()) == format_ns(spans.max())
            else f"{format_ns(spans.min())}–{format_ns(spans.max())}")
    return f"GPU busy {share} of span over {shares.height} ranks (span {span} per rank)"


def _unit_columns(summary: pl.DataFrame) -> tuple[tuple[float, str], tuple[float, str]]:
    total = summary.get_column("total_ns").max() if summary.height else 0
    duration = summary.get_column("p95_ns").max() if summary.height else 0
    return time_unit_for(total or 0), time_unit_for(duration or 0)


def kernel_rows(summary: pl.DataFrame, spread: pl.DataFrame | None = None) -> tuple[list[dict], dict[str, str]]:
    """Table rows (numbers in the units the headers name) and those units.

    `total` is always the sum over the ranks shown; with `spread` (several ranks)
    `rank_mean` is the mean per rank (what the bar chart draws), `rank_min` /
    `rank_max` its extremes.
    """
    (total_factor, total_unit), (duration_factor, duration_unit) = _unit_columns(summary)
    frame = summary
    if spread is not None:
        frame = frame.join(spread.select("group", "rank_min_ns", "rank_mean_ns", "rank_max_ns"), on="group",
                           how="left", maintain_order="left")
    columns = [
        "key", "group", "label", "count", "kernels", "grid", "block", "registers",
        (pl.col("total_ns") / total_factor).round(4).alias("total"),
        (pl.col("share") * 100).round(2).alias("share"),
        (pl.col("shared_memory") / 1024).round(1).alias("shared_kib"),
        *[(pl.col(f"{s}_ns") / duration_factor).round(4).alias(s) for s in ("mean", "median", "p95", "min", "max")],
    ]
    if spread is not None:
        columns += [(pl.col(f"rank_{s}_ns") / total_factor).round(4).alias(f"rank_{s}") for s in ("min", "mean", "max")]
    units = {"total": total_unit, "duration": duration_unit}
    # Achieved rates where the source estimates FLOPs / bytes per launch (tinygrad): two more columns.
    rated = [rate for rate in ("gflop_s", "gbyte_s")
             if rate in frame.columns and frame.get_column(rate).is_not_null().any()]
    columns += [pl.col(rate) for rate in rated]  # the grid shows 4 significant digits
    units.update({rate: "1" for rate in rated})
    return frame.select(columns).to_dicts(), units


def kernel_column_defs(group: str, units: dict[str, str], spread: bool = False, ranks: int = 1,
                       total: str = TOTAL_ONE_RANK) -> list[dict]:
    """ag-grid columns; op / layer rows show how many kernels they hold instead of launch shapes.

    The headers carry the page's definitions (figures.kernels): with several ranks
    both the sum over ranks and the mean per rank (the bar chart's value) are shown.
    """
    noun = {"name": "Kernel", "op": "Launching op", "layer": "Layer"}.get(group, group)
    number = {"type": "numericColumn", "filter": "agNumberColumnFilter", "valueFormatter": NUMBER_FORMAT,
              "minWidth": 120}
    total_header = total_rank_sum(ranks) if spread else total
    # The chart's short label leads (it names what tells kernels apart); the full demangled name is a
    # column of its own and the only name the CSV carries (kernel_table's export keys).
    columns: list[dict] = [
        {"field": "label", "headerName": noun, "tooltipField": "group", "pinned": "left", "minWidth": 300,
         "filter": "agTextColumnFilter"},
        {"field": "count", "headerName": "launches", **number, "valueFormatter": COUNT_FORMAT},
        {"field": "total", "headerName": f"{total_header} ({units['total']})", "sort": "desc", **number,
         "minWidth": 170 if spread else 140},
    ]
    if spread:
        columns.append({"field": "rank_mean", "headerName": f"{TOTAL_RANK_MEAN} ({units['total']})", **number,
                        "minWidth": 200})
    columns.append({"field": "share", "headerName": "share (%)", "headerTooltip": SHARE_DEFINITION, **number})
    columns += [{"field": rate, "headerName": header, "headerTooltip": RATE_DEFINITION, **number}
                for rate, header in (("gflop_s", "GFLOP/s"), ("gbyte_s", "GB/s")) if units.get(rate)]
    columns += [{"field": s, "headerName": f"{s} per launch ({units['duration']})", **number, "minWidth": 150}
                for s in ("mean", "median", "p95", "min", "max")]
    if spread:
        columns += [{"field": "rank_min", "headerName": f"rank min total ({units['total']})", **number},
                    {"field": "rank_max", "headerName": f"rank max total ({units['total']})", **number}]
    if group == "name":
        columns += [{"field": "grid", "headerName": "grid", "filter": "agTextColumnFilter"},
                    {"field": "block", "headerName": "block", "filter": "agTextColumnFilter"},
                    {"field": "registers", "headerName": "registers", **number},
                    {"field": "shared_kib", "headerName": "shared mem (KiB)", **number}]
    else:
        columns.append({"field": "kernels", "headerName": "distinct kernels", **number})
    columns.append({"field": "group", "headerName": "full name", "tooltipField": "group", "minWidth": 480,
                    "filter": "agTextColumnFilter"})
    return columns


def csv_columns(column_defs: list[dict]) -> list[str]:
    """The columns a table's CSV holds: every one but the (abbreviated) chart label."""
    return [column["field"] for column in column_defs if column.get("field") and column["field"] != "label"]
