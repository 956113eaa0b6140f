"""tinygrad's VIZ files made by real tinygrad, ingested, and compared with tinygrad's own reading of them.

Runs where this interpreter can import tinygrad (`pip install -e .[tinygrad]`, plus clang for its CPU
device); tinygrad itself only ever runs in child processes: the model under `VIZ=-1`, and
`tests/support/tinygrad_serve_reading.py`, which reads the same files with tinygrad's VIZ server
code (`viz/serve.py`). Every count must be equal: contexts, steps and matches per context; kernel
durations per device row under `HCQ2=1`; FLOPS on `DEV=NULL` (a symbolic kernel included); graph
batches, compiler passes and Tensor calls; allocations, frees and each device's peak.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.collectors.tinygrad.enums import RELEASES
from dashboard.demo.tinygrad_viz import run_tinygrad, tinygrad_installed
from tests.support.tinygrad_compare import (
    HOST_ROWS,
    device_rows,
    differences,
    durations_us,
    f32,
    kernel_events,
    serve_reading,
)

pytestmark = [pytest.mark.skipif(not tinygrad_installed(), reason="tinygrad is not installed (the `tinygrad` extra)"),
              pytest.mark.timeout(600)]

# Two SGD steps of a small MLP under TinyJit (the third call replays the captured graph), and with
# SYMBOLIC=1 a kernel over a Variable length, launched with two values.
MODEL = """
import os
from tinygrad import Tensor, TinyJit, Variable, nn
Tensor.manual_seed(1)
class Net:
    def __init__(self): self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 4)
    def __call__(self, x): return self.b(self.a(x).relu())
net = Net()
opt = nn.optim.SGD(nn.state.get_parameters(net), lr=0.05)
x, y = Tensor.randn(4, 8).realize(), Tensor.randn(4, 4).realize()
@TinyJit
def step(x, y):
    opt.zero_grad()
    loss = ((net(x) - y) ** 2).mean().backward()
    opt.step()
    return loss.realize()
for _ in range(3): step(x, y)
if os.environ.get("SYMBOLIC"):
    data = Tensor.empty(12, 8)
    for n in (3, 7): (data[:Variable("n", 1, 12).bind(n)] * 2).sum(axis=1).realize()
