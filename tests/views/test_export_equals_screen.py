"""The PNG export draws what the page draws: for each page and several URL states, every chart the
page's layout sends to the browser equals the chart `exports.page_figures` builds for the same query.

Both go through `views.<page>.figures(run, State.from_query(query, run))`; this test catches a page
or an export that parses its state on its own again (the /memory export once ignored the page's
op-type filter and fell back to rank 0 where the page used the first rank).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import plotly.io as pio
import pytest

from dashboard.app import create_app
from dashboard.exports.page_figures import EXPORT_WIDTHS, PAGES, page_figures
from dashboard.settings import Settings
from dashboard.store import Run, RunStore
from tests.support.dash_requests import HOST, components, dash_layout
from tests.support.demo_copy import demo_copy


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> tuple[RunStore, Any]:
    data_dir = demo_copy(demo_template, tmp_path_factory.mktemp("screen") / "data")
    store = RunStore(data_dir)
    app = create_app(Settings(data_dir=data_dir, seed_demo=False))
    return store, app.server.test_client()


def screen_figures(client: Any, page: str, query: dict[str, str]) -> dict[Any, dict[str, Any]]:
    """Component id -> the figure JSON of every Graph the page's layout holds for this URL."""
    tree = dash_layout(client, f"{HOST}/{page}?{urlencode(query)}")
    return {json.dumps(c["props"]["id"], sort_keys=True): c["props"]["figure"] for c in components(tree)
            if c.get("type") == "Graph" and c["props"].get("figure") is not None}


def _json(figure: Any) -> dict[str, Any]:
    return json.loads(pio.to_json(figure, validate=False))


def _unsized(page: str, figure: dict[str, Any]) -> dict[str, Any]:
    """An exported figure without its export-only width (the page's chart fills its card instead)."""
    if page in EXPORT_WIDTHS:
        assert figure["layout"].pop("width") == EXPORT_WIDTHS[page]
    return figure


def _run_with(store: RunStore, evidence: str) -> Run:
    return store.open(next(info.id for info in store.list_runs() if evidence in info.evidence))


def _runs_with(store: RunStore, evidence: str) -> list[Run]:
    return [store.open(info.id) for info in store.list_runs() if evidence in info.evidence]


Cases = list[tuple[Run, dict[str, str]]]


def _kernel_keys(run: Run) -> list[str]:
    from dashboard.views import run_views

    return run_views.kernel_view(run, None, None, "name").summary.get_column("key").to_list()


def kernels_cases(store: RunStore) -> Cases:
    from dashboard.views import run_views

    run = _run_with(store, "kernels")
    keys, ranks = _kernel_keys(run), run_views.kernel_ranks(run)
    return [(run, state) for state in (
        {},
        {"rank": str(ranks[-1])},
        {"rank": "987"},  # a rank the run does not have: all ranks, on both paths
        {"group": "op", "top": "5", "sel": keys[0]},
        {"group": "layer", "sel": ".".join(keys[:3])},
        {"top": "100000", "sel": keys[1], "only": "1"},  # clamped the same way on both paths
        {"group": "nonsense", "top": "x"},
    )]


def insights_cases(store: RunStore) -> Cases:
    return [(run, state) for run in _runs_with(store, "kernels") for state in ({}, {"scope": "hta"})]


def compare_cases(store: RunStore) -> Cases:
    from dashboard.views import run_views

    kernel_runs = _runs_with(store, "kernels")
    run = kernel_runs[0]
    keys, ranks = _kernel_keys(run), run_views.kernel_ranks(run)
    layer = run_views.layer_view(run, None, None).stats.get_column("layer")[0]
    cases: Cases = [(run, state) for state in (
        {},
        {"top": "5", "sel": ".".join(keys[:2])},
        {"top": "500", "layer": layer, "pass": "forward"},
        {"rank": str(ranks[0]), "other_rank": str(ranks[-1])},
        {"other": kernel_runs[-1].id, "other_rank": "77"},  # B's rank it lacks: all of B's ranks
        {"other": "no-such-run"},
    )]
    for evidence in ("memory", "planner", "cuda_memory"):
        runs = _runs_with(store, evidence)
        cases += [(runs[0], {}), (runs[0], {"group": "nonsense", "other": runs[-1].id})] if runs else []
    return cases


