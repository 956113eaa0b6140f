"""The captured-run demo: the real capture path over the fake backend, deterministic."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard import schema
from dashboard.demo import captured_run


@pytest.fixture(scope="module")
def demo() -> dict[str, pl.DataFrame]:
    return captured_run.tables()


def test_demo_is_deterministic(demo: dict[str, pl.DataFrame]) -> None:
    again = captured_run.tables()
    assert demo.keys() == again.keys()
    for name, frame in demo.items():
        assert frame.equals(again[name]), name


def test_demo_has_every_captured_table_at_a_realistic_size(demo: dict[str, pl.DataFrame]) -> None:
    assert set(demo) == {"kernels", "memcpy", "api_calls", "ranges", "stack"}
    for name, frame in demo.items():
        assert frame.schema == schema.schema_of(name), name
    assert 1_000 <= demo["kernels"].height <= 5_000
    kinds = set(demo["memcpy"].get_column("kind"))
    assert {"HtoD", "DtoH", "Memset"} <= kinds
    steps = demo["ranges"].filter(pl.col("category") == "profiler_step")
    assert steps.get_column("name").to_list() == [f"ProfilerStep#{i}" for i in range(captured_run.STEPS)]


def test_demo_layers_have_both_passes_flops_and_their_kernels(demo: dict[str, pl.DataFrame]) -> None:
    modules = demo["ranges"].filter(pl.col("category") == "module")
    per_pass = modules.group_by("pass").len().sort("pass").rows()
    assert per_pass == [("backward", 625), ("forward", 625)]
    fc = modules.filter(pl.col("name") == "GPT.blocks.0.mlp.c_fc")
    by_pass = dict(fc.group_by("pass").agg(pl.col("flops").first()).rows())
    expected = 2.0 * captured_run.TOKENS * 4 * captured_run.D_MODEL * captured_run.D_MODEL
    assert by_pass == {"forward": expected, "backward": 2 * expected}
    kernels = demo["kernels"]
    outside_layers = kernels.filter(pl.col("layer").is_null())
    assert set(outside_layers.get_column("op")) == {"Optimizer.step#AdamW.step"}
    assert set(outside_layers.get_column("pass")) == {"optimizer"}
    # Kernel FLOPs add up to the layer's, per pass (over all steps).
    kernel_sum = kernels.filter(pl.col("layer") == "GPT.blocks.0.mlp.c_fc").group_by("pass").agg(pl.col("flops").sum())
    steps = captured_run.STEPS
    assert dict(kernel_sum.rows()) == pytest.approx({p: steps * f for p, f in by_pass.items()})


def test_demo_stacks_are_on_the_kernels_clock(demo: dict[str, pl.DataFrame]) -> None:
    stack, kernels = demo["stack"], demo["kernels"]
    assert stack.get_column("function").str.starts_with("train_step (captured_run.py").sum() == captured_run.STEPS
    assert stack.get_column("start_ns").min() < kernels.get_column("start_ns").min()
    assert stack.get_column("depth").max() >= 4
