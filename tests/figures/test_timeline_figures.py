"""The timeline figure: bounded marks, valid plotly, units, highlighting."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import polars as pl
import pytest

from dashboard import schema
from dashboard.analysis.kernel_keys import kernel_key
from dashboard.analysis.timeline import MARK_BUDGET, OVERLAY_GROUP, prepare_timeline, timeline_view
from dashboard.analysis.units import window_span_text
from dashboard.figures.theme import colour_for
from dashboard.figures.timeline import timeline_figure, timeline_figure_dict
from dashboard.figures.timeline_marks import GREY, KIND_CODES, LEVELS, blend

MAX_PAYLOAD = 2 * 1024 * 1024


def _run(n_kernels: int = 40_000, streams: int = 3, with_stack: bool = True) -> dict[str, pl.DataFrame]:
    """`n_kernels` back-to-back kernels over `streams` streams of rank 0, a few copies, ranges and a stack."""
    index = np.arange(n_kernels)
    stream = index % streams
    slot = index // streams
    starts = 1_000_000 + slot * 1_000
    names = np.where(index % 5 == 0, "void big_gemm<float>(float*)", "void at::native::small_add<4>(int)")
    durations = np.where(index % 5 == 0, 900, 120)
    kernels = schema.conform("kernels", pl.DataFrame({
        "rank": np.zeros(n_kernels, dtype=np.int32), "device": np.zeros(n_kernels, dtype=np.int32),
        "stream": stream, "name": names, "start_ns": starts, "end_ns": starts + durations,
        "flops": np.where(index % 5 == 0, 1.8e9, np.nan)}).with_columns(pl.col("flops").fill_nan(None)))
    end = int(starts[-1] + 1_000)
    memcpy = schema.conform("memcpy", pl.DataFrame({
        "rank": [0, 0, 0], "device": [0, 0, 0], "stream": [9, 9, 9], "kind": ["HtoD", "DtoH", "Memset"],
        "bytes": [1 << 24, 1 << 20, 1 << 22], "start_ns": [900_000, end // 2, end - 50_000],
        "end_ns": [990_000, end // 2 + 20_000, end - 40_000]}))
    steps = 8
    step_edges = np.linspace(1_000_000, end, steps + 1).astype(np.int64)
    ranges = schema.conform("ranges", pl.DataFrame({
        "rank": [0] * steps, "thread": [77] * steps, "name": [f"ProfilerStep#{i}" for i in range(steps)],
        "category": ["profiler_step"] * steps, "start_ns": step_edges[:-1], "end_ns": step_edges[1:] - 1,
        "depth": [0] * steps}))
    tables = {"kernels": kernels, "memcpy": memcpy, "ranges": ranges, "stack": schema.empty("stack")}
    if with_stack:
        tables["stack"] = schema.conform("stack", pl.DataFrame({
            "rank": [0, 0, 0], "thread": [77, 77, 77], "function": ["train.py(10): main", "model.py(3): forward",
                                                                      "torch/nn/functional.py(99): linear"],
            "depth": [0, 1, 2], "start_ns": [1_000_000, 1_100_000, 1_150_000],
            "end_ns": [end, 2_000_000, 1_300_000]}))
    return tables


@pytest.fixture(scope="module")
def data():
    return prepare_timeline(**_run())


def _marks(figure: go.Figure) -> int:
    """Drawn marks: non-empty heatmap cells, bars, line points."""
    total = 0
    for trace in figure.data:
        if trace.type == "heatmap":
            total += int(np.count_nonzero(~np.isnan(np.asarray(trace.z, dtype=float))))
        elif trace.type in ("bar", "scatter"):
            total += len(trace.x) if trace.x is not None else 0
    return total


def _validated(figure: go.Figure) -> go.Figure:
    """The figure is built unvalidated for speed; plotly's validation must still accept it."""
    return go.Figure(figure.to_dict())


def test_full_view_marks_are_bounded_and_the_payload_small(data) -> None:
    view = timeline_view(data)
    figure = timeline_figure(view, "t")
    _validated(figure)
    assert view.cells.height > 0, "a dense run is aggregated when zoomed out"
    assert _marks(figure) <= MARK_BUDGET + 50  # + the closing point of each step line
    assert len(figure.to_json()) <= MAX_PAYLOAD


