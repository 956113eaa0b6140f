"""Find on the timeline: every kernel, copy, range, profiler step and API call whose name matches.

A query is matched against the run's distinct names (a few thousand, not the
millions of events): case-insensitive substring by default, or a regular
expression run by polars' Rust regex engine, which works in time linear in
the text whatever the pattern (no backtracking: a user's `(a+)+$` cannot hang
the server) and refuses patterns that compile too large. The matched names'
codes then select the occurrences from one array of every searchable event in
start order, built once per indexed run: a table lookup per event, so a query
answers in milliseconds at millions of events.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import polars as pl

from dashboard.analysis.timeline import TimelineData

MAX_PATTERN = 200  # characters of a query; a URL or a paste cannot carry more
SEARCH_KINDS = ("kernel", "memcpy", "range", "step", "api")
_BUILD_LOCK = threading.Lock()


@dataclass(frozen=True)
class SearchIndex:
    """Every searchable event of an indexed run, in start order, and the names lower-cased."""

    lowered: pl.Series  # name per code, lower-cased
    starts: np.ndarray  # int64 start_ns, ascending
    codes: np.ndarray  # int64 name code per event
    ranks: np.ndarray  # int32 rank per event
    rows: np.ndarray  # int64 position of each event in TimelineData.events


@dataclass(frozen=True)
class SearchResult:
    """The occurrences of a query (rank None: every rank), in start order."""

    query: str
    regex: bool
    names: int  # distinct names matched
    codes: np.ndarray  # their codes
    starts: np.ndarray  # int64 start_ns of every match, ascending
    rows: np.ndarray  # their positions in TimelineData.events
    error: str | None = None

    @property
    def count(self) -> int:
        return len(self.starts)

    def per_bucket(self, edges: np.ndarray) -> np.ndarray:
        """How many matches start in each bucket between consecutive edges."""
        return np.diff(np.searchsorted(self.starts, edges, side="left"))

    def first_from(self, start_ns: int) -> int:
        """The index of the first match starting at or after start_ns (wrapping to 0 past the last)."""
        position = int(np.searchsorted(self.starts, start_ns, side="left"))
        return position if position < self.count else 0


def search_index(data: TimelineData) -> SearchIndex:
    """The run's search index, built on the first search and kept with the indexed run."""
    with _BUILD_LOCK:
        if "search" not in data.derived:
            data.derived["search"] = _build(data)
        return data.derived["search"]


def _build(data: TimelineData) -> SearchIndex:
    events = data.events
    searchable = events.get_column("kind").is_in(SEARCH_KINDS).to_numpy()
    rows = np.flatnonzero(searchable).astype(np.int64)
    starts = events.get_column("start_ns").to_numpy()[rows]
    order = np.argsort(starts, kind="stable")
    lane_rank = np.zeros(int(data.lanes.get_column("lane").max() or 0) + 1, dtype=np.int32)
    lane_rank[data.lanes.get_column("lane").to_numpy()] = data.lanes.get_column("rank").fill_null(0).to_numpy()
    rows = rows[order]
    return SearchIndex(
        lowered=data.names.get_column("name").str.to_lowercase(),
        starts=starts[order],
        codes=events.get_column("code").to_numpy()[rows],
        ranks=lane_rank[events.get_column("lane").to_numpy()[rows]],
        rows=rows,
    )


def matching_codes(data: TimelineData, query: str, regex: bool = False) -> np.ndarray:
    """Codes of the names a query matches (case-insensitive). Raises ValueError with a one-line reason."""
    if len(query) > MAX_PATTERN:
        raise ValueError(f"the search is {len(query)} characters long; at most {MAX_PATTERN} are searched")
    if regex:
        try:
            hits = data.names.get_column("name").str.contains(f"(?i){query}")
        except pl.exceptions.PolarsError as error:
            raise ValueError(f"not a valid regular expression: {_regex_reason(str(error))}") from None
    else:
        hits = search_index(data).lowered.str.contains(query.lower(), literal=True)
    return data.names.get_column("code").filter(hits.fill_null(False)).to_numpy()


def _regex_reason(message: str) -> str:
    """The line of polars' regex error that says what is wrong (`unclosed group`, `exceeds size limit`)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error:"):
            return line.removeprefix("error:").strip()
    first = lines[0] if lines else "unknown error"
    return first.removeprefix("regex error:").strip().removeprefix("regex parse error:").strip() or first


def search(data: TimelineData, query: str, regex: bool = False, rank: int | None = None) -> SearchResult:
    """Every occurrence of the names matching `query` on the run (or on one rank), in start order."""
    empty = np.zeros(0, dtype=np.int64)
    try:
        codes = matching_codes(data, query, regex)
    except ValueError as error:
        return SearchResult(query, regex, 0, empty, empty, empty, str(error))
    index = search_index(data)
    wanted = np.zeros(data.names.height + 1, dtype=bool)
    wanted[codes] = True
    mask = wanted[index.codes]
    if rank is not None:
        mask &= index.ranks == rank
    return SearchResult(query, regex, len(codes), codes, index.starts[mask], index.rows[mask])
