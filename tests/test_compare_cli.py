"""`dashboard compare A B`: JSON schema of two demo runs, the readable form, and the --fail-over exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dashboard.cli.main import cli
from dashboard.demo import tt_memory_log
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.support.demo_copy import demo_copy

NUMBER = (int, float)
OPTIONAL_NUMBER = (int, float, type(None))
CULPRIT = {"snapshot_before_op": int, "op_index": (int, type(None)), "op_type": (str, type(None))}
KERNEL_ROW = {"group": str, "label": str, "presence": str, "count_a": (int, type(None)),
              "count_b": (int, type(None)), "total_a_ns": (int, type(None)), "total_b_ns": (int, type(None)),
              "delta_ns": int, "ratio": OPTIONAL_NUMBER, "renamed_from": (str, type(None)),
              "match": (str, type(None))}
KERNELS = {"total_a_ns": int, "total_b_ns": int, "delta_ns": int, "change": OPTIONAL_NUMBER, "launches_a": int,
           "launches_b": int, "only_a": [str], "only_b": [str],
           "renamed": [{"group_a": str, "group_b": str, "base": str, "arguments_a": str, "arguments_b": str,
                        "match": str}], "rows": [KERNEL_ROW]}
PASS_ROW = {"pass": str, "time_a_ns": (int, type(None)), "time_b_ns": (int, type(None)), "delta_ns": int,
            "ratio": OPTIONAL_NUMBER, "tflops_a": OPTIONAL_NUMBER, "tflops_b": OPTIONAL_NUMBER, "presence": str}
BUSY_SIDE = {"side": str, "span_ns": int, "busy_ns": int, "idle_ns": int, "busy_share": OPTIONAL_NUMBER}
BUFFER_TYPE = {"peak_a_bytes_per_bank": int, "peak_b_bytes_per_bank": int, "delta_bytes_per_bank": int,
               "peak_op_a": CULPRIT, "peak_op_b": CULPRIT, "fragmentation_at_peak_a": NUMBER,
               "fragmentation_at_peak_b": NUMBER, "fragmentation_max_a": NUMBER, "fragmentation_max_b": NUMBER}


def check(value: Any, spec: Any, where: str = "$") -> None:
    """`value` has the shape of `spec`: a type (tuple), a list of one item spec, or a dict of key specs."""
    if isinstance(spec, dict):
        assert isinstance(value, dict), f"{where}: expected an object"
        missing = set(spec) - set(value)
        assert not missing, f"{where}: missing {sorted(missing)}"
        for key, item in spec.items():
            check(value[key], item, f"{where}.{key}")
    elif isinstance(spec, list):
        assert isinstance(value, list), f"{where}: expected a list"
        for index, item in enumerate(value):
            check(item, spec[0], f"{where}[{index}]")
    else:
        assert isinstance(value, spec) and not (isinstance(value, bool) and bool not in (
            spec if isinstance(spec, tuple) else (spec,))), f"{where}: {value!r} is not {spec}"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("compare-cli")
    store = RunStore(demo_copy(demo_template, root / "data"))  # the session's seeded demo, copied
    # By run name (the demo's training job has earlier versions of the same name: the newest wins;
    # list_runs is newest first).
    ids: dict[str, str] = {}
    for info in store.list_runs():
        ids.setdefault(info.name, info.id)
    ids["demo-memory-small"] = ingest_paths(store, tt_memory_log.write(root / "mem2", n_ops=200),
                                            name="demo-memory-small")
    return root / "data", ids


def run(data_dir: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["compare", *args, "--data", str(data_dir)])


def test_json_of_two_training_runs(data) -> None:
    data_dir, ids = data
    result = run(data_dir, ids["demo-capture"], ids["demo-training"], "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    check(report, {"a": str, "b": str, "shared_evidence": [str], "kernels": KERNELS,
                   "passes": {"rows": [PASS_ROW], "step_a_ns": OPTIONAL_NUMBER, "step_b_ns": OPTIONAL_NUMBER},
                   "gpu_busy": {"a": BUSY_SIDE, "b": BUSY_SIDE, "busy_share_delta": OPTIONAL_NUMBER}})
    kernels = report["kernels"]
    assert kernels["delta_ns"] == kernels["total_b_ns"] - kernels["total_a_ns"]
    assert sum(row["delta_ns"] for row in kernels["rows"]) == kernels["delta_ns"]
    assert kernels["only_a"] and kernels["only_b"]  # the demo runs come from different models
    assert "memory" not in report and "planner" not in report  # not shared: no section


def test_json_of_two_memory_runs(data) -> None:
    data_dir, ids = data
    result = run(data_dir, ids["demo-memory"], ids["demo-memory-small"], "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["shared_evidence"] == ["memory"]
    memory = report["memory"]
    check(memory, {"DRAM": BUFFER_TYPE, "L1": BUFFER_TYPE,
                   "alignment": {"method": str, "matched": int, "only_a": int, "only_b": int},
                   "first_divergence": {"position": int, "buffer_type": str}})
    dram = memory["DRAM"]
    assert dram["delta_bytes_per_bank"] == dram["peak_b_bytes_per_bank"] - dram["peak_a_bytes_per_bank"]
    # The smaller run executes fewer ops: aligned by identity, with ops of A's left unmatched.
    assert memory["alignment"]["method"].startswith("by op identity") and memory["alignment"]["only_a"] > 0


def test_readable_form_names_each_section(data) -> None:
    data_dir, ids = data
    result = run(data_dir, ids["demo-planner"], ids["demo-planner"])
    assert result.exit_code == 0, result.output
    assert "planner: " in result.output and "peak SMEM (bytes)" in result.output
    result = run(data_dir, ids["demo-capture"], ids["demo-training"])
    assert "kernels: A " in result.output and "GPU busy" in result.output and "passes" in result.output


def test_fail_over_exit_code(data) -> None:
    data_dir, ids = data
    slower = [ids["demo-training"], ids["demo-capture"]]  # B takes ~83% more kernel time than A
    assert run(data_dir, *slower, "--fail-over", "5").exit_code == 1
    assert run(data_dir, *slower, "--fail-over", "90").exit_code == 0
    assert run(data_dir, *reversed(slower), "--fail-over", "0").exit_code == 0
    assert run(data_dir, ids["demo-memory"], ids["demo-memory-small"], "--fail-over", "5").exit_code == 2


def test_unknown_run_is_one_line(data) -> None:
    data_dir, ids = data
    result = run(data_dir, "nope", ids["demo-memory"])
    assert result.exit_code == 1 and "nope" in result.output and len(result.output.strip().splitlines()) == 1


def test_chart_zip_of_compare_has_a_chart_per_shared_section(data) -> None:
    from dashboard.exports.page_figures import page_figures

    data_dir, ids = data
    store = RunStore(data_dir)

    def charts(a: str, b: str) -> list[str]:
        return sorted(page_figures("compare", store.open(ids[a]), {"other": ids[b]}))

    assert charts("demo-memory", "demo-memory-small") == ["compare-memory"]
    assert charts("demo-planner", "demo-planner") == ["compare-liveness"]
    assert {"compare-delta", "compare-passes", "compare-busy"} <= set(charts("demo-capture", "demo-training"))


def test_rank_pair_of_one_run(data) -> None:
    from tests.support.kernel_tables import kernel_tables

    data_dir, _ids = data
    store = RunStore(data_dir)
    run_id = store.write("two-ranks", kernel_tables())
    kernels = store.open(run_id).frame("kernels")
    result = run(data_dir, run_id, run_id, "--rank-a", "0", "--rank-b", "1", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["a"].endswith("rank 0") and report["b"].endswith("rank 1")
    # Summed kernel time per rank, computed here from the table.
    per_rank = {rank: int((part["end_ns"] - part["start_ns"]).sum())
                for (rank,), part in kernels.group_by("rank")}
    assert (report["kernels"]["total_a_ns"], report["kernels"]["total_b_ns"]) == (per_rank[0], per_rank[1])


def test_the_compare_command_loads_neither_dash_nor_plotly() -> None:
    import subprocess
    import sys

    code = ("import sys; import dashboard.cli.main, dashboard.cli.compare_report, dashboard.cli.compare_text; "
            "print([m for m in ('dash', 'plotly') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


FIRST_DIFFERENCE = {"position": int, "pass_name": str, "stage": str, "kind": str, "step_a": int, "step_b": int}
COMPILER = {"compile_a": int, "compile_b": int, "kernel_a": str, "kernel_b": str, "steps_a": int, "steps_b": int,
            "aligned": int, "differing": int, "only_a": [str], "only_b": [str],
            "first_difference": (dict, type(None)),
            "metadata": {field: {"a": (int, type(None)), "b": (int, type(None)), "delta": (int, type(None))}
                         for field in ("num_warps", "num_ctas", "num_stages", "shared", "tmem_size")},
            "diff": {"position": int, "pass_name": str, "lines_a": int, "lines_b": int, "ops_a": int, "ops_b": int,
                     "removed": int, "added": int}}


def test_json_compiler_section_of_two_compile_logs(data, tmp_path: Path) -> None:
    from tests.collectors.triton_ir_fixtures import compile_log, with_extra_pass

    data_dir, ids = data
    store = RunStore(data_dir)
    logs = {"small": compile_log("add_kernel", 1024), "large": compile_log("add_kernel", 2048),
            "extra": with_extra_pass("add_kernel", 1024),
            "two": compile_log("add_kernel", 1024) + compile_log("add_kernel", 2048)}
    made = {}
    for name, text in logs.items():
        (tmp_path / f"{name}.txt").write_text(text)
        made[name] = ingest_paths(store, [tmp_path / f"{name}.txt"], name=f"compile-{name}")
    report = json.loads(run(data_dir, made["small"], made["large"], "--json").output)
    assert report["shared_evidence"] == ["compiler"]
    check(report["compiler"], COMPILER)
    check(report["compiler"]["first_difference"], FIRST_DIFFERENCE)
    # BLOCK 1024 against 2048: the IR differs from the first dump on (8 of 9 passes; the LLVM dialect has no block).
    assert report["compiler"]["first_difference"]["pass_name"] == "InlinerPass"
    assert (report["compiler"]["differing"], report["compiler"]["diff"]["removed"]) == (8, 3)
    report = json.loads(run(data_dir, made["small"], made["extra"], "--json").output)
    check(report["compiler"], COMPILER)
    assert report["compiler"]["only_b"] == ["LoopUnrollPass"] and report["compiler"]["first_difference"] is None
    assert (report["compiler"]["steps_a"], report["compiler"]["steps_b"]) == (9, 10)
    # Compiles picked on the command line (one run, two compiles: by default 0 against 1).
    def picked(*args: str) -> tuple[int, int]:
        section = json.loads(run(data_dir, made["two"], made["two"], "--json", *args).output)["compiler"]
        return section["compile_a"], section["compile_b"]

    assert picked() == (0, 1)
    assert picked("--compile-a", "1", "--compile-b", "0") == (1, 0)
    assert picked("--compile-a", "1", "--compile-b", "5") == (1, 1)  # no compile 5: B's default
    text = run(data_dir, made["small"], made["large"]).output
    assert "first differing pass: InlinerPass (ttir, before) at step 0 of A, 0 of B" in text
    # The demo compile log against itself: a section with the same schema.
    demo = json.loads(run(data_dir, ids["demo-compiler"], ids["demo-compiler"], "--json").output)
    check(demo["compiler"], COMPILER)
