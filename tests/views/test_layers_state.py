"""/layers' URL state as its view State reads and writes it: a pass counts only with a layer, a box
selection from a click or the page's store is checked like a URL value, and the selected layer's
kernel chart is one of the figures the page (and so its export) draws."""

from __future__ import annotations

from pathlib import Path

from dashboard.store import RunStore
from dashboard.views import layers
from tests.support.layered_run import DEVICE_METADATA, layered_tables


def test_layer_state_round_trip_and_selection(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "data")
    run = store.open(store.write("layer-state", layered_tables(), metadata=DEVICE_METADATA))
    chosen = layers.State.from_query({"layer": "blocks.0.mlp", "pass": "backward", "dtype": "fp8", "rank": "1"}, run)
    assert chosen.selected == ("blocks.0.mlp", "backward")
    assert layers.State.from_query(chosen.to_query(), run) == chosen
    # No layer: the pass is dropped, so the URL does not carry a pass that selects nothing.
    assert layers.State.from_query({"pass": "backward", "rank": "99"}, run).to_query() == {}
    assert chosen.select(None).selected is None
    assert chosen.select(["embed", "sideways"]).selected == ("embed", "forward")
    assert chosen.select([7, "forward"]).selected is None  # not a layer name
    assert set(layers.figures(run, chosen)) == {"layer-runtime", "layer-throughput", "layer-kernels"}
    assert set(layers.figures(run, chosen.select(None))) == {"layer-runtime", "layer-throughput"}
    assert layers.detail(run, chosen).title.startswith("Kernels of blocks.0.mlp (backward): 2 kernels")


def test_the_peak_is_named_and_the_users_own_peak_is_url_state(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "data")
    run = store.open(store.write("layer-peak", layered_tables(), metadata=DEVICE_METADATA))
    auto = layers.State.from_query({}, run)
    assert auto.dtype == "auto" and auto.peak is None
    assert layers.peak_note(layers.peak(run, auto)).startswith(
        "Peak: H100 SXM BF16 989 TFLOP/s (datasheet, dense) for NVIDIA H100 80GB HBM3, 132 SMs; BF16: ")
    mine = layers.State.from_query({"peak": "400.5", "dtype": "fp8"}, run)
    assert mine.to_query() == {"peak": "400.5", "dtype": "fp8"}
    assert layers.peak(run, mine).value == 400.5e12
    throughput = layers.box_figures(run, mine)["layer-throughput"]
    assert any("set by you" in (note.text or "") for note in throughput.layout.annotations)
    assert layers.State.from_query({"peak": "-3"}, run).peak is None  # nonsense reads as no override
