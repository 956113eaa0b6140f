"""The PNG export draws what the page draws: for each page and several URL states, every chart the
page's layout sends to the browser equals the chart `exports.page_figures` builds for the same query.

Both go through `views.<page>.figures(run, State.from_query(query, run))`; this test catches a page
or an export that parses its state on its own again (the /memory export once ignored the page's
op-type filter and fell back to rank 0 where the page used the first rank).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import plotly.io as pio
import pytest

from dashboard.app import create_app
from dashboard.demo import seed_demo
from dashboard.exports.page_figures import EXPORT_WIDTHS, PAGES, page_figures
from dashboard.settings import Settings
from dashboard.store import Run, RunStore

HOST = "http://localhost"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunStore, Any]:
    data_dir = tmp_path_factory.mktemp("screen") / "data"
    store = RunStore(data_dir)
    seed_demo(store)
    app = create_app(Settings(data_dir=data_dir, seed_demo=False))
    return store, app.server.test_client()


def _components(tree: Any) -> Iterator[dict[str, Any]]:
    if isinstance(tree, dict):
        if "type" in tree and "props" in tree:
            yield tree
            yield from _components(tree["props"])
        else:
            for value in tree.values():
                yield from _components(value)
    elif isinstance(tree, list):
        for item in tree:
            yield from _components(item)


def screen_figures(client: Any, page: str, query: dict[str, str]) -> dict[Any, dict[str, Any]]:
    """Component id -> the figure JSON of every Graph the page's layout holds for this URL."""
    response = client.get("/_dash-layout", headers={"Referer": f"{HOST}/{page}?{urlencode(query)}"})
    assert response.status_code == 200
    tree = json.loads(response.get_data(as_text=True))
    return {json.dumps(c["props"]["id"], sort_keys=True): c["props"]["figure"] for c in _components(tree)
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


def _kernel_states(run: Run) -> list[dict[str, str]]:
    from dashboard.analysis import run_views

    keys = run_views.kernel_view(run, None, None, "name").summary.get_column("key").to_list()
    ranks = run_views.kernel_ranks(run)
    return [
        {},
        {"rank": str(ranks[-1])},
        {"rank": "987"},  # a rank the run does not have: all ranks, on both paths
        {"group": "op", "top": "5", "sel": keys[0]},
        {"group": "layer", "sel": ".".join(keys[:3])},
        {"top": "100000", "sel": keys[1], "only": "1"},  # clamped the same way on both paths
        {"group": "nonsense", "top": "x"},
    ]


def _layer_states(run: Run) -> list[dict[str, str]]:
    from dashboard.analysis import run_views

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
    from dashboard.analysis import run_views

    keys = run_views.kernel_view(run, None, None, "name").summary.get_column("key").to_list()
    start = int(run.scan("kernels").select("start_ns").min().collect().item())
    end = int(run.scan("kernels").select("end_ns").max().collect().item())
    ranks = run_views.kernel_ranks(run)
    return [
        {},
        {"rank": str(ranks[-1]), "window": f"{start}-{start + (end - start) // 20}", "sel": keys[0]},  # zoomed in
        {"rank": "all", "sel": ".".join(keys[:2])},
        {"rank": "987", "window": f"{start - 10**12}-{end + 10**12}"},  # no such rank; a window past the run
        {"rank": "x", "window": "9-3", "sel": "nothex"},  # malformed values
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


# page -> (evidence its run needs, the URL states to try)
STATES = {
    "kernels": ("kernels", _kernel_states),
    "layers": ("layers", _layer_states),
    "timeline": ("kernels", _timeline_states),
    "compiler": ("compiler", _compiler_states),
}


@pytest.mark.parametrize("page", sorted(STATES))
def test_the_export_draws_what_the_page_draws(demo: tuple[RunStore, Any], page: str) -> None:
    store, client = demo
    evidence, states = STATES[page]
    run = _run_with(store, evidence)
    charts = importlib.import_module(f"dashboard.views.{page}").CHARTS
    for state in states(run):
        query = {"run": run.id, **state}
        exported = page_figures(page, run, query)
        shown = screen_figures(client, page, query)
        assert exported, f"{page} {state}: the export drew nothing"
        for name, figure in exported.items():
            component = json.dumps(charts[name], sort_keys=True)
            assert component in shown, f"{page} {state}: {name} is exported but not on the page"
            assert _unsized(page, _json(figure)) == shown[component], \
                f"{page} {state}: {name} differs from the screen"


def test_every_page_with_charts_has_a_view_module_under_this_test() -> None:
    assert set(STATES) == set(PAGES), f"pages whose export is not compared with the screen: {set(PAGES) - set(STATES)}"
