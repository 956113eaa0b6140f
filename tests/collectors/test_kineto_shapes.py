"""Input shapes and dtypes of Kineto ops in the `ranges` table: exact texts, odd and hostile values, every path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dashboard.collectors.inputs import CUT_MARK, MAX_INPUT_CHARS
from dashboard.collectors.kineto import collector as kineto_collector
from dashboard.collectors.kineto import parallel as kineto_parallel
from dashboard.collectors.kineto.columns import NOT_UTF8_ARGS
from dashboard.collectors.kineto.decode import decode_file
from dashboard.collectors.kineto.shapes import list_text
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.collectors.test_kineto_parsing import collect, launch, write, x

_SMALL = {"min_bytes": 0, "task_bytes": 4096, "chunk_bytes": 1024, "workers": 3}
HUGE_TENSORS = 1_000  # `[1024, 1024]` each: ~14,000 characters as text


def op(name: str, ts: float, dims: Any = None, types: Any = None, **args: Any) -> dict:
    """A cpu_op with `Input Dims` / `Input type` when given (the key is left out for None)."""
    if dims is not None:
        args["Input Dims"] = dims
    if types is not None:
        args["Input type"] = types
    return x("cpu_op", name, ts, 5.0, **args)


# (name, Input Dims, Input type, stored input_shapes, stored input_dtypes); None = the key is absent.
CASES: list[tuple[str, Any, Any, str | None, str | None]] = [
    ("aten::conv2d", [[64, 3, 224, 224], [64, 3, 7, 7], [64]], ["float", "float", "float"],
     "[64, 3, 224, 224], [64, 3, 7, 7], [64]", "float, float, float"),
    ("aten::cat", [[[4, 3], [4, 3]], []], ["TensorList", "Scalar"], "[[4, 3], [4, 3]], []", "TensorList, Scalar"),
    ("aten::add_", [[4, 3], [], []], ["float", "double", "Scalar"], "[4, 3], [], []", "float, double, Scalar"),
    ("aten::empty", [[], [], []], ["ScalarList", "Scalar", ""], "[], [], []", 'ScalarList, Scalar, ""'),
    ("aten::copy_", [[4, 3], [4, 3]], ["c10::Half", "long int"], "[4, 3], [4, 3]", "c10::Half, long int"),
    ("aten::view", [[-1, 3]], ["c10::BFloat16"], "[-1, 3]", "c10::BFloat16"),
    ("aten::ones", [], [], "", ""),  # recorded, no inputs
    ("aten::zeros", None, None, None, None),  # not recorded
    ("aten::size", [[8]], None, "[8]", None),  # shapes without dtypes (2021 traces)
    ("aten::odd", [[2.5, 1e3], ["a"]], ["a,b", 'say "hi"', "\u00e9t\u00e9", 7, None],
     '[2.5, 1000.0], ["a"]', '"a,b", "say \\"hi\\"", \u00e9t\u00e9, 7, null'),
    ("aten::null", None, None, None, None),
]


def _events(cases: list[tuple[str, Any, Any, str | None, str | None]]) -> list[dict]:
    events = []
    for index, (name, dims, types, _, _) in enumerate(cases):
        events.append(op(name, 1000.0 + index * 10, dims, types, **{"External id": index + 1}))
    # JSON nulls: the same as absent.
    events[-1]["args"].update({"Input Dims": None, "Input type": None})
    return events


def _stored(ranges: pl.DataFrame) -> dict[str, tuple[str | None, str | None]]:
    return {name: (shapes, dtypes) for name, shapes, dtypes
            in ranges.select("name", "input_shapes", "input_dtypes").iter_rows()}


def test_every_op_stores_its_input_shapes_and_dtypes_exactly(tmp_path: Path) -> None:
    result = collect(write(tmp_path / "t.json", _events(CASES)))
    stored = _stored(result.tables["ranges"])
    assert stored == {name: (shapes, dtypes) for name, _, _, shapes, dtypes in CASES}
    assert not any("Input" in warning for warning in result.warnings)


def test_other_layouts_of_the_same_json_store_the_same_text(tmp_path: Path) -> None:
    """Pretty-printed traces (newlines, indents inside the lists) read as the profiler's one-line form."""
    events = _events(CASES)
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=3, separators=(" ,", " :  ")))
    assert _stored(collect(path).tables["ranges"]) == {name: (shapes, dtypes) for name, _, _, shapes, dtypes in CASES}


