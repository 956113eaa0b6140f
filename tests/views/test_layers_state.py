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
