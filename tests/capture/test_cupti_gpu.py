"""Live capture on a real GPU (skipped without CUDA torch, a driver and cupti-python).

Install a cupti-python whose CUDA major matches torch's (torch cu12x wheels:
`pip install 'cupti-python>=12.8,<13'`; CUDA 13 builds: `cupti-python>=13`).
"""

from __future__ import annotations

import polars as pl
import pytest

from dashboard.capture.cupti_backend import probe

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    reason = probe()
    if reason is not None:
        pytest.skip(f"CUPTI unavailable: {reason}")


def test_small_model_under_live_capture(cuda: None, tmp_path) -> None:
    from dashboard.capture.markers import mark
    from dashboard.capture.session import CaptureSession
    from dashboard.store import RunStore

    nn = torch.nn
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 10)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = torch.randn(64, 256).pin_memory()
    model(batch.cuda()).sum().backward()  # warm-up: cuBLAS handles, lazy modules
    optimizer.zero_grad()
    torch.cuda.synchronize()

    with CaptureSession("gpu-smoke", tmp_path / "data", layers=True, stacks=True) as session:
        for step in range(3):
            with mark(f"ProfilerStep#{step}", category="profiler_step"):
                loss = model(batch.cuda(non_blocking=True)).sum()
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                loss.item()  # a device-to-host copy
    tables = session.tables()
    kernels, memcpy, ranges = tables["kernels"], tables["memcpy"], tables["ranges"]

    assert kernels.height >= 3 * 6, session.warnings
    assert (kernels.get_column("end_ns") >= kernels.get_column("start_ns")).all()
    assert not kernels.get_column("name").str.starts_with("_Z").any()  # demangled
    assert {"HtoD", "DtoH"} <= set(memcpy.get_column("kind"))
    assert tables["api_calls"].get_column("name").str.contains("Launch").any()

    # Layers and passes live, attributed by the launching thread and time (no CUPTI call per range).
    attributed = kernels.filter(pl.col("layer") == "Sequential.0").get_column("pass").unique().to_list()
    assert sorted(attributed) == ["backward", "forward"], session.warnings
    flops = {(r["name"], r["pass"]): r["flops"] for r in ranges.iter_rows(named=True)}
    assert flops[("Sequential.0", "forward")] == 2 * 64 * 256 * 512
    assert flops[("Sequential.2", "backward")] == 2 * (2 * 64 * 512 * 10)

    # One clock: the capture's ranges and stacks enclose the GPU work they launched.
    steps = ranges.filter(pl.col("category") == "profiler_step")
    assert steps.height == 3
    assert steps.get_column("start_ns").min() <= kernels.get_column("start_ns").min()
    assert "stack" in tables

    run = RunStore(tmp_path / "data").open(session.run_id)
    assert run.has_evidence("kernels") and run.has_evidence("layers")