def test_values_that_are_not_lists_are_left_empty_and_counted(tmp_path: Path) -> None:
    events = [
        op("aten::a", 1000.0, "[4, 3]", "float"),  # strings, not lists
        op("aten::b", 1010.0, 12, {"x": 1}),
        op("aten::c", 1020.0, [[4, 3]], ["float"]),
    ]
    result = collect(write(tmp_path / "bad.json", events))
    assert _stored(result.tables["ranges"]) == {"aten::a": (None, None), "aten::b": (None, None),
                                                "aten::c": ("[4, 3]", "float")}
    path = tmp_path / "bad.json"
    assert f"{path}: 2 ranges whose `Input Dims` is not a list; their input_shapes are left empty" in result.warnings
    assert f"{path}: 2 ranges whose `Input type` is not a list; their input_dtypes are left empty" in result.warnings


def test_huge_lists_are_cut_at_the_limit_and_counted(tmp_path: Path) -> None:
    huge_dims = [[[1024, 1024]] * HUGE_TENSORS, [[1024]] * HUGE_TENSORS]
    huge_types = ["TensorList"] * 2 + ["c10::BFloat16"] * (HUGE_TENSORS * 2)
    full_shapes = list_text(json.dumps(huge_dims), dtypes=False)
    assert full_shapes is not None and len(full_shapes) > MAX_INPUT_CHARS
    events = [op("aten::_foreach_add_", 1000.0 + step * 100, huge_dims, huge_types) for step in range(3)]
    events.append(op("aten::mm", 1050.0, [[4, 8], [8, 2]], ["float", "float"]))
    path = write(tmp_path / "huge.json", events)
    result = collect(path)
    ranges = result.tables["ranges"]
    foreach = ranges.filter(pl.col("name") == "aten::_foreach_add_")
    assert foreach.height == 3
    for shapes, dtypes in foreach.select("input_shapes", "input_dtypes").iter_rows():
        assert len(shapes) == len(dtypes) == MAX_INPUT_CHARS
        assert shapes == full_shapes[:MAX_INPUT_CHARS - 1] + CUT_MARK
        assert dtypes.startswith("TensorList, TensorList, c10::BFloat16, ") and dtypes.endswith(CUT_MARK)
    assert _stored(ranges)["aten::mm"] == ("[4, 8], [8, 2]", "float, float")
    assert (f"{path}: 3 ranges' `Input Dims` longer than {MAX_INPUT_CHARS:,} characters as text, cut there and "
            f"ended with {CUT_MARK} (the longest: {len(full_shapes):,} characters, on aten::_foreach_add_)"
            in result.warnings)
    assert sum("`Input type` longer than" in warning for warning in result.warnings) == 1


def test_flops_still_come_from_the_shapes_of_ops_with_a_formula(tmp_path: Path) -> None:
    events = [op("aten::mm", 1000.0, [[64, 32], [32, 16]], ["float", "float"], **{"External id": 1}),
              op("aten::relu", 1100.0, [[64, 32]], ["float"], **{"External id": 2}),
              *launch(1001.0, 700, 1010.0, 5.0, ext=1)]
    result = collect(write(tmp_path / "f.json", events))
    ranges = result.tables["ranges"]
    assert ranges.filter(pl.col("name") == "aten::mm").get_column("flops").to_list() == [2 * 64 * 16 * 32]
    assert ranges.filter(pl.col("name") == "aten::relu").get_column("flops").to_list() == [None]
    assert result.tables["kernels"].get_column("flops").to_list() == [2 * 64 * 16 * 32]