def test_deep_zoom_draws_each_event_once_with_its_rate(data) -> None:
    view = timeline_view(data, (1_500_000, 1_520_000))
    figure = timeline_figure(view, "t")
    _validated(figure)
    bars = [t for t in figure.data if t.type == "bar" and t.name in ("big_gemm", "small_add")]
    kernels_in_main_panel = sum(len(t.x) for t in bars if t.yaxis == "y")
    main_lanes = view.lanes.filter(pl.col("group") != OVERLAY_GROUP).get_column("lane").to_list()
    assert kernels_in_main_panel == view.events.filter(
        (pl.col("kind") == "kernel") & pl.col("lane").is_in(main_lanes)).height == 60
    gemm = next(t for t in bars if t.name == "big_gemm" and t.yaxis == "y")
    assert "FLOP/s" in gemm.hovertemplate and "big_gemm" in gemm.hovertemplate
    # 1.8 GFLOP in 900 ns = 2 PFLOP/s: the rate travels in customdata, formatted by the hover template,
    # after the columns naming the event (kind, rank, stream, device, start from the run start).
    assert gemm.customdata[0][7] == pytest.approx(1.8e9 / 900e-9)
    kind, rank, stream, device, offset = gemm.customdata[0][:5]
    assert (kind, rank, device) == (KIND_CODES["kernel"], 0, 0) and offset == gemm_start(view) - data.start_ns
    assert stream in (0, 1, 2)
    # A 900 ns kernel is 4.5 % of a 20 µs window (~45 px): too narrow for its name; in an 8 µs window
    # (~110 px) its name is written inside it; a 120 ns small_add never is.
    assert gemm.text is None and gemm.textposition == "none"
    closer = timeline_figure(timeline_view(data, (1_500_000, 1_508_000)), "t")
    named = {t.name: t for t in closer.data if t.type == "bar" and t.yaxis == "y"}
    assert set(named["big_gemm"].text) == {"big_gemm"} and named["big_gemm"].textposition == "inside"
    assert named["small_add"].text is None
    assert gemm.marker.color == colour_for("void big_gemm<float>(float*)")


def gemm_start(view) -> int:
    return int(view.events.filter(pl.col("name") == "void big_gemm<float>(float*)").sort("start_ns")
               .get_column("start_ns")[0])


def test_time_axis_unit_fits_the_window(data) -> None:
    whole = timeline_figure(timeline_view(data), "t")
    assert whole.layout.xaxis.title.text == "time since run start (ms)"
    deep = timeline_figure(timeline_view(data, (1_500_000, 1_520_000)), "t")
    assert deep.layout.xaxis.title.text == "time since run start (µs)"
    origin = data.start_ns
    assert list(deep.layout.xaxis.range) == pytest.approx([(1_500_000 - origin) / 1e3, (1_520_000 - origin) / 1e3])
    assert deep.layout.meta["window"] == [1_500_000, 1_520_000]


def test_highlight_greys_other_kernels_in_bars_and_cells(data) -> None:
    gemm = "void big_gemm<float>(float*)"
    selected = [kernel_key(gemm)]
    deep = timeline_figure(timeline_view(data, (1_500_000, 1_520_000), selected_keys=selected), "t")
    kernel_bars = [t for t in deep.data if t.type == "bar" and t.name in ("big_gemm", "small_add")]
    colours = {t.name: t.marker.color for t in kernel_bars}
    assert colours == {"big_gemm": colour_for(gemm), "small_add": GREY}
    whole = timeline_figure(timeline_view(data, selected_keys=selected), "t")
    heatmap = next(t for t in whole.data if t.type == "heatmap" and t.yaxis == "y")
    palette = {colour for _, colour in heatmap.colorscale}
    gemm_shades = {blend(colour_for(gemm), level) for level in range(LEVELS)}
    grey_shades = {blend(GREY, level) for level in range(LEVELS)}
    # Every kernel bucket holds some big_gemm, so it is coloured by it, never grey; without the
    # selection the same buckets are coloured by whichever kernel dominates.
    assert palette & gemm_shades and not palette & grey_shades - gemm_shades
    plain = timeline_figure(timeline_view(data), "t")
    plain_heatmap = next(t for t in plain.data if t.type == "heatmap" and t.yaxis == "y")
    assert "selected kernels" not in plain_heatmap.hovertemplate
    assert "selected kernels" in heatmap.hovertemplate


def test_selection_of_a_kernel_not_in_a_bucket_greys_it() -> None:
    tables = _run(6_000, streams=1, with_stack=False)
    tables["kernels"] = tables["kernels"].with_columns(
        pl.when(pl.col("start_ns") < 2_000_000).then(pl.lit("early")).otherwise(pl.lit("late")).alias("name"))
    data = prepare_timeline(**tables)
    view = timeline_view(data, selected_keys=[kernel_key("early")])
    cells = view.cells.filter(pl.col("kind") == "kernel")
    assert cells.filter(pl.col("start_ns") >= 2_000_000).get_column("selected_busy").max() == 0
    assert cells.filter(pl.col("end_ns") <= 2_000_000).get_column("selected_busy").min() > 0
    figure = timeline_figure(view, "t")
    heatmap = next(t for t in figure.data if t.type == "heatmap" and t.yaxis == "y")
    colours = {colour for _, colour in heatmap.colorscale}
    assert colours & {blend(GREY, level) for level in range(LEVELS)}
    assert colours & {blend(colour_for("early"), level) for level in range(LEVELS)}


