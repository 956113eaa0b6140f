"""The passes lane (the union of each pass's kernels per step, each pass on its stripe) and the key to the passes and
ranges lanes."""

from __future__ import annotations

import html
import re
from pathlib import Path

import plotly.graph_objects as go

from dashboard import schema
from dashboard.analysis.timeline import prepare_timeline, timeline_view
from dashboard.collectors.kineto.collector import COLLECTOR
from dashboard.figures.theme import PASS_COLOURS
from dashboard.figures.timeline import timeline_figure_dict
from dashboard.figures.timeline_legend import LANE_KEY, LEGEND_RANGE_NAMES
from dashboard.figures.timeline_marks import PASS_STRIPE
from tests.support.kineto_passes_trace import Shape, write
from tests.support.typed_arrays import decoded


def _figure(tmp_path: Path, **shape: bool) -> dict:
    paths = [write(tmp_path, Shape(**shape), rank=rank) for rank in (0, 1)]
    tables = COLLECTOR.collect(paths, lambda fraction, message: None).tables
    data = prepare_timeline(tables["kernels"], tables["memcpy"], tables["ranges"], schema.empty("stack"))
    figure = timeline_figure_dict(timeline_view(data), "t")
    go.Figure(figure)  # plotly accepts it
    return figure


def test_passes_lane_draws_one_bar_per_pass_per_step_and_rank_on_its_stripe(tmp_path: Path) -> None:
    figure = _figure(tmp_path, ddp=True)
    bars = {t["name"]: t for t in figure["data"] if t["type"] == "bar" and t.get("legendgroup", "").startswith("pass")}
    assert set(bars) == {"forward", "backward", "optimizer"}
    # A pass's bars are the union of its kernels per step (pass_bands); the generated kernels never touch, so one
    # bar per kernel: per rank and step forward 2, backward 7 (ddp), optimizer 3; x 2 steps x 2 ranks, plus the
    # launch after the last step (forward, outside steps) per rank.
    assert {name: len(bar["text"]) for name, bar in bars.items()} == {
        "forward": 2 * (2 * 2 + 1), "backward": 2 * 7 * 2, "optimizer": 2 * 3 * 2}
    assert bars["backward"]["text"][0] == "<b>backward</b> pass · step 5"
    assert {name: bar["marker"]["color"] for name, bar in bars.items()} == {n: PASS_COLOURS[n] for n in bars}
    # Bands of one step overlap in time (zero_grad runs before backward), so each pass has its own stripe.
    stripes = {name: sorted({round(y % 1, 6) for y in decoded(bar["y"])}) for name, bar in bars.items()}
    assert len({tuple(s) for s in stripes.values()}) == 3
    assert all(bar["width"] < PASS_STRIPE for bar in bars.values())


def _key_groups(figure: dict) -> dict[str, list[tuple[str, str]]]:
    """The key annotation read back: group title -> [(colour, name)] in its order."""
    (key,) = [note for note in figure["layout"].get("annotations", []) if note.get("name") == LANE_KEY]
    groups: dict[str, list[tuple[str, str]]] = {}
    for line in key["text"].split("<br>"):
        if not line:  # the blank line between groups
            continue
        if title := re.fullmatch(r"<b>(.*)</b>", line):
            entries = groups.setdefault(title[1], [])
        else:
            entry = re.fullmatch(r"<span style='color:(#[0-9A-Fa-f]{6})'>■</span> (.*)", line)
            assert entry is not None, line
            entries.append((entry[1], html.unescape(entry[2])))
    return groups


def test_the_lane_key_lists_the_passes_and_the_ranges_with_most_time(tmp_path: Path) -> None:
    figure = _figure(tmp_path)
    groups = _key_groups(figure)
    passes = groups["passes (per step)"]
    assert passes == [(PASS_COLOURS[name], name) for name in ("forward", "backward", "optimizer")]
    ranges = [name for _, name in groups["ranges (colour = name): most time in view"]]
    # after the steps (left out: each is one bar, named in its hover), `## backward ##` holds the most time
    # (420 µs per step), then the optimizer step (100 µs) and the convolution backward node (60 µs)
    assert len(ranges) == LEGEND_RANGE_NAMES
    assert ranges[:3] == ["## backward ##", "Optimizer.step#SGD.step", "autograd::engine…volutionBackward0"]
    assert not any(trace.get("legend") for trace in figure["data"])  # a key, not traces: nothing drawn
    (key,) = [note for note in figure["layout"]["annotations"] if note.get("name") == LANE_KEY]
    # Right of the lanes, in the figure's right margin (which holds its widest line): clear of the title and
    # of both time axes.
    assert key["xanchor"] == "left" and key["x"] >= 1 and key["xref"] == "paper"
    assert figure["layout"]["margin"]["r"] >= 240
