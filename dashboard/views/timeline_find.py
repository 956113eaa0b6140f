"""/timeline's search: what the search bar says, and next / previous match as a new state.

A jump selects the match (its details open, its arrows are drawn, as a click
would) and moves the window onto it: centred, at the current zoom when the
match is wide enough to see there, else zoomed until it is (at least 1/40 of
the window), never so far that it fills more than a third.
"""

from __future__ import annotations

from dashboard.analysis.timeline_details import event_ref
from dashboard.analysis.timeline_search import SearchResult
from dashboard.store import Run
from dashboard.views import timeline as view

VISIBLE_SHARE = 40  # a match shown after a jump takes at least 1/40 of the window (~25 px)
MIN_JUMP_WINDOW_NS = 10_000


def search_text(result: SearchResult | None, hit: int | None) -> str:
    """The search bar's answer: `3 / 1,204 matches (12 names)`, `no match`, or why the query is refused."""
    if result is None:
        return ""
    if result.error:
        return result.error
    if result.count == 0:
        return "no match"
    where = f"{hit:,} / " if hit else ""
    names = f" in {result.names:,} name{'s' if result.names != 1 else ''}"
    return f"{where}{result.count:,} match{'es' if result.count != 1 else ''}{names}"


def window_onto(start_ns: int, end_ns: int, current: tuple[int, int]) -> tuple[int, int]:
    """A window centred on an event, as wide as `current` within the limits above."""
    duration = max(end_ns - start_ns, 1)
    width = current[1] - current[0]
    width = max(3 * duration, min(width, VISIBLE_SHARE * duration), MIN_JUMP_WINDOW_NS)
    middle = (start_ns + end_ns) // 2
    return middle - width // 2, middle - width // 2 + width


def jump(run: Run, state: view.State, step: int) -> view.State:
    """The state after next (`step` 1) or previous (-1) match: hit, ev and window set; unchanged without matches."""
    if not state.find:
        return state
    rank = state.rank_shown
    result = view.found(run, rank, state.find, state.regex)
    if result.count == 0:
        return state.replace(hit=None)
    data = view.timeline_data(run, rank)
    current = view.clamp_window(data, state.window)
    if state.hit is None or state.hit > result.count:
        # The first match from the window's start (next), or the last one before it (previous).
        first = result.first_from(current[0])
        index = first if step > 0 else (first - 1) % result.count
    else:
        index = (state.hit - 1 + step) % result.count
    row = int(result.rows[index])
    start, end = (int(data.events.get_column(c)[row]) for c in ("start_ns", "end_ns"))
    return state.replace(hit=index + 1, ev=event_ref(data, row).text(), window=window_onto(start, end, current))
