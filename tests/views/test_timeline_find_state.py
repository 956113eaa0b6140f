"""/timeline's view state for find, flows, colour, lanes and the selected event: URL round trips, jumps
from match to match, the whole-window flows rule, a click read back into an event, the details pane."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard.figures.timeline_overlays import HEADED_FLOWS
from dashboard.store import Run, RunStore
from dashboard.views import timeline as view
from dashboard.views.timeline_details import clicked_event, details_pane
from dashboard.views.timeline_find import jump, search_text, window_onto
from tests.support.kernel_tables import CPU_THREAD, EPOCH_NS, KERNEL_NAMES, kernel_tables


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    store = RunStore(tmp_path_factory.mktemp("find") / "data")
    return store.open(store.write("find", kernel_tables(kernels_per_stream=1_000)))


def test_new_keys_read_back_from_the_url_and_malformed_ones_fall_back(run: Run) -> None:
    query = {"find": "gemm", "re": "1", "hit": "3", "ev": f"kernel.0.7.0.{EPOCH_NS + 5}", "flows": "on",
             "colour": "category", "pin": f"cpu-0-{CPU_THREAD},gpu-0-0-7", "fold": f"cpu-0-{CPU_THREAD}"}
    state = view.State.from_query(query, run)
    assert (state.find, state.regex, state.hit, state.flows, state.colour) == ("gemm", True, 3, "on", "category")
    assert state.pin == (f"cpu-0-{CPU_THREAD}", "gpu-0-0-7") and state.event is not None
    assert {key: value for key, value in state.to_query().items() if key != "rank"} == query
    bad = view.State.from_query({"re": "yes", "hit": "-4", "ev": "kernel.7", "flows": "sometimes",
                                 "colour": "rainbow", "find": "x" * 500}, run)
    assert (bad.regex, bad.ev, bad.flows, bad.colour, len(bad.find or "")) == (False, None, "auto", "kernel", 200)
    assert view.State.from_query({"hit": "2"}, run).hit is None  # a hit means nothing without a search


def test_next_and_previous_select_each_match_and_move_the_window_onto_it(run: Run) -> None:
    starts = sorted(run.frame("kernels").filter(pl.col("name") == KERNEL_NAMES[3]).get_column("start_ns").to_list())
    state = view.State.from_query({"find": "flash_fwd"}, run)
    assert search_text(view.drawn(run, state).found, None) == f"{len(starts):,} matches in 1 name"
    for step, hit in ((1, 1), (1, 2), (-1, 1), (-1, len(starts))):  # previous from the first wraps to the last
        state = jump(run, state, step)
        assert state.hit == hit and state.window is not None
        assert state.window[0] <= starts[hit - 1] <= state.window[1]
        assert state.event is not None and state.event.start_ns == starts[hit - 1]
    answer = search_text(view.drawn(run, state).found, state.hit)
    assert answer == f"{len(starts):,} / {len(starts):,} matches in 1 name"
    nothing = view.State.from_query({"find": "no such kernel"}, run)
    assert jump(run, nothing, 1) == nothing and search_text(view.drawn(run, nothing).found, None) == "no match"


def test_a_jump_keeps_the_zoom_while_the_match_stays_visible() -> None:
    assert window_onto(10_000, 11_000, (0, 20_000)) == (500, 20_500)  # 1 µs in 20 µs: visible, zoom kept
    assert window_onto(10_000, 11_000, (0, 10**9)) == (10_500 - 20_000, 10_500 + 20_000)  # zoomed in to 1/40
    assert window_onto(0, 10**6, (0, 10**5)) == (-10**6, 2 * 10**6)  # never filling more than a third


def test_whole_window_flows_are_off_above_two_hundred_unless_asked(run: Run) -> None:
    auto = view.drawn(run, view.State.from_query({}, run))
    assert auto.view.flows.is_empty()
    assert auto.flows_note.startswith("4,000 launch arrows in this window: more than 200, so off by default")
    on = view.drawn(run, view.State.from_query({"flows": "on"}, run))
    assert on.view.flows.height == 4_000
    assert on.flows_note.startswith("4,000 launch arrows in this window (API call → kernel or copy), drawn as lines")
    zoomed = view.drawn(run, view.State.from_query({"window": f"{EPOCH_NS}-{EPOCH_NS + 1_000_000}"}, run))
    assert 0 < zoomed.view.flows.height <= view.AUTO_FLOWS == 200  # few enough to draw with heads: drawn


def _window_arrows(drawn: view.Drawn) -> dict:
    (trace,) = [t for t in drawn.figure["data"] if (t.get("meta") or {}).get("kind") == "window"]
    return trace


def test_many_window_arrows_are_drawn_without_heads(run: Run) -> None:
    # Heads cost plotly an SVG element each and merge into a haze when dense; lines stay one path.
    many = view.drawn(run, view.State.from_query({"flows": "on"}, run))
    assert _window_arrows(many)["mode"] == "lines" and "marker" not in _window_arrows(many)
    few_window = f"{EPOCH_NS}-{EPOCH_NS + 40_000}"
    few = view.drawn(run, view.State.from_query({"flows": "on", "window": few_window}, run))
    assert 0 < few.view.flows.height <= HEADED_FLOWS
    arrows = _window_arrows(few)
    assert arrows["mode"] == "lines+markers" and arrows["marker"]["symbol"] == "arrow"
    assert few.flows_note == f"{few.view.flows.height:,} launch arrows in this window (API call → kernel or copy)"


def test_a_click_names_its_event_and_the_pane_shows_it(run: Run) -> None:
    state = jump(run, view.State.from_query({"find": "ampere_sgemm"}, run), 1)
    figure = view.drawn(run, state).figure
    kernel_traces = [t for t in figure["data"] if t.get("name") == "ampere_sgemm_128x64_tn" and t["type"] == "bar"]
    point = {"customdata": kernel_traces[0]["customdata"][0]}
    ref = clicked_event(point, int(figure["layout"]["meta"]["origin_ns"]))
    assert ref is not None and ref.kind == "kernel" and view.timeline_data(run).start_ns < ref.start_ns
    assert clicked_event({"customdata": [5, 0, 0, 0, 10]}, 0) is None  # a pass band names no event
    assert clicked_event({"z": 3}, 0) is None
    pane = details_pane(run, state)
    assert pane is not None and pane.kind == "GPU kernel" and pane.title == "ampere_sgemm_128x64_tn"
    facts = dict(pane.facts)
    assert facts["grid"] == "(128, 1, 1)" and facts["block"] == "(256, 1, 1)" and facts["registers per thread"] == "32"
    assert facts["launching op"] == "aten::add" and dict(pane.launch)["call"] == "cudaLaunchKernel"
    assert pane.chain[0][0] == "ProfilerStep#3"
    assert [label for label, _ in pane.links] == ["this kernel on /kernels", "layer model.layer1 on /layers"]
    assert ("grid_x", "128") in pane.record


def test_runs_without_api_calls_draw_and_search_as_before(tmp_path: Path) -> None:
    tables = kernel_tables(kernels_per_stream=50)
    del tables["api_calls"]
    store = RunStore(tmp_path / "data")
    run = store.open(store.write("no-api", tables))
    drawn = view.drawn(run, view.State.from_query({"find": "flash", "flows": "on"}, run))
    flash = tables["kernels"].filter(pl.col("name") == KERNEL_NAMES[3]).height
    assert drawn.found is not None and drawn.found.count == flash > 0
    assert drawn.flows_note.startswith("no launch arrows")
    assert not any("CUDA API" in label for label in drawn.view.lanes.get_column("label").to_list())


def test_a_many_rank_cluster_run_finds_follows_and_inspects_one_rank_at_a_time(tmp_path: Path) -> None:
    from dashboard.views.params import MANY_RANKS
    from tests.support.rank_runs import partitioned_run, rank_traces

    store = RunStore(tmp_path / "data")
    run = store.open(partitioned_run(store, rank_traces(tmp_path / "ranks", MANY_RANKS + 1, kernels=300)))
    state = view.State.from_query({"rank": "3", "find": "cudaLaunchKernel"}, run)
    data = view.timeline_data(run, 3)
    assert data.ranks == [3]  # indexed one rank at a time
    launches = run.scan("api_calls").filter((pl.col("rank") == 3) & (pl.col("name") == "cudaLaunchKernel"))
    expected = launches.select(pl.len()).collect().item()
    assert expected > 0 and view.drawn(run, state).found.count == expected
    state = jump(run, state, 1)
    assert state.event is not None and state.event.kind == "api" and state.event.rank == 3
    pane = details_pane(run, state)
    assert pane is not None and pane.kind == "CUDA API call" and pane.launched  # it launched a kernel
    assert any(label.startswith("CUDA API") for label in view.drawn(run, state).view.lanes.get_column("label"))
    assert view.drawn(run, state).view.flows.height >= 1