def _planner_states(run: Run) -> list[dict[str, str]]:
    from dashboard.views import planner

    data = planner.planner_data(run)
    groups = [choice.group for choice in data.choices if choice.kind == "planner"]
    second = groups[-1]
    smem = data.buffers.filter(data.buffers["group"] == groups[0]).row(0, named=True)
    op = int(data.ops.filter(data.ops["group"] == groups[0]).drop_nulls("op_id")["op_id"][0])
    return [
        {},
        {"group": second},
        {"buffer": f"SMEM-{smem['buffer_index']}"},
        {"op": str(op)},  # marked on both timelines and both live-memory charts
        {"buffer": f"smem-{smem['buffer_index']}", "op": str(op), "partition": "1"},
        {"group": "no such group", "buffer": "SMEM-99999", "op": "x y", "partition": "-3"},  # all dropped
        {"group": second, "buffer": "TMEM-0", "op": "op_op_nowhere"},
    ]


def _memory_states(run: Run) -> list[dict[str, str]]:
    from dashboard.views import memory

    data = memory.memory_data(run, None)
    first, last = data.first_op, data.last_op
    middle = (first + last) // 2
    return [
        {},
        {"rank": "987"},  # a rank the run does not have: its first rank, on both paths (the export once took 0)
        {"rank": str(data.rank), "unit": "device", "peaks": "profiler"},
        {"optype": data.op_types[0][0], "program": data.programs[-1][0]},  # the export once ignored both
        {"ops": f"{first + 10}-{middle}", "op": str(middle - 5), "optype": data.op_types[-1][0]},
        {"ops": f"{middle}-{last + 1000}", "program": data.programs[0][0], "peaks": "profiler"},
        {"ops": "9-x", "op": "abc", "optype": "NoSuchOp,", "program": ",,", "unit": "kg", "peaks": "?"},
    ]


def _memory_cuda_states(run: Run) -> list[dict[str, str]]:
    from dashboard.views import memory_cuda

    data = memory_cuda.cuda_data(run, None)
    start, end = int(data.events["time_ns"].min()), int(data.events["time_ns"].max())  # type: ignore[arg-type]
    quarter = (end - start) // 4
    return [
        {},
        {"rank": "987"},
        {"rank": str(memory_cuda.run_ranks(run)[-1])},
        {"device": data.devices[0]},
        {"window": f"{start + quarter}-{end - quarter}"},
        {"at": str(start + quarter), "window": f"{start}-{start + 2 * quarter}"},
        {"device": "nope", "window": "later", "at": "noon"},
    ]


def _layer_states(run: Run) -> list[dict[str, str]]:
    from dashboard.views import run_views

    stats = run_views.layer_view(run, None, None).stats
    layer, pass_ = stats.row(0, named=True)["layer"], stats.row(-1, named=True)["pass"]
    start = int(run.scan("kernels").select("start_ns").min().collect().item())
    end = int(run.scan("kernels").select("end_ns").max().collect().item())
    ranks = run_views.kernel_ranks(run)
    return [
        {},
        {"rank": str(ranks[-1]), "dtype": "fp8", "window": f"{start}-{(start + end) // 2}"},
        {"layer": layer},  # a selected box: its kernels are drawn too
        {"layer": layer, "pass": pass_, "rank": "987"},  # a rank the run does not have: all ranks
        {"layer": "no.such.layer", "pass": "sideways", "dtype": "fp64", "window": "9-3"},  # malformed values
    ]


