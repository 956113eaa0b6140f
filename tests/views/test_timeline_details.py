"""/timeline's details pane: a kernel's launching op chain with its input shapes and dtypes, end to end from a
Kineto trace through the store; how the inputs read."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dashboard.analysis.timeline_details import EventRef
from dashboard.collectors.inputs import CUT_MARK
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from dashboard.views import timeline
from dashboard.views.timeline_details import (
    MAX_INPUTS_SHOWN,
    NOT_RECORDED,
    NOT_STORED,
    _chain,
    details_pane,
    input_items,
    inputs_text,
)
from tests.collectors.test_kineto_parsing import MAIN, launch, write, x

KERNEL_TS = 1_150.0  # µs: the kernel aten::mm launched


def _trace(tmp_path: Path, record_shapes: bool) -> Path:
    def shapes(dims: list, types: list) -> dict:
        return {"Input Dims": dims, "Input type": types} if record_shapes else {}

    events = [
        x("user_annotation", "ProfilerStep#1", 1_000.0, 500.0, **{"External id": 1}),
        x("cpu_op", "aten::linear", 1_010.0, 200.0,
          **{"External id": 2, **shapes([[64, 32], [16, 32], [16]], ["float", "float", "float"])}),
        x("cpu_op", "aten::t", 1_015.0, 5.0, **{"External id": 3, **shapes([[16, 32]], ["float"])}),
        x("cpu_op", "aten::addmm", 1_030.0, 100.0,
          **{"External id": 4, **shapes([[16], [64, 32], [32, 16], [], []],
                                        ["float", "float", "float", "Scalar", "Scalar"])}),
        *launch(1_040.0, 900, KERNEL_TS, 20.0, ext=4),
    ]
    return write(tmp_path / "trace.pt.trace.json", events)


def _pane(tmp_path: Path, record_shapes: bool, ref: EventRef):
    store = RunStore(tmp_path / "data")
    run = store.open(ingest_paths(store, [_trace(tmp_path, record_shapes)], name="details"))
    state = timeline.State.from_query({"ev": ref.text()}, run)
    return details_pane(run, state)


def test_a_kernels_pane_shows_its_launching_op_chain_with_input_dtypes_and_shapes(tmp_path: Path) -> None:
    pane = _pane(tmp_path, True, EventRef("kernel", 0, 7, 0, int(KERNEL_TS * 1000)))
    assert pane is not None and pane.title == "sgemm_kernel"
    assert dict(pane.facts)["launching op"] == "aten::addmm"
    assert pane.chain == [
        ("ProfilerStep#1", "profiler_step"),
        ("aten::linear", "cpu_op · inputs float[64, 32], float[16, 32], float[16]"),
        ("aten::addmm", "cpu_op · inputs float[16], float[64, 32], float[32, 16], Scalar, Scalar"),
    ]
    assert pane.chain_note == ""


def test_an_ops_pane_shows_its_own_inputs_and_its_stored_columns(tmp_path: Path) -> None:
    pane = _pane(tmp_path, True, EventRef("range", 0, MAIN, 1, 1_010_000))
    assert pane is not None and pane.title == "aten::linear"
    assert pane.chain[-1] == ("aten::linear", "cpu_op · inputs float[64, 32], float[16, 32], float[16]")
    record = dict(pane.record)
    assert record["input_shapes"] == "[64, 32], [16, 32], [16]" and record["input_dtypes"] == "float, float, float"


def test_a_run_recorded_without_shapes_says_so(tmp_path: Path) -> None:
    pane = _pane(tmp_path, False, EventRef("kernel", 0, 7, 0, int(KERNEL_TS * 1000)))
    assert pane is not None
    assert [name for name, _ in pane.chain] == ["ProfilerStep#1", "aten::linear", "aten::addmm"]
    assert all("inputs" not in detail for _, detail in pane.chain)
    assert pane.chain_note == NOT_RECORDED


def test_a_run_ingested_before_inputs_were_stored_says_to_ingest_it_again(tmp_path: Path) -> None:
    """A run written by an earlier version: its ranges file has no input_shapes / input_dtypes columns."""
    store = RunStore(tmp_path / "data")
    run_id = ingest_paths(store, [_trace(tmp_path, True)], name="old")
    ranges_file = store.open(run_id).info.path / "ranges.parquet"
    pl.read_parquet(ranges_file).drop("input_shapes", "input_dtypes").write_parquet(ranges_file)
    run = RunStore(tmp_path / "data").open(run_id)
    ref = EventRef("kernel", 0, 7, 0, int(KERNEL_TS * 1000))
    pane = details_pane(run, timeline.State.from_query({"ev": ref.text()}, run))
    assert pane is not None and [name for name, _ in pane.chain][-1] == "aten::addmm"
    assert pane.chain_note == NOT_STORED


@pytest.mark.parametrize(("shapes", "dtypes", "text"), [
    ("[64, 3, 224, 224], [64], []", "float, float, Scalar", "float[64, 3, 224, 224], float[64], Scalar"),
    ("[[4, 3], [4, 3]], []", "TensorList, Scalar", "TensorList[[4, 3], [4, 3]], Scalar"),
    ("[4, 3], [], []", 'c10::Half, "", ScalarList', "c10::Half[4, 3], –, ScalarList"),
    ("", "", "no inputs"),
    ("[8]", None, "shapes [8]"),
    (None, "float", "dtypes float"),
    ("[1], [2]", "float", "shapes [1], [2] · dtypes float"),  # not one dtype per shape: both lists as they are
    ("[1], [2" + CUT_MARK, "float, float" + CUT_MARK, f"shapes [1], [2{CUT_MARK} · dtypes float, float{CUT_MARK}"),
    (None, None, None),
])
def test_inputs_read_as_dtype_and_shape_pairs(shapes: str | None, dtypes: str | None, text: str | None) -> None:
    assert inputs_text(shapes, dtypes) == text


def test_items_split_outside_brackets_and_quotes() -> None:
    assert input_items("[[4, 3], [4, 3]], [], [1]") == ["[[4, 3], [4, 3]]", "[]", "[1]"]
    assert input_items('float, "a, b", "x\\"y, z", Scalar') == ["float", '"a, b"', '"x\\"y, z"', "Scalar"]


def test_long_inputs_are_shortened_in_the_chain() -> None:
    shapes = ", ".join(["[1024, 1024]"] * 100)
    (_, detail), = _chain([{"name": "aten::_foreach_add_", "category": "cpu_op", "input_shapes": shapes,
                            "input_dtypes": ", ".join(["float"] * 100)}])
    assert detail.startswith("cpu_op · inputs float[1024, 1024], float[1024, 1024]")
    assert detail.endswith(f"… ({len(', '.join(['float[1024, 1024]'] * 100)):,} characters in all)")
    assert len(detail) < MAX_INPUTS_SHOWN + 60


@pytest.mark.shared
def test_a_real_trace_kernels_pane_shows_its_launching_ops_inputs(shared_dir: Path, tmp_path: Path) -> None:
    """CI-only (../shared's HTA sample). The kernel of the line shared/formats/kineto.md quotes (correlation
    6935929): its cudaLaunchKernel runs inside `forward` (`Input Dims` [[], []], `Input type` ["", ""])
    and `fbgemm::permute_sparse_features` ([[300], [300, 2048], [16334339], []], ["int", "int", "int", ""]),
    read from the raw JSON by hand."""
    store = RunStore(tmp_path / "data")
    sample = shared_dir / "samples" / "kineto" / "hta_trace_filter_sampled_rank-0.json.gz"
    run = store.open(ingest_paths(store, [sample], name="hta"))
    ref = EventRef("kernel", 0, 23, 0, 1682725898082228 * 1000)
    pane = details_pane(run, timeline.State.from_query({"ev": ref.text()}, run))
    assert pane is not None and pane.title == "permute_2D_lengths_kernel"
    assert pane.chain[-2:] == [("forward", "cpu_op · inputs –, –"),
                               ("fbgemm::permute_sparse_features",
                                "cpu_op · inputs int[300], int[300, 2048], int[16334339], –")]