def test_panels_for_copies_and_stacks(data) -> None:
    figure = timeline_figure(timeline_view(data, (1_000_000, 1_400_000)), "t")
    titles = [figure.layout[f"yaxis{n}"].title.text for n in (2, 3, 4)]
    assert titles[0].startswith("copy bandwidth") and titles[1].startswith("bytes in flight")
    assert titles[2].startswith("Python stack")
    lines = [t for t in figure.data if t.type == "scatter" and t.yaxis == "y2"]
    assert {t.name for t in lines} == {"memcpy HtoD", "memcpy DtoH", "memset"}
    # Stack frames drawn one by one at their depth, with kernels under them on the 'kernels' row (y = -1).
    frames = [t for t in figure.data if t.type == "bar" and t.yaxis == "y4" and t.name == "frames"]
    assert sorted({y for t in frames for y in t.y}) == [0.5, 1.5, 2.5]
    assert any(t.yaxis == "y4" and min(t.y) == -1 for t in figure.data if t.type in ("bar", "heatmap"))
    assert figure.layout.yaxis4.ticktext[0] == "kernels"


def test_lane_labels_and_a_run_without_events() -> None:
    data = prepare_timeline(**_run(300, streams=2, with_stack=False))
    figure = timeline_figure(timeline_view(data), "t")
    assert list(figure.layout.yaxis.ticktext) == ["GPU0 s0", "GPU0 s1", "GPU0 s9", "CPU 77"]
    empty = prepare_timeline(schema.empty("kernels"), schema.empty("memcpy"), schema.empty("ranges"),
                             schema.empty("stack"))
    blank = timeline_figure(timeline_view(empty), "t")
    assert "no kernels" in blank.layout.annotations[0].text


def test_buckets_paler_when_less_busy() -> None:
    assert blend("#0072B2", LEVELS - 1) == "#0072b2"
    pale, full = blend("#0072B2", 0), "#0072b2"
    assert all(int(pale[i:i + 2], 16) > int(full[i:i + 2], 16) for i in (1, 3, 5))


def test_the_dict_sent_by_callbacks_is_the_same_figure_in_a_smaller_encoding(data) -> None:
    view = timeline_view(data, (1_000_000, 1_600_000))
    as_dict = timeline_figure_dict(view, "t")
    validated = go.Figure(as_dict)  # plotly's validation accepts it, typed arrays included
    heatmap = next(t for t in as_dict["data"] if t["type"] == "heatmap")
    assert set(heatmap["z"]) == {"dtype", "bdata", "shape"}  # base64, not a list of numbers
    assert json.loads(validated.to_json()) == json.loads(timeline_figure(view, "t").to_json())
    # plotly.js reads the dict as is: no plotly.py shorthands such as `marker_color` may be in it.
    for trace in as_dict["data"]:
        known = type(go.Figure(data=[{"type": trace["type"]}]).data[0])._valid_props
        assert set(trace) <= known, set(trace) - known
    assert set(as_dict["layout"]) <= go.Layout._valid_props | {f"yaxis{n}" for n in range(2, 9)} | {"xaxis2", "legend2"}


def test_window_text_keeps_about_four_digits_of_the_window_width() -> None:
    assert window_span_text(2_066_000_000, 2_070_000_000, 1_222_750) == "2,064.777–2,068.777 ms"
    assert window_span_text(0, 53_300_000_000, 0) == "0.00–53.30 s"
    assert window_span_text(1_000, 1_450, 0) == "1,000.0–1,450.0 ns"


def test_bucket_rows_are_one_unsmoothed_image_parted_by_white_lines(data) -> None:
    figure = timeline_figure(timeline_view(data), "t")
    heatmap = next(t for t in figure.data if t.type == "heatmap" and t.yaxis == "y")
    # plotly.js draws a heatmap as one image pixel per cell, scaled up unsmoothed (image-rendering:
    # pixelated), only without gaps or smoothing and on evenly spaced rows and columns; otherwise it paints
    # every cell on a canvas the size of the plot and encodes it as a PNG.
    assert not heatmap.ygap and not heatmap.xgap and not heatmap.zsmooth
    assert heatmap.x is None and heatmap.dx > 0
    assert np.allclose(np.diff(np.asarray(heatmap.y, dtype=float)), 1.0)
    gaps = next(t for t in figure.data if t.name == "row gaps" and t.yaxis == "y")
    assert gaps.mode == "lines" and gaps.hoverinfo == "skip" and gaps.line.color == "white"
    edges = sorted({y for y in gaps.y if y is not None})
    rows = np.asarray(heatmap.y, dtype=float)
    assert edges == sorted({*(rows - 0.5).tolist(), *(rows + 0.5).tolist()})
    # Drawn over the cells, under the exact bars.
    order = [t.name for t in figure.data if t.yaxis == "y"]
    assert order.index("row gaps") == order.index("buckets") + 1