def _timeline_states(run: Run) -> list[dict[str, str]]:
    from dashboard.analysis.timeline_details import event_ref
    from dashboard.analysis.timeline_flows import launch_links
    from dashboard.views import run_views
    from dashboard.views import timeline as timeline_view

    keys = run_views.kernel_view(run, None, None, "name").summary.get_column("key").to_list()
    start = int(run.scan("kernels").select("start_ns").min().collect().item())
    end = int(run.scan("kernels").select("end_ns").max().collect().item())
    ranks = run_views.kernel_ranks(run)
    data = timeline_view.timeline_data(run)
    launched = int(launch_links(data).target_rows[len(launch_links(data).target_rows) // 2])  # a kernel with a launch
    ref = event_ref(data, launched)
    tracks = [track["id"] for track in timeline_view.lane_tracks(run, None)]
    cpu = next(track for track in tracks if track.startswith("cpu-"))
    api = next(track for track in tracks if track.startswith("api-"))
    name = str(data.names.get_column("name")[int(data.events.get_column("code")[launched])])
    return [
        {},
        {"rank": str(ranks[-1]), "window": f"{start}-{start + (end - start) // 20}", "sel": keys[0]},  # zoomed in
        {"rank": "all", "sel": ".".join(keys[:2])},
        {"rank": "987", "window": f"{start - 10**12}-{end + 10**12}"},  # no such rank; a window past the run
        {"rank": "x", "window": "9-3", "sel": "nothex"},  # malformed values
        # The new lanes and overlays: a selected kernel with its arrows, search matches, category colours,
        # every launch arrow of a window, pinned and folded tracks.
        {"ev": ref.text(), "window": f"{ref.start_ns - 200_000}-{ref.start_ns + 200_000}", "flows": "on"},
        {"find": name[:12], "hit": "1", "colour": "category", "pin": f"{api},{cpu}", "fold": cpu},
        {"find": "(", "re": "1", "flows": "off", "ev": "kernel.x", "colour": "rainbow", "pin": "no-such-track"},
    ]


def _compiler_states(run: Run) -> list[dict[str, str]]:
    from dashboard.views.compiler_data import compiler_data

    compiles = compiler_data(run).kernels.get_column("compile").sort().to_list()
    return [
        {},  # the compile with the most steps, its first step
        {"compile": str(compiles[0]), "step": "5", "cmp": "2", "view": "side", "pyline": "3"},
        {"compile": str(compiles[-1]), "step": "7", "cmp": f"{compiles[0]}:4"},  # framed only within one compile
        {"compile": "987", "step": "100000", "cmp": "99:99"},  # a compile and steps the run lacks
        {"compile": "x", "step": "-4", "cmp": "a:b", "view": "nonsense", "pyline": "z"},  # malformed values
    ]


def _rank_states(run: Run) -> list[dict[str, str]]:
    from dashboard.views import ranks

    return [{}, {"rank": str(ranks.ranks(run)[-1])}, {"rank": "987"}, {"rank": "x"}]


def _on(evidence: str, states: Any) -> Any:
    """Cases of one run with the evidence, for per-run state lists."""
    def cases(store: RunStore) -> Cases:
        run = _run_with(store, evidence)
        return [(run, state) for state in states(run)]
    return cases


# entry -> the (run, URL state) cases to draw both ways; "page (variant)": the page for another kind of run
CASES = {
    "kernels": kernels_cases,
    "insights": insights_cases,
    "compare": compare_cases,
    "planner": _on("planner", _planner_states),
    "memory": _on("memory", _memory_states),
    "memory (CUDA)": _on("cuda_memory", _memory_cuda_states),
    "layers": _on("layers", _layer_states),
    "timeline": _on("kernels", _timeline_states),
    "compiler": _on("compiler", _compiler_states),
    "ranks": _on("kernels", _rank_states),
}
# The view module of a variant, where it is not the page's own.
VIEW_MODULES = {"memory (CUDA)": "memory_cuda"}


@pytest.mark.parametrize("entry", sorted(CASES))
def test_the_export_draws_what_the_page_draws(demo: tuple[RunStore, Any], entry: str) -> None:
    store, client = demo
    page = entry.split(" ")[0]
    charts = importlib.import_module(f"dashboard.views.{VIEW_MODULES.get(entry, page)}").CHARTS
    drawn = 0
    for run, state in CASES[entry](store):
        query = {"run": run.id, **state}
        exported = page_figures(page, run, query)
        shown = screen_figures(client, page, query)
        for name, figure in exported.items():
            component = json.dumps(charts[name], sort_keys=True)
            assert component in shown, f"{page} {state}: {name} is exported but not on the page"
            assert _unsized(page, _json(figure)) == shown[component], \
                f"{page} {state}: {name} differs from the screen"
            drawn += 1
    assert drawn, f"{page}: no case exported a chart"


def test_the_timeline_export_holds_the_cpu_and_api_lanes_and_the_flow_arrows(demo: tuple[RunStore, Any]) -> None:
    store, client = demo
    run = _run_with(store, "kernels")
    for state in _timeline_states(run)[5:7]:
        query = {"run": run.id, **state}
        exported = _json(page_figures("timeline", run, query)["timeline"])
        labels = exported["layout"]["yaxis"]["ticktext"]
        assert any("CUDA API" in label for label in labels) and any("CPU " in label for label in labels)
        assert _unsized("timeline", exported) == screen_figures(client, "timeline", query)['"timeline-graph"']
    selected = _json(page_figures("timeline", run, {"run": run.id, **_timeline_states(run)[5]})["timeline"])
    arrows = {trace["legendgroup"] for trace in selected["data"] if trace.get("legendgroup", "").startswith("flow")}
    assert arrows == {"flow window", "flow launch", "flow op"}  # the window's arrows, and the kernel's own
    assert any(trace.get("name") == "selected" for trace in selected["data"])


def test_every_page_with_charts_has_a_view_module_under_this_test() -> None:
    pages = {entry.split(" ")[0] for entry in CASES}
    assert pages == set(PAGES), f"pages whose export is not compared with the screen: {set(PAGES) - pages}"
