"""Memory figures: tracks per buffer type, units, peak annotation, cross-filter marks, growth bars."""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl
import pytest

from dashboard.analysis import memory as analysis
from dashboard.collectors import registry
from dashboard.demo import tt_memory_log
from dashboard.figures import memory as figures
from dashboard.figures.theme import colour_for


@pytest.fixture(scope="module")
def op_memory(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    run = tt_memory_log.write(tmp_path_factory.mktemp("tt"))[0]
    return registry.collect([run]).tables["op_memory"]


def _titles(figure: go.Figure) -> list[str]:
    return [a.text for a in figure.layout.annotations if a.xref == "paper" and a.yref == "paper"]


def test_one_track_per_buffer_type_with_capacity(op_memory: pl.DataFrame) -> None:
    figure = figures.memory_curves_figure(op_memory)
    titles = _titles(figure)
    # TRACE has no region (capacity 0) so it gets no track; fragmentation is the last one.
    assert titles[:3] == ["DRAM per bank", "L1 per bank", "L1_SMALL per bank"]
    assert titles[3].startswith("Fragmentation")
    assert figure.layout.yaxis.title.text == "MiB/bank" and figure.layout.yaxis3.title.text == "KiB/bank"
    allocated = next(t for t in figure.data if t.name == "DRAM allocated")
    assert allocated.line.color == colour_for("DRAM")
    assert max(allocated.y) == pytest.approx(600.009, abs=0.01)  # MiB per bank at the peak
    assert list(allocated.customdata[0][:1]) == [allocated.x[0]]  # op index travels with each point
    capacity = [s for s in figure.layout.shapes if s.type == "line" and s.y0 == s.y1 and s.yref == "y"]
    assert capacity and capacity[0].y0 == pytest.approx(1023.418, abs=0.001)
    device = figures.memory_curves_figure(op_memory, per_bank=False, show_fragmentation=False)
    assert device.layout.yaxis.title.text == "GiB (device)" and len(_titles(device)) == 3


def test_peak_is_annotated_with_its_culprit(op_memory: pl.DataFrame) -> None:
    figure = figures.memory_curves_figure(op_memory)
    dram_peak = analysis.peaks(op_memory).filter(pl.col("buffer_type") == "DRAM").row(0, named=True)
    notes = [a.text for a in figure.layout.annotations if a.text and a.text.startswith("peak")]
    dram_note = next(n for n in notes if "ttnn.mean" in n)
    assert f"allocated by ttnn.multiply #{dram_peak['culprit_op_index']}" in dram_note
    assert f"({tt_memory_log.PEAK_CULPRIT_LOC})" in dram_note and "59%" in dram_note
    star = next(t for t in figure.data if t.name == "DRAM peak")
    assert list(star.x) == [dram_peak["peak_op_index"]]


def test_cross_filter_marks(op_memory: pl.DataFrame) -> None:
    plain = figures.memory_curves_figure(op_memory)
    marked = figures.memory_curves_figure(op_memory, highlight_ops=[60, 120], selected_op=150, op_range=(90, 110))
    highlighted = [t for t in marked.data if t.name == "highlighted ops"]
    assert len(highlighted) == 3 and all(sorted(t.x) == [60, 120] for t in highlighted)
    regions = analysis.const_eval_regions(op_memory).height
    rects = [s for s in marked.layout.shapes if s.type == "rect"]
    plain_rects = [s for s in plain.layout.shapes if s.type == "rect"]
    assert len(plain_rects) == regions * 4  # const-eval shading on each of the 4 tracks
    assert len(rects) == len(plain_rects) + 4  # plus the op range band
    band = [s for s in rects if s.x0 == 89.5 and s.x1 == 110.5]
    assert len(band) == 4
    vertical = [s for s in marked.layout.shapes if s.type == "line" and s.x0 == s.x1 == 150]
    assert len(vertical) == 4


def test_downsampling_bounds_the_points(op_memory: pl.DataFrame) -> None:
    figure = figures.memory_curves_figure(op_memory, max_points=60)
    allocated = next(t for t in figure.data if t.name == "DRAM allocated")
    assert len(allocated.x) <= 60
    assert max(allocated.y) == pytest.approx(600.009, abs=0.01)  # the peak survives


def test_growth_bars_and_fragmentation_panel(op_memory: pl.DataFrame) -> None:
    top = analysis.top_growth(op_memory, n=3)
    figure = figures.top_growth_figure(top, selected_op=int(top["op_index"][0]))
    bars = [t for t in figure.data if isinstance(t, go.Bar)]
    assert [b.name for b in bars] == ["DRAM", "L1", "L1_SMALL"]
    dram = bars[0]
    assert f"({tt_memory_log.PEAK_CULPRIT_LOC})" in " ".join(dram.y)
    assert max(dram.x) == pytest.approx(top.filter(pl.col("buffer_type") == "DRAM")["delta_per_bank"].max()
                                        / 1024**2)
    assert 2 in list(dram.marker.line.width)  # the selected op is outlined
    # Fragmentation is a panel of the curves figure (the page's), in percent.
    frag = [t for t in figures.memory_curves_figure(op_memory).data if (t.name or "").endswith("fragmentation")]
    assert {t.name for t in frag} == {"DRAM fragmentation", "L1 fragmentation", "L1_SMALL fragmentation"}
    assert all(0 <= y <= 100 for t in frag for y in t.y)


def test_empty_inputs_give_a_message(op_memory: pl.DataFrame) -> None:
    empty = op_memory.head(0)
    for figure in (figures.memory_curves_figure(empty), figures.top_growth_figure(analysis.top_growth(empty)),
                   figures.memory_curves_figure(op_memory, buffer_types=["TRACE"])):
        assert figure.layout.annotations and not figure.data




def test_slots_meta_and_in_place_updates(op_memory: pl.DataFrame) -> None:
    """What a page needs to update the curves in place: trace indices, empty highlight slots, helpers."""
    profiler = analysis.peaks(op_memory, housekeeping_snapshots=False)
    figure = figures.memory_curves_figure(op_memory, highlight_slots=True, peak_rows=profiler, regions=[(3, 9)])
    meta = figure.layout.meta
    assert [t["buffer_type"] for t in meta["tracks"]] == ["DRAM", "L1", "L1_SMALL"] and meta["rows"] == 4
    l1 = meta["tracks"][1]
    assert figure.data[l1["allocated"]].name == "L1 allocated" and figure.data[l1["free"]].name == "L1 free"
    assert figure.data[l1["largest_free"]].name == "L1 largest free block"
    slot = figure.data[l1["highlight"]]
    assert slot.name == "highlighted ops" and len(slot.x) == 0 and not slot.showlegend
    assert figure.data[meta["fragmentation"]["L1"]].name == "L1 fragmentation"
    # The profiler's view skips the snapshot before a deallocate: the L1 star moves.
    star = figure.data[l1["peak"]]
    true_peak = analysis.peaks(op_memory).filter(pl.col("buffer_type") == "L1")["peak_op_index"].to_list()
    profiler_peak = profiler.filter(pl.col("buffer_type") == "L1")["peak_op_index"].to_list()
    assert list(star.x) != true_peak and list(star.x) == profiler_peak
    rects = [s for s in figure.layout.shapes if s.type == "rect"]
    assert len(rects) == 4 and all(s.x0 == 2.5 and s.x1 == 9.5 for s in rects)  # the given regions
    curve = analysis.memory_curves(op_memory).filter(pl.col("buffer_type") == "L1")
    points = figures.track_points(curve, "free", l1["divisor"], 10)
    assert len(points["x"]) <= 10 and list(points["customdata"][:, 0]) == list(points["x"])
    assert max(points["y"]) == pytest.approx(curve["free"].max() / l1["divisor"])
    marks = figures.mark_shapes(2, (5, 8), 6)
    assert [(s["type"], s["xref"]) for s in marks] == [("rect", "x"), ("line", "x"), ("rect", "x2"), ("line", "x2")]
    assert figures.mark_shapes(3, None, None) == []
