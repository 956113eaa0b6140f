"""Window queries over the intervals of one timeline lane in O(log n).

A lane's intervals (kernels of one stream, ranges of one thread at one depth)
are kept as time-sorted numpy arrays, built once per run. Every query a view
needs then costs a few `np.searchsorted` calls plus work proportional to the
events *inside* the window, never a scan of the whole run:

- how many intervals overlap a window (the exact/aggregated switch);
- the covered time of each pixel bucket, exactly, from prefix sums;
- the dominant name of each bucket;
- the intervals themselves, when few enough to draw one by one.

Covered time uses this identity: the time intervals spend in [origin, x) is
    C(x) = sum_{e_i < x} e_i + x * (#{s_i < x} - #{e_i < x}) - sum_{s_i < x} s_i
so with starts and ends each sorted and prefix-summed, C at every bucket edge
is two binary searches, and a bucket's busy time is C(right) - C(left), with
no approximation even for intervals spanning many buckets. Times are kept
relative to the lane's first start so the int64 prefix sums cannot overflow
for any realistic run (n * span < 9.2e18 ns, e.g. 10 M events over 10 days).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Above this many (bucket x name) cells the dominant name is found by sorting
# instead of a dense bincount table.
_DENSE_TABLE_LIMIT = 4_000_000


def bucket_edges(start_ns: int, end_ns: int, buckets: int) -> np.ndarray:
    """`buckets + 1` int64 edges splitting [start_ns, end_ns) as evenly as integers allow."""
    span = int(end_ns) - int(start_ns)
    if span <= 0 or buckets <= 0:
        raise ValueError(f"need a non-empty window and at least one bucket, got {start_ns}..{end_ns}, {buckets}")
    steps = np.arange(buckets + 1, dtype=np.int64)
    # (span * k) // buckets without overflow: span < 2^63 / buckets for any run shorter than ~70 days.
    return np.int64(start_ns) + (steps * np.int64(span)) // np.int64(buckets)


@dataclass(frozen=True)
class IntervalIndex:
    """The intervals of one lane, sorted by start, with prefix sums for coverage."""

    starts: np.ndarray  # int64, ascending
    ends: np.ndarray  # int64, in start order
    codes: np.ndarray  # int64 global name code per interval, in start order
    rows: np.ndarray  # int64 position of each interval in the source frame, in start order
    sorted_ends: np.ndarray  # int64, ascending
    start_prefix: np.ndarray  # int64, [0, cumsum(starts - origin)]
    end_prefix: np.ndarray  # int64, [0, cumsum(sorted_ends - origin)]
    local_codes: np.ndarray  # int64 lane-local dense code per interval (0..len(code_table)-1)
    code_table: np.ndarray  # int64 global code of each local code
    origin: int
    max_duration: int

    @classmethod
    def build(cls, starts: np.ndarray, ends: np.ndarray, codes: np.ndarray, rows: np.ndarray) -> IntervalIndex:
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.maximum(np.asarray(ends, dtype=np.int64), starts)  # a negative duration is an empty interval
        codes = np.asarray(codes, dtype=np.int64)
        rows = np.asarray(rows, dtype=np.int64)
        if len(starts) > 1 and not (starts[1:] >= starts[:-1]).all():
            order = np.argsort(starts, kind="stable")
            starts, ends, codes, rows = starts[order], ends[order], codes[order], rows[order]
        origin = int(starts[0]) if len(starts) else 0
        # Ends of time-sorted events are nearly sorted already: a stable (merge) sort is ~linear there.
        sorted_ends = np.sort(ends, kind="stable")
        # Dense lane-local codes by table lookup: linear, unlike np.unique's sort.
        present = np.zeros(int(codes.max()) + 1 if len(codes) else 0, dtype=bool)
        present[codes] = True
        code_table = np.flatnonzero(present).astype(np.int64)
        local_of_global = np.cumsum(present, dtype=np.int64) - 1
        return cls(
            starts=starts,
            ends=ends,
            codes=codes,
            rows=rows,
            sorted_ends=sorted_ends,
            start_prefix=np.concatenate(([0], np.cumsum(starts - origin))),
            end_prefix=np.concatenate(([0], np.cumsum(sorted_ends - origin))),
            local_codes=local_of_global[codes],
            code_table=code_table,
            origin=origin,
            max_duration=int((ends - starts).max()) if len(starts) else 0,
        )

    def __len__(self) -> int:
        return len(self.starts)

    def count_overlapping(self, start_ns: int, end_ns: int) -> int:
        """How many intervals overlap [start_ns, end_ns): started before its end, not ended by its start."""
        started = int(np.searchsorted(self.starts, end_ns, side="left"))
        ended = int(np.searchsorted(self.sorted_ends, start_ns, side="right"))
        return max(started - ended, 0)

    def overlapping(self, start_ns: int, end_ns: int) -> np.ndarray:
        """Positions (in start order) of the intervals overlapping [start_ns, end_ns)."""
        # Nothing that starts before start_ns - max_duration can still be running at start_ns.
        low = int(np.searchsorted(self.starts, start_ns - self.max_duration, side="left"))
        high = int(np.searchsorted(self.starts, end_ns, side="left"))
        candidates = np.arange(low, high, dtype=np.int64)
        # Zero-length intervals exactly at the window start still count as inside it.
        keep = (self.ends[low:high] > start_ns) | (self.starts[low:high] >= start_ns)
        return candidates[keep]

    def covered_until(self, edges: np.ndarray) -> np.ndarray:
        """C(x) for every x in `edges`: total interval time before x (see the module docstring)."""
        x = np.asarray(edges, dtype=np.int64) - self.origin
        started = np.searchsorted(self.starts, edges, side="left")
        ended = np.searchsorted(self.sorted_ends, edges, side="left")
        return self.end_prefix[ended] + x * (started - ended) - self.start_prefix[started]

    def busy_ns(self, edges: np.ndarray) -> np.ndarray:
        """Time covered by intervals in each bucket between consecutive edges (overlaps count twice)."""
        return np.diff(self.covered_until(edges))

    def starts_per_bucket(self, edges: np.ndarray) -> np.ndarray:
        """How many intervals start in each bucket."""
        return np.diff(np.searchsorted(self.starts, edges, side="left"))

    def bucket_contributions(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bucket, local code, time) pieces from which each bucket's dominant name follows.

        Each interval starting in the window counts its time up to the end of
        the bucket it starts in (an interval running into the window counts
        from the window start); the interval still running at each inner edge
        counts its time in the bucket that edge opens. On a lane whose
        intervals never overlap (a stream) this is every bucket's exact mix;
        where they overlap, only the latest-started interval is carried across
        an edge, an approximation that affects colour only, never busy time.
        """
        window_start, window_end = int(edges[0]), int(edges[-1])
        positions = self.overlapping(window_start, window_end)
        clipped_starts = np.maximum(self.starts[positions], window_start)
        buckets = np.searchsorted(edges, clipped_starts, side="right") - 1
        buckets = np.clip(buckets, 0, len(edges) - 2)
        pieces = np.minimum(self.ends[positions], edges[buckets + 1]) - clipped_starts
        # Carry-over: the last interval started before each inner edge, if it is still running there.
        inner = edges[1:-1]
        last = np.searchsorted(self.starts, inner, side="left") - 1
        running = (last >= 0) & (self.ends[np.maximum(last, 0)] > inner)
        carried = last[running]
        carried_buckets = np.flatnonzero(running) + 1
        carried_pieces = np.minimum(self.ends[carried], edges[carried_buckets + 1]) - inner[running]
        return (
            np.concatenate((buckets, carried_buckets)),
            np.concatenate((self.local_codes[positions], self.local_codes[carried])),
            np.concatenate((pieces, carried_pieces)),
        )


    def sampled_contributions(self, edges: np.ndarray, samples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bucket, local code, 1) for `samples` evenly spaced instants per bucket that an interval covers.

        For windows holding many more events than buckets: the name running
        longest in a bucket is the one hit by most of its samples. Costs
        buckets x samples binary searches whatever the number of events.
        """
        left = edges[:-1]
        width = np.diff(edges)
        # Stratified samples (one per 1/samples of the bucket), each jittered within its stratum by a
        # fixed pseudo-random hash, so that periodic launches cannot alias with a regular sampling step
        # and the same window always gives the same picture.
        strata = np.arange(samples, dtype=np.float64)
        jitter = _unit_hash(np.arange(len(left) * samples, dtype=np.uint64)).reshape(len(left), samples)
        offsets = (strata[None, :] + jitter) / samples
        points = (left[:, None] + (width[:, None] * offsets).astype(np.int64)).reshape(-1)
        last = np.searchsorted(self.starts, points, side="right") - 1
        running = (last >= 0) & (self.ends[np.maximum(last, 0)] > points)
        buckets = np.repeat(np.arange(len(left), dtype=np.int64), samples)[running]
        return buckets, self.local_codes[last[running]], np.ones(len(buckets))

    def first_starting(self, edges: np.ndarray) -> np.ndarray:
        """Local code of the first interval starting in each bucket, -1 where none starts."""
        if len(self.starts) == 0:
            return np.full(len(edges) - 1, -1, dtype=np.int64)
        first = np.searchsorted(self.starts, edges[:-1], side="left")
        has = (first < len(self.starts)) & (self.starts[np.minimum(first, len(self.starts) - 1)] < edges[1:])
        return np.where(has, self.local_codes[np.minimum(first, len(self.starts) - 1)], -1)

    def subset(self, positions: np.ndarray) -> IntervalIndex:
        """An index of some of this lane's intervals (positions in start order), e.g. one kernel's."""
        return IntervalIndex.build(self.starts[positions], self.ends[positions], self.codes[positions],
                                   self.rows[positions])


def _unit_hash(values: np.ndarray) -> np.ndarray:
    """splitmix64 of each value, as floats in [0, 1): deterministic, well mixed."""
    x = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def dominant_per_bucket(buckets: np.ndarray, local_codes: np.ndarray, weights: np.ndarray,
                        n_buckets: int, n_codes: int) -> tuple[np.ndarray, np.ndarray]:
    """(local code with the largest total weight, that weight) per bucket; code -1 where nothing weighs."""
    if len(buckets) == 0 or n_codes == 0:
        return np.full(n_buckets, -1, dtype=np.int64), np.zeros(n_buckets)
    weights = np.asarray(weights, dtype=np.float64)
    # A dense (bucket x code) table is fastest unless it is much larger than the pieces filling it
    # (e.g. a thousand profiler steps, each in a few buckets).
    if n_buckets * n_codes <= min(_DENSE_TABLE_LIMIT, 64 * len(buckets) + 65_536):
        table = np.bincount(buckets * n_codes + local_codes, weights=weights, minlength=n_buckets * n_codes)
        table = table.reshape(n_buckets, n_codes)
        best = table.argmax(axis=1)
        best_weight = table[np.arange(n_buckets), best]
    else:
        keys, inverse = np.unique(buckets * n_codes + local_codes, return_inverse=True)
        sums = np.bincount(inverse.reshape(-1), weights=weights)
        # Sort by (bucket, weight): the last key of each bucket is its heaviest code.
        key_buckets = keys // n_codes
        order = np.lexsort((sums, key_buckets))
        is_last = np.r_[key_buckets[order][1:] != key_buckets[order][:-1], True]
        chosen = order[is_last]
        best = np.zeros(n_buckets, dtype=np.int64)
        best_weight = np.zeros(n_buckets)
        best[key_buckets[chosen]] = keys[chosen] % n_codes
        best_weight[key_buckets[chosen]] = sums[chosen]
    best = np.where(best_weight > 0, best, -1)
    return best.astype(np.int64), best_weight


def weighted_coverage(starts: np.ndarray, ends: np.ndarray, weights: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bucket: sum over intervals of weight x time the interval spends in the bucket.

    With weight = bytes / duration this is the bytes moved in each bucket (a
    copy's bytes spread evenly over its duration); with weight = bytes it is
    the time integral of bytes in flight. Computed on the intervals that
    overlap the window only, relative to the window start, in float64.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    window_start, window_end = int(edges[0]), int(edges[-1])
    inside = (starts < window_end) & (ends > window_start)
    if not inside.any():
        return np.zeros(len(edges) - 1)
    s = (np.clip(starts[inside], window_start, window_end) - window_start).astype(np.float64)
    e = (np.clip(ends[inside], window_start, window_end) - window_start).astype(np.float64)
    w = np.asarray(weights, dtype=np.float64)[inside]
    x = (np.asarray(edges, dtype=np.int64) - window_start).astype(np.float64)
    by_start = np.argsort(s, kind="stable")
    by_end = np.argsort(e, kind="stable")
    s_sorted, e_sorted = s[by_start], e[by_end]
    w_by_start, w_by_end = w[by_start], w[by_end]
    zero = np.zeros(1)
    weight_started = np.concatenate((zero, np.cumsum(w_by_start)))
    weighted_starts = np.concatenate((zero, np.cumsum(w_by_start * s_sorted)))
    weight_ended = np.concatenate((zero, np.cumsum(w_by_end)))
    weighted_ends = np.concatenate((zero, np.cumsum(w_by_end * e_sorted)))
    started = np.searchsorted(s_sorted, x, side="left")
    ended = np.searchsorted(e_sorted, x, side="left")
    covered = weighted_ends[ended] + x * (weight_started[started] - weight_ended[ended]) - weighted_starts[started]
    return np.diff(covered)


def max_depth_per_bucket(index: IntervalIndex, depths: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Deepest stack level (frames on the stack, 0 = idle) reached in each bucket.

    `depths` holds each frame's depth in start order, 0 for the outermost.
    For well-nested frames the deepest point of a bucket is either its left
    edge (depth = frames running there) or the start of a frame inside it, so
    the answer is exact: max(running at the edge, 1 + deepest frame starting inside).
    """
    left = edges[:-1]
    running_at_left = (np.searchsorted(index.starts, left, side="right")
                       - np.searchsorted(index.sorted_ends, left, side="right"))
    first = np.searchsorted(index.starts, left, side="left")
    after = np.searchsorted(index.starts, edges[1:], side="left")
    has_start = after > first
    deepest_start = np.zeros(len(left), dtype=np.int64)
    if has_start.any():
        # Consecutive buckets' start segments tile depths[first[0]:after[-1]], so one reduceat
        # over that slice gives every segment's maximum. A sentinel keeps every offset in range
        # (reduceat rejects offset == len); empty segments get a stray value and are masked out.
        inside = np.asarray(depths, dtype=np.int64)[first[0]:after[-1]]
        inside = np.concatenate((inside, [-1]))
        deepest_start = np.where(has_start, np.maximum.reduceat(inside, first - first[0]) + 1, 0)
    return np.maximum(running_at_left, deepest_start)
