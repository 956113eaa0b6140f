"""The live capture's own output on a real GPU: the runs the device check made on an NVIDIA H200
(tests/data/gpu/, from `bash tools/gpu_check/run.sh`, Python 3.12, torch 2.11 cu130, cupti-python
13.0.1, after the issue-32 fixes), read back here through the store and the pages' views.

capture_run.tar.gz: `python -m dashboard.capture` with its defaults around tools/gpu_check/workload.py
(6-layer GPT, bf16, 5 warm-up + 20 timed steps, each a `ProfilerStep#N` mark); session_run.tar.gz: a
`CaptureSession(layers=False, stacks=False)` around 20 steps of the same loop in another process.
summary.json: that check's verdicts, Kineto's counts among them.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dashboard.analysis.insights import run_insights
from dashboard.capture import records as rec
from dashboard.store import Run, RunStore
from dashboard.views import kernels as kernels_view
from dashboard.views import timeline as timeline_view
from tools.gpu_check.compare import step_activity

GPU_DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
STEPS = 20


@pytest.fixture(scope="module")
def summary() -> dict[str, Any]:
    return json.loads((GPU_DATA / "summary.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> RunStore:
    data = tmp_path_factory.mktemp("gpu") / "data"
    (data / "runs").mkdir(parents=True)
    for archive in ("capture_run.tar.gz", "session_run.tar.gz"):
        with tarfile.open(GPU_DATA / archive) as tar:
            tar.extractall(data / "runs", filter="data")
    return RunStore(data)


@pytest.fixture(scope="module")
def captured(store: RunStore, summary: dict[str, Any]) -> Run:
    return store.open(summary["runs"]["capture"])


@pytest.fixture(scope="module")
def session_run(store: RunStore, summary: dict[str, Any]) -> Run:
    return store.open(summary["runs"]["session"])


def _check(summary: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in summary["checks"] if c["name"] == name)


@pytest.mark.parametrize("label", ["capture", "session"])
def test_every_step_has_the_kernels_and_copies_kineto_saw(store: RunStore, summary: dict[str, Any],
                                                          label: str) -> None:
    run = store.open(summary["runs"][label])
    activity = step_activity(run.frame("kernels"), run.frame("memcpy"), run.frame("ranges"))
    assert activity.steps == list(range(STEPS))
    per_step = activity.kernels.group_by("step").len().get_column("len").unique().to_list()
    kineto = _check(summary, f"{label}.kernel_count")["value"]["kineto"]
    assert per_step == [kineto // STEPS] and activity.kernels.height == kineto == 8060
    copies = _check(summary, f"{label}.copy_bytes")["value"]
    assert activity.copies.height == copies["copies_kineto"] == 1340
    assert activity.copies.get_column("bytes").sum() == copies["kineto"] == 1_997_760
    assert activity.copies.group_by("step").len().get_column("len").unique().to_list() == [1340 // STEPS]


def test_kernel_names_are_demangled(captured: Run) -> None:
    names = captured.frame("kernels").get_column("name")
    assert not names.str.starts_with("_Z").any()
    assert names.str.contains("gemm|cutlass|sm90", literal=False).any()  # cuBLAS on Hopper, by its real name


def test_ranges_stacks_and_layers_are_there_and_kernels_belong_to_them(captured: Run) -> None:
    ranges, kernels = captured.frame("ranges"), captured.frame("kernels")
    categories = dict(ranges.group_by("category").len().iter_rows())
    assert categories["profiler_step"] == STEPS and categories["module"] > 0
    assert captured.info.metadata["capture"]["layers"] == "forward"  # the command's default, cheap form
    assert captured.info.metadata["capture"]["stacks"] == "sys.monitoring"  # Python 3.12
    stack = captured.frame("stack")
    assert stack.height > 0 and stack.get_column("function").str.contains(r"Trainer\.step \(model\.py").any()
    passes = dict(kernels.group_by("pass").len().drop_nulls().iter_rows())
    assert passes["forward"] > 0 and passes["backward"] > 0 and passes["optimizer"] > 0
    forward_layers = kernels.filter(pl.col("pass") == "forward").get_column("layer").drop_nulls()
    assert forward_layers.str.starts_with("TinyGPT.blocks.").any()


def test_api_calls_and_ranges_name_threads_alike_and_host_only_queries_are_not_recorded(
    captured: Run, session_run: Run
) -> None:
    for run in (captured, session_run):
        api = run.frame("api_calls")
        assert not api.get_column("name").is_in(list(rec.SKIPPED_RUNTIME_APIS.values())).any()
        assert set(run.info.metadata["capture"]["skipped_apis"].values()) == {"cupti"}  # CUPTI filtered them
        range_threads = set(run.frame("ranges").get_column("thread").drop_nulls())
        assert range_threads <= set(api.get_column("thread"))  # OS ids on both sides
        assert run.info.metadata["capture"]["dropped_records"] == 0


def test_the_pages_views_work_on_the_captured_run(captured: Run) -> None:
    state = kernels_view.State.from_query({}, captured)
    assert set(kernels_view.figures(captured, state)) == set(kernels_view.CHARTS)
    rows, columns = kernels_view.table(captured, state)
    assert rows and columns
    by_layer = kernels_view.State.from_query({"group": "layer"}, captured)
    assert kernels_view.table(captured, by_layer)[0]
    timeline_state = timeline_view.State.from_query({}, captured)
    assert timeline_view.figures(captured, timeline_state)
    insights = run_insights(captured)
    assert insights.by_rank.height == 1 and insights.launch.height > 0 and insights.findings
    assert not [reason for reason in insights.skipped if "no CUDA API calls" in reason]


def test_steps_by_launch_time_give_each_step_its_kernels_and_copies(captured: Run) -> None:
    # This run predates the capture's own `step` column: the capture's tables code numbers them now, from
    # the ProfilerStep#N marks and each launching call's start, as the Kineto collector does.
    from dashboard.capture.tables import _steps, _with_step

    ranges, api = captured.frame("ranges"), captured.frame("api_calls")
    steps = _steps(ranges)
    assert steps.get_column("step").to_list() == list(range(STEPS))
    kernels = _with_step(captured.frame("kernels"), api, steps)
    per_step = kernels.drop_nulls("step").group_by("step").len()
    assert per_step.height == STEPS and per_step.get_column("len").unique().to_list() == [8060 // STEPS]
    copies = _with_step(captured.frame("memcpy"), api, steps).drop_nulls("step")
    assert copies.height == 1340 and copies.get_column("bytes").sum() == 1_997_760