def test_parallel_decode_and_lenient_chunks_store_the_same_texts(tmp_path: Path) -> None:
    events = []
    for repeat in range(40):
        for index, (name, dims, types, _, _) in enumerate(CASES[:-1]):
            event = op(name, 1000.0 + (repeat * len(CASES) + index) * 10, dims, types)
            if repeat % 9 == 4:
                event["args"]["External id"] = "12"  # a number as a string sends the rest down the lenient path
            events.append(event)
    path = write(tmp_path / "many.json", events)
    serial = decode_file(path)
    parallel = kineto_parallel.decode_parallel(path, **_SMALL)
    assert parallel is not None and serial.lenient and parallel.lenient
    columns = ["name", "ts", "input_dims", "input_types"]
    assert parallel.frames["range"].select(columns).sort("ts").equals(serial.frames["range"].select(columns).sort("ts"))
    stored = collect(path).tables["ranges"]
    expected = {name: (shapes, dtypes) for name, _, _, shapes, dtypes in CASES[:-1]}
    assert _stored(stored) == expected
    assert stored.height == 40 * (len(CASES) - 1)
    assert stored.group_by("name").agg(pl.col("input_shapes").n_unique()).get_column("input_shapes").max() == 1


def test_a_trace_without_record_shapes_stores_null(tmp_path: Path) -> None:
    events = [op("aten::mm", 1000.0 + i * 10, **{"External id": i}) for i in range(5)]
    ranges = collect(write(tmp_path / "plain.json", events)).tables["ranges"]
    assert ranges.get_column("input_shapes").null_count() == ranges.height == 5
    assert ranges.get_column("input_dtypes").null_count() == 5


def test_the_run_on_disk_holds_the_texts(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", _events(CASES))
    store = RunStore(tmp_path / "data")
    run = store.open(ingest_paths(store, [path], name="shapes"))
    stored = run.frame("ranges").select("name", "input_shapes", "input_dtypes")
    assert stored.schema["input_shapes"] == pl.Categorical and stored.schema["input_dtypes"] == pl.Categorical
    assert _stored(stored) == {name: (shapes, dtypes) for name, _, _, shapes, dtypes in CASES}


@pytest.mark.parametrize(("raw", "dtypes", "text"), [
    ("[[1, 2], []]", False, "[1, 2], []"),
    ("[ [1,2] ,\n [ ] ]", False, "[1, 2], []"),
    ('["float", ""]', True, 'float, ""'),
    ('[\t"long int" ]', True, "long int"),
    ("[]", True, ""),
    ('"x"', True, None),
    ("{}", False, None),
])
def test_list_text_of_any_layout(raw: str, dtypes: bool, text: str | None) -> None:
    assert list_text(raw, dtypes) == text


@pytest.mark.parametrize("parallel", [False, True])
def test_bytes_that_are_not_utf8_inside_the_inputs_are_replaced_and_counted(tmp_path: Path, parallel: bool,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    events = [op("aten::conv2d", 1000.0 + i * 10, [[1, 3, 8, 8], [4, 3, 3, 3]], ["fl@at", "float"],
                 **{"Concrete Inputs": ["", "", "[1, 1]" if i else "[1, @]"]}) for i in range(200)]
    events.append(op("aten::mm", 5000.0, [[4, 8], [8, 2]], ["float", "float"]))
    path = tmp_path / "bad_utf8.json"
    path.write_bytes(json.dumps({"traceEvents": events}).encode().replace(b"@", b"\xff"))
    if parallel:
        real = kineto_parallel.decode_parallel
        monkeypatch.setattr(kineto_collector, "decode_parallel", lambda p, report: real(p, report, **_SMALL))
    result = collect(path)
    stored = result.tables["ranges"].select("name", "input_shapes", "input_dtypes").unique().sort("name").rows()
    assert stored == [("aten::conv2d", "[1, 3, 8, 8], [4, 3, 3, 3]", "fl\ufffdat, float"),
                      ("aten::mm", "[4, 8], [8, 2]", "float, float")]
    # 200 dtype lists and the first convolution's concrete inputs.
    assert f"{path}: 201 {NOT_UTF8_ARGS}" in result.warnings
