"""/timeline's rank rule as its view State applies it: no rank asked opens the first rank of a run with
more than MANY_RANKS ranks (all ranks otherwise); "all", a malformed rank or one the run lacks is all ranks."""

from __future__ import annotations

from pathlib import Path

from dashboard.store import RunStore
from dashboard.views import timeline
from dashboard.views.params import ALL_RANKS, MANY_RANKS, rank_or_all
from tests.support.rank_runs import partitioned_run, rank_traces


def test_rank_or_all_tells_no_rank_from_all_ranks() -> None:
    spec = rank_or_all()
    assert [spec.parse(v) for v in (None, "", " all ", "3", "x", "-2")] == [None, None, ALL_RANKS, 3, ALL_RANKS, 0]
    assert [spec.format(v) for v in (None, ALL_RANKS, 3)] == ["", "all", "3"]


def test_many_ranks_open_on_the_first_rank_and_the_url_keeps_the_choice(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "data")
    ranks = MANY_RANKS + 1
    run = store.open(partitioned_run(store, rank_traces(tmp_path / "ranks", ranks, kernels=200)))

    def resolved(query: dict[str, str]) -> int | str | None:
        return timeline.State.from_query(query, run).rank

    assert resolved({}) == 0
    assert resolved({"rank": "all"}) == ALL_RANKS
    assert resolved({"rank": "4"}) == 4
    assert resolved({"rank": "x"}) == resolved({"rank": str(ranks + 100)}) == ALL_RANKS
    # The chosen rank is always written, so a reload or a shared link opens what was drawn.
    assert timeline.State.from_query({}, run).to_query() == {"rank": "0"}
    assert timeline.State.from_query({"rank": "all"}, run).to_query() == {"rank": "all"}
    state = timeline.State.from_query({}, run)
    assert timeline.drawn(run, state).view.lanes.get_column("rank").unique().to_list() == [0]
    assert len(timeline.timeline_ranks(run)) == ranks
