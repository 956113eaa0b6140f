"""tritonparse traces (issue 30, shape 4): real traces from tritonparse's writer and parser on a real Triton
compile (tests/support/tritonparse_trace.py: compiles real, launches and the autotune verdict written by
tritonparse's own hooks, since nothing launches without a GPU), raw and parsed, plain and gzip.

The traces are written by the Python in $TRITONPARSE_PYTHON (default: this one) in a child process; the
tests skip where it lacks tritonparse, Triton or torch (`.ci/run` installs all three with the test extra).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.collectors.base import IngestError, no_progress
from dashboard.collectors.tritonparse import COLLECTOR
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from dashboard.views import compiler as compiler_view
from dashboard.views.compiler_data import python_source
from dashboard.views.compiler_launches import launches
from tests.support.tritonparse_trace import EXPECTED

PYTHON = os.environ.get("TRITONPARSE_PYTHON", sys.executable)
ROOT = Path(__file__).resolve().parents[2]


def _has_tritonparse() -> bool:
    probe = "import importlib.util as u; raise SystemExit(any(u.find_spec(m) is None for m in "\
            "('tritonparse', 'triton', 'torch')))"
    return subprocess.run([PYTHON, "-c", probe], capture_output=True, timeout=60).returncode == 0


requires_tritonparse = pytest.mark.skipif(not _has_tritonparse(), reason=f"{PYTHON} lacks tritonparse/triton/torch")


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not _has_tritonparse():
        pytest.skip(f"{PYTHON} lacks tritonparse, triton or torch")
    folder = tmp_path_factory.mktemp("tritonparse")
    env = {**os.environ, "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": str(folder / "cache"),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([PYTHON, "-m", "tests.support.tritonparse_trace", str(folder / "raw")], cwd=ROOT, env=env,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    parse = ("from tritonparse.parse.utils import unified_parse; import sys; "
             "unified_parse(source=sys.argv[1], out=sys.argv[2], overwrite=True)")
    done = subprocess.run([PYTHON, "-c", parse, str(folder / "raw"), str(folder / "parsed")], env=env,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (raw,) = (folder / "raw").glob("*.ndjson")
    (mapped,) = (folder / "parsed").glob("*_mapped.ndjson.gz")
    gz = folder / "gz" / (raw.name + ".gz")
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress(raw.read_bytes()))
    return {"raw": raw, "mapped": mapped, "gz": gz, "folder": folder}


def _records(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@requires_tritonparse
@pytest.mark.parametrize("form", ["raw", "mapped", "gz"])
def test_every_form_gives_the_compiles_launches_and_metadata(traces: dict[str, Path], form: str) -> None:
    path = traces[form]
    records = _records(path)
    compiles = [r for r in records if r["event_type"] == "compilation"]
    assert len(compiles) == EXPECTED["compiles"]
    collected = registry.collect([path])
    assert collected.collectors == ["tritonparse"]
    tables = collected.tables
    kernels = tables["ir_kernels"].sort("compile")
    assert kernels["kernel"].to_list() == ["add_kernel", "add_kernel", "scale_kernel"]
    assert kernels["num_warps"].to_list() == [4, 8, 4]
    assert set(kernels["target"]) == {"cuda:90"} and set(kernels["num_stages"]) == {3}
    assert kernels["triton_version"].to_list() == [r["payload"]["metadata"]["triton_version"] for r in compiles]
    assert kernels["shared"].to_list() == [r["payload"]["metadata"]["shared"] for r in compiles]
    # Every stage's IR the record holds is a step, in pipeline order, its text the record's own.
    steps = tables["ir_steps"].sort("compile", "step")
    for compiled, record in zip(kernels.iter_rows(named=True), compiles, strict=True):
        stages = [name.rsplit(".", 1)[1] for name in record["payload"]["file_content"] if not name.endswith(".json")]
        mine = steps.filter(pl.col("compile") == compiled["compile"])
        assert sorted(mine["stage"].to_list()) == sorted(stages) and set(mine["kind"]) == {"file"}
        assert mine["stage"].to_list()[:2] == ["ttir", "ttgir"]
        ttir = record["payload"]["file_content"][f"{compiled['kernel']}.ttir"]
        assert mine.filter(pl.col("stage") == "ttir")["lines"].item() == ttir.count("\n")
    # IR lines map back to the kernel's Python lines.
    locs = tables["ir_locs"]
    assert locs.height > 0 and set(locs["file"]) == {compiles[0]["payload"]["python_source"]["file_path"]}
    # Launches: per kernel, with the compile that ran, the grid and the arguments.
    launched = tables["ir_launches"]
    assert dict(launched.group_by("kernel").len().iter_rows()) == EXPECTED["launches"]
    block = dict(zip(kernels["compile"], [r["payload"]["metadata"].get("src_constants", {}) for r in compiles],
                     strict=True))
    by_compile = {(row["kernel"], next(iter(block[c].values()), None) if block[c] else None): c
                  for c, row in zip(kernels["compile"], kernels.iter_rows(named=True), strict=True)}
    for (kernel, size), grids in EXPECTED["grids"].items():
        mine = launched.filter(pl.col("compile") == by_compile[(kernel, size)])
        assert list(mine.select("grid_x", "grid_y", "grid_z").iter_rows()) == grids
    assert launched["args"][0] == "x_ptr: float32[4096] cpu, y_ptr: float32[4096] cpu, out_ptr: float32[4096] cpu, " \
                                  "n: int = 4096"
    assert not any("not know" in w or "not tritonparse records" in w for w in collected.warnings), collected.warnings


@requires_tritonparse
def test_the_autotuners_verdict_is_kept(traces: dict[str, Path]) -> None:
    tuned = registry.collect([traces["raw"]]).tables["ir_autotune"]
    assert tuned.height == 2 and tuned["kernel"].unique().to_list() == ["add_kernel"]
    (best,) = tuned.filter(pl.col("best")).to_dicts()
    assert best["config"].startswith(EXPECTED["autotune_best"]) and best["timing_ms"] == pytest.approx(0.012)
    assert tuned.filter(~pl.col("best"))["timing_ms"].to_list() == [pytest.approx(0.021)]


@requires_tritonparse
def test_both_forms_of_one_trace_count_once(traces: dict[str, Path], tmp_path: Path) -> None:
    both = tmp_path / "both"
    both.mkdir()
    for form in ("raw", "mapped"):
        (both / traces[form].name).write_bytes(traces[form].read_bytes())
    collected = registry.collect([both])
    assert collected.tables["ir_kernels"].height == EXPECTED["compiles"]
    assert collected.tables["ir_launches"].height == sum(EXPECTED["launches"].values())
    assert any("its parsed form" in w for w in collected.warnings)


@requires_tritonparse
def test_a_run_shows_the_launches_and_the_traced_python_source(traces: dict[str, Path], tmp_path: Path) -> None:
    store = RunStore(tmp_path / "data")
    run = store.open(ingest_paths(store, [traces["raw"]], name="tp"))
    assert "compiler" in run.info.evidence
    state = compiler_view.State.from_query({}, run).resolved(run)
    kernel = compiler_view.kernel_row(run, state.compile)
    lines = python_source(run, kernel["python_file"])
    assert lines is not None and f"def {kernel['kernel']}(" in "\n".join(lines)
    record = _records(traces["raw"])[state.compile]["payload"]["python_source"]
    assert lines[record["start_line"] - 1].strip() == record["code"].split("\n")[0].strip()  # the file's numbering
    shown = launches(run, 1)
    assert shown is not None and shown.compile_launches == 3
    assert shown.shapes["launches"].to_list() == [3] and shown.shapes["grid"].to_list() == ["(4, 1, 1)"]
    assert dict(shown.per_kernel.select("kernel", "launches").iter_rows()) == EXPECTED["launches"]
    assert shown.autotune["best"].to_list().count(True) == 1


def _line(record: dict) -> str:
    return json.dumps(record) + "\n"


def test_unknown_and_damaged_records_are_counted_in_one_warning_each(tmp_path: Path) -> None:
    compile_record = {"event_type": "compilation", "payload": {
        "metadata": {"name": "k", "hash": "h1", "num_warps": 4, "target": {"backend": "hip", "arch": "gfx942"}},
        "file_content": {"k.ttir": "module {\n  tt.func public @k() {\n    tt.return\n  }\n}\n"}}}
    lines = [_line(compile_record), _line({"event_type": "launch", "name": "k", "grid": [2, 1, 1],
                                           "compilation_metadata": {"hash": "h1"}, "extracted_args": {}}),
             _line({"event_type": "launch", "name": "k", "grid": [1], "compilation_metadata": {"hash": "gone"}}),
             _line({"event_type": "future_kind\nwith a newline", "x": 1}), _line({"event_type": "future_kind"}),
             _line({"event_type": "other"}), "{not json\n", _line({"event_type": "launch", "grid": "wide"})[:-5] + "\n",
             _line({"no_event_type": 1})]
    path = tmp_path / "trace.ndjson"
    path.write_text("".join(lines))
    collected = COLLECTOR.collect([path], no_progress)
    launches_table = collected.tables["ir_launches"]
    assert launches_table["compile"].to_list() == [0, None]
    assert launches_table["grid_x"].to_list() == [2, 1] and launches_table["grid_y"].to_list() == [1, 1]
    assert collected.tables["ir_kernels"]["target"].to_list() == ["hip:gfx942"]
    unknown = [w for w in collected.warnings if "does not know" in w]
    assert unknown == [f"{path}: 3 records of kinds this reader does not know left out "
                       "('future_kind' x1, 'future_kind with a newline' x1, 'other' x1)"]
    assert [w for w in collected.warnings if "not tritonparse records" in w] == [
        f"{path}: 3 lines that are not tritonparse records (damaged; the first at line 7) left out"]
    assert any("1 launches of kernels whose compilation is not in the traces" in w for w in collected.warnings)
    assert all("\n" not in w for w in collected.warnings)


def test_launches_without_any_compile_are_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "late.ndjson"
    path.write_text(_line({"event_type": "launch", "name": "k", "grid": [1, 1, 1]}))
    with pytest.raises(IngestError, match="1 launch records but no readable compilation record: the trace started"):
        COLLECTOR.collect([path], no_progress)


def test_kernel_sources_beside_a_trace_are_kept_not_an_error(tmp_path: Path) -> None:
    record = {"event_type": "compilation", "payload": {"metadata": {"name": "k", "hash": "h"},
                                                       "file_content": {"k.ttir": "module {\n}\n"}}}
    (tmp_path / "trace.ndjson").write_text(_line(record))
    (tmp_path / "kernels.py").write_text("import triton\n\n@triton.jit\ndef k():\n    pass\n")
    collected = registry.collect([tmp_path])
    assert collected.collectors == ["tritonparse"]
    assert collected.metadata["tritonparse"]["python_sources"] == [str(tmp_path / "kernels.py")]
