"""What a page load reuses instead of computing again: the views it asks on every load of a run are cached
per run and state (views.cache), and the figures it sends are plain JSON values equal to the figures the
export draws (tests/views/test_export_equals_screen.py compares them chart by chart).

At 1 M kernels these recomputations put 40-60 ms of server work on every load's critical path, which a
browser busy compiling the page's scripts stretched to 150-200 ms (benchmarks/first_render.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import plotly.io as pio
import pytest

from dashboard.analysis import rank_steps
from dashboard.app import create_app
from dashboard.settings import Settings
from dashboard.store import Run, RunStore
from dashboard.views import compare, compare_sections, layers, ranks
from dashboard.views.compare_sides import compare_view
from tests.support.demo_copy import demo_copy


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> RunStore:
    return RunStore(demo_copy(demo_template, tmp_path_factory.mktemp("caches") / "data"))


def _run_with(store: RunStore, evidence: str) -> Run:
    return store.open(next(info.id for info in store.list_runs() if evidence in info.evidence))


def _plain(figure: Any) -> dict[str, Any]:
    return json.loads(pio.to_json(figure, validate=False))


def test_the_layers_page_reuses_its_boxes_and_notes(store: RunStore) -> None:
    run = _run_with(store, "layers")
    state = layers.State.from_query({}, run)
    boxes = layers.page_box_figures(run, state)
    assert layers.page_box_figures(run, state) is boxes  # the second load reuses the first's
    assert layers.note_texts(run, state) is layers.note_texts(run, state)
    assert boxes == {name: _plain(figure) for name, figure in layers.box_figures(run, state).items()}
    # A box chart with nothing to draw says so the same way as a plain dict and as a figure.
    for name, figure in layers.box_figures(run, state).items():
        assert layers.no_layers(boxes[name]) == layers.no_layers(figure)
        assert layers.no_flops(boxes[name]) == layers.no_flops(figure)
    other = state.replace(dtype="fp8")
    assert layers.page_box_figures(run, other) is not boxes  # another state is another entry


def test_the_compare_page_reuses_its_charts_step_times_and_compiler_comparison(store: RunStore) -> None:
    run = _run_with(store, "kernels")
    state = compare.State.from_query({}, run)
    sides = compare.sides(store, run, state)
    assert sides is not None
    compared = compare_view(store, *sides)
    shown = compare.page_kernel_figures(store, compared, state)
    assert compare.page_kernel_figures(store, compared, state) is shown
    assert shown == {name: _plain(figure) for name, figure in compare.kernel_figures(compared, state).items()}
    run_b = store.open(sides[1].run_id)
    passes = compare_sections.page_passes_figures(run, run_b, *sides)
    assert compare_sections.page_passes_figures(run, run_b, *sides) is passes
    assert passes == {name: _plain(figure)
                      for name, figure in compare_sections.passes_figures(run, run_b, *sides).items()}
    # Step times come from the step matrix /ranks keeps per run, and read as analysis computes them.
    assert ranks.steps(run) is ranks.steps(run)
    assert compare_sections.step_time(run, sides[0].rank) == rank_steps.step_time(run, sides[0].rank)

    compiled = _run_with(store, "compiler")
    comparison = compare_sections.compiler_comparison(compiled, compiled, None, None, None)
    assert comparison is not None
    assert compare_sections.compiler_comparison(compiled, compiled, None, None, None) is comparison


def test_the_app_serialises_with_plotlys_json_engine(tmp_path: Path) -> None:
    """The C encoder over plain values: orjson's path walks every list item in Python first (2x slower)."""
    pio.json.config.default_engine = "auto"
    create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    assert pio.json.config.default_engine == "json"
