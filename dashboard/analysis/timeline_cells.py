"""Per-window cells of the timeline's aggregated lanes, and how many events each view draws one by one.

A view's bucket count shrinks as lanes are added so that cells + series
points stay under MARK_BUDGET whatever the zoom; lanes with few events in the
window (all of them together at most EXACT_BUDGET) are drawn event by event
(`choose_exact`), every other lane as one cell per non-empty bucket
(`lane_cell_arrays`, joined into one frame by `named_cells`).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl

from dashboard.analysis.timeline_index import IntervalIndex, dominant_per_bucket

MARK_BUDGET = 20_000  # cells + series points of one view
MAX_BUCKETS = 1_500
MIN_BUCKETS = 100
DENSE_EVENTS_PER_BUCKET = 8  # above this, a bucket's dominant name is estimated by sampling
SAMPLES_PER_BUCKET = 32
EXACT_BUDGET = 2_000  # events drawn one by one in one view (SVG bars: ~50 ms per 1000 to draw, 2 cores)
# A lane whose events start more than this many to a bucket (counting buckets where any starts) is summarised
# even when few: its events are narrower than a bucket (~1-3 px) and would be drawn on top of one another.
CROWDED_STARTS_PER_BUCKET = 3.0

CELL_SCHEMA = {
    "lane": pl.Int32, "bucket": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64, "busy": pl.Float64,
    "events": pl.Int64, "name": pl.String, "kind": pl.String, "short": pl.String, "klass": pl.String,
    "selected_busy": pl.Float64,
    "selected_name": pl.String, "selected_short": pl.String,
}


def bucket_count(rows: int, span_ns: int) -> int:
    """Buckets per row so that all rows together stay within MARK_BUDGET (never narrower than 1 ns)."""
    per_row = MARK_BUDGET // max(rows, 1)
    return int(max(1, min(MAX_BUCKETS, max(MIN_BUCKETS, per_row), span_ns)))


def choose_exact(counts: dict[object, int], buckets: int, budget: int = EXACT_BUDGET) -> set[object]:
    """The rows drawn event by event: those with at most `exact_limit` events in the window."""
    limit = exact_limit(list(counts.values()), buckets, budget)
    return {row for row, count in counts.items() if 0 < count <= limit}


def crowded(starts_per_bucket: np.ndarray) -> bool:
    """Whether a lane's events in a window, drawn one by one, would mostly cover one another.

    `starts_per_bucket`: how many events start in each bucket of the window. A
    lane's bars at whole-run zoom are often clustered slivers (a step's ops);
    its buckets then show the same picture with the time and count of each,
    at a fraction of the cost of drawing every bar.
    """
    occupied = np.count_nonzero(starts_per_bucket)
    return occupied > 0 and int(starts_per_bucket.sum()) > CROWDED_STARTS_PER_BUCKET * occupied


def exact_limit(counts: list[int], buckets: int, budget: int = EXACT_BUDGET) -> int:
    """Most events a row may hold in the window and still be drawn event by event.

    The largest threshold t (at most `buckets`: one bar per pixel bucket on
    average) such that the rows holding at most t events hold at most
    `budget` events together. One threshold for every row keeps similar lanes
    alike, and the emptiest rows are drawn exactly first.
    """
    limit, total = 0, 0
    for count, rows in sorted(Counter(c for c in counts if c > 0).items()):
        if count > buckets or total + count * rows > budget:  # rows with equal counts: all or none
            break
        total += count * rows
        limit = count
    return limit


def lane_cell_arrays(index: IntervalIndex, edges: np.ndarray, lane: int,
                     selected: list[IntervalIndex]) -> dict[str, np.ndarray]:
    """Per non-empty bucket of one lane: busy fraction, events starting, dominant code (column -> array).

    Busy fractions and event counts are exact. The dominant code (the name
    holding most time in a bucket) is exact while the window holds at most
    DENSE_EVENTS_PER_BUCKET events per bucket, else it is estimated from
    SAMPLES_PER_BUCKET instants per bucket (see IntervalIndex).
    `selected` holds one index per selected kernel present on the lane; their
    busy fraction and dominant code per bucket are exact. Arrays, not a frame:
    `timeline_view` joins every lane's arrays into one frame (`_named_cells`).
    """
    width = np.diff(edges).astype(np.float64)
    n_buckets, n_codes = len(width), len(index.code_table)
    busy = index.busy_ns(edges) / width
    starting = index.starts_per_bucket(edges)
    if index.count_overlapping(int(edges[0]), int(edges[-1])) <= DENSE_EVENTS_PER_BUCKET * n_buckets:
        pieces = index.bucket_contributions(edges)
    else:
        pieces = index.sampled_contributions(edges, SAMPLES_PER_BUCKET)
    best, _ = dominant_per_bucket(*pieces, n_buckets, n_codes)
    best = np.where(best >= 0, best, index.first_starting(edges))  # a bucket no sample hit
    best_global = np.append(index.code_table, -1)[best]  # local -1 maps to global -1
    selected_busy = np.zeros(n_buckets)
    selected_code = np.full(n_buckets, -1, dtype=np.int64)
    if selected:
        per_kernel = np.stack([kernel.busy_ns(edges) for kernel in selected]).astype(np.float64)
        selected_busy = per_kernel.sum(axis=0) / width
        heaviest = per_kernel.argmax(axis=0)
        codes = np.array([int(kernel.codes[0]) for kernel in selected], dtype=np.int64)
        selected_code = np.where(per_kernel.max(axis=0) > 0, codes[heaviest], -1)
    keep = np.flatnonzero((busy > 0) | (starting > 0))
    return {
        "lane": np.full(len(keep), lane, dtype=np.int32),
        "bucket": keep.astype(np.int32),
        "start_ns": edges[:-1][keep],
        "end_ns": edges[1:][keep],
        "busy": np.minimum(busy[keep], 1.0),
        "events": starting[keep].astype(np.int64),
        "code": best_global[keep],
        "selected_busy": np.minimum(selected_busy[keep], 1.0),
        "selected_code": selected_code[keep],
    }


def named_cells(parts: list[dict[str, np.ndarray]], names: pl.DataFrame) -> pl.DataFrame:
    """All lanes' cells in one frame, with the names their codes stand for (one gather per column)."""
    if not parts:
        return pl.DataFrame(schema=CELL_SCHEMA)
    columns = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    missing = names.height  # code -1 (no name) gathers the null appended below
    code = pl.Series(np.where(columns["code"] >= 0, columns["code"], missing))
    chosen = pl.Series(np.where(columns["selected_code"] >= 0, columns["selected_code"], missing))
    lookup = {column: pl.concat([names.get_column(column), pl.Series([None], dtype=pl.String)])
              for column in ("name", "kind", "short", "klass")}
    frame = pl.DataFrame({key: value for key, value in columns.items() if not key.endswith("code")})
    return frame.with_columns(
        lookup["name"].gather(code).alias("name"), lookup["kind"].gather(code).alias("kind"),
        lookup["short"].gather(code).alias("short"), lookup["klass"].gather(code).alias("klass"),
        lookup["name"].gather(chosen).alias("selected_name"),
        lookup["short"].gather(chosen).alias("selected_short"),
    ).select(list(CELL_SCHEMA)).cast(CELL_SCHEMA)  # type: ignore[arg-type]