"""


def _run(folder: Path, env: dict[str, str]) -> dict[str, object]:
    rewrites, profile = run_tinygrad(MODEL, folder, {"TRAINING": "1", **env}, timeout=300, keep_names=True)
    run = registry.collect([folder])  # the folder, as a user gives it: `rewrites.pkl.<user>` and `profile.pkl.<user>`
    return {"serve": serve_reading(rewrites, profile), "tables": run.tables, "run": run}


@pytest.fixture(scope="module")
def hcq2(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return _run(tmp_path_factory.mktemp("hcq2"), {"DEV": "CPU", "HCQ2": "1"})


@pytest.fixture(scope="module")
def null(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return _run(tmp_path_factory.mktemp("null"), {"DEV": "NULL", "SYMBOLIC": "1"})


@pytest.mark.parametrize("run", ["hcq2", "null"])
def test_contexts_steps_and_matches_are_tinygrads(run: str, request: pytest.FixtureRequest) -> None:
    result = request.getfixturevalue(run)
    serve, tables = result["serve"], result["tables"]
    contexts = tables["rewrite_contexts"].sort("context")
    assert contexts["name"].to_list() == [c["name"] for c in serve["contexts"]]
    assert contexts["steps"].to_list() == [c["steps"] for c in serve["contexts"]]
    assert contexts["matches"].to_list() == [c["matches"] for c in serve["contexts"]]
    steps = tables["rewrite_steps"].sort("context", "step")
    assert steps["name"].to_list() == [name for c in serve["contexts"] for name in c["step_names"]]
    assert tables["rewrite_matches"].height == sum(c["matches"] for c in serve["contexts"])
    assert result["run"].warnings == []  # the release is recognised: 0.14.0's op names, no doubt raised
    assert result["run"].metadata["tinygrad"]["runs"][0]["release"] == "0.14.0"


def test_kernel_durations_under_hcq2_are_tinygrads(hcq2: dict) -> None:
    kernels = hcq2["tables"]["kernels"]
    rows = device_rows(hcq2["serve"])
    assert rows and sum(len(events) for events in rows.values()) > 10
    for row, events in rows.items():
        ours = kernels.filter((pl.col("device_name") == row) & (pl.col("end_ns") > pl.col("start_ns")))
        theirs = Counter((e["name"], e["dur"]) for e in events)
        assert Counter(zip(ours["name"], map(f32, durations_us(ours)), strict=True)) == theirs, row


def test_graph_batches_passes_and_tensor_calls_are_tinygrads(hcq2: dict) -> None:
    ranges = hcq2["tables"]["ranges"].filter(pl.col("end_ns") > pl.col("start_ns"))
    serve_rows = {row: events for row, events in hcq2["serve"]["rows"].items()
                  if row in HOST_ROWS or row.endswith(" Graph")}
    assert any(row.endswith(" Graph") for row in serve_rows), "HCQ2 runs the jitted step as graph batches"
    for row, events in serve_rows.items():
        ours = ranges.filter(pl.col("category") == row)
        assert Counter(zip(ours["name"], map(f32, durations_us(ours)), strict=True)) == \
            Counter((e["name"], e["dur"]) for e in events), row
    copies = sum(len(events) for row, events in hcq2["serve"]["rows"].items() if ":COPY" in row)
    memcpy = hcq2["tables"].get("memcpy", pl.DataFrame({"start_ns": [], "end_ns": []}))
    assert memcpy.filter(pl.col("end_ns") > pl.col("start_ns")).height == copies


def test_flops_on_null_are_tinygrads(null: dict) -> None:
    kernels = null["tables"]["kernels"].filter(pl.col("end_ns") > pl.col("start_ns"))
    ours = kernel_events(kernels)
    theirs = Counter((e["name"], e["dur"], e["flops"]) for events in device_rows(null["serve"]).values()
                     for e in events)
    assert sum(1 for key in theirs if key[2] is not None) > 10  # serve links every NULL kernel to its program
    assert ours == theirs
    symbolic = null["tables"]["rewrite_contexts"].filter(pl.col("ops_expr").is_not_null())
    assert symbolic.height >= 1 and "n" in symbolic["ops_expr"][0]
    launched = kernels.filter(pl.col("name").is_in(symbolic["name"].to_list()))
    assert launched["flops"].n_unique() == 2  # n = 3 and n = 7


@pytest.mark.parametrize("run", ["hcq2", "null"])
def test_allocations_frees_and_peaks_are_tinygrads(run: str, request: pytest.FixtureRequest) -> None:
    result = request.getfixturevalue(run)
    memory, serve = result["tables"]["device_memory"], result["serve"]
    assert set(memory["device"].unique()) == set(serve["memory"])
    for device, theirs in serve["memory"].items():
        ours = memory.filter(pl.col("device") == device)
        allocs, frees = (ours.filter(pl.col("action") == action).height for action in ("alloc", "free"))
        # serve lists a free for every buffer (those never freed at the profile's end): real frees are counted
        # in the events tinygrad unpickled.
        assert (ours["allocated"].max(), allocs, frees) == (theirs["peak"], theirs["allocs"],
                                                            serve["points"][device].get("free", 0)), device
        assert theirs["frees"] == allocs
    assert memory["allocated"].max() == serve["peak"]
    assert differences(result["tables"], serve) == []  # everything at once, as the shared samples are checked


def test_enum_tables_are_the_installed_releases() -> None:
    listing = subprocess.run([sys.executable, "-c", (
        "import json; from importlib.metadata import version; from tinygrad.uop import Ops\n"
        "from tinygrad.uop.ops import AxisType; from tinygrad.codegen.opt import OptOps\n"
        "from tinygrad.dtype import AddrSpace\n"
        "print(json.dumps({'version': version('tinygrad'), **{E.__name__: {m.value: m.name for m in E}\n"
        "                  for E in (Ops, AxisType, OptOps, AddrSpace)}}))")],
        check=True, capture_output=True, text=True, timeout=120)
    installed = json.loads(listing.stdout)
    version = installed.pop("version")
    if version not in RELEASES:
        pytest.skip(f"tinygrad {version} is not a release the collector ships tables for")
    assert {name: {int(v): n for v, n in members.items()} for name, members in installed.items()} == \
        RELEASES[version]
