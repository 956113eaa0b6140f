"""Every GPU-time finding appears on a trace made to show it and stays away from one that does not."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from dashboard.analysis.finding import Finding, severity_of
from dashboard.analysis.insights import time_tables
from dashboard.analysis.kernel_keys import kernel_key
from dashboard.analysis.time_findings import time_findings
from tests.analysis.test_idle_causes import cause_trace
from tests.support.findings_trace import TraceBuilder

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def findings_of(builder: TraceBuilder) -> dict[str, Finding]:
    tables = builder.tables()
    found = time_findings(time_tables("r1", tables["kernels"], tables["memcpy"], tables["api_calls"],
                                      tables["ranges"]))
    return {finding.key: finding for finding in found}


def query(url: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(url)
    return parts.path, {key: values[0] for key, values in parse_qs(parts.query).items()}


def test_idle_gpu_and_each_cause() -> None:
    found = findings_of(cause_trace())
    idle = found["idle"]
    assert (idle.at_stake_ns, idle.share, idle.severity) == (750, 750 / 1400, "high")
    assert query(idle.url) == ("/timeline", {"run": "r1", "rank": "0"})
    expected = {"outside steps": (400, "400-1600"), "synchronisation": (150, "300-600"),
                "launch-bound": (100, "100-400"), "other": (100, "500-800")}
    for cause, (at_stake, window) in expected.items():
        finding = found[f"idle:{cause}"]
        assert finding.at_stake_ns == at_stake and finding.share == at_stake / 1400
        assert query(finding.url)[1]["window"] == window  # the longest gap, with its length on each side


def test_a_busy_gpu_gives_no_idle_finding() -> None:
    # 99 % busy: launch-bound gaps of 10 ns per 1000 ns stay under CAUSE_SHARE_MIN.
    builder = TraceBuilder()
    for index in range(10):
        builder.kernel(0, index * 1000, index * 1000 + 990, launch_end=index * 1000 - 5)
    assert not [key for key in findings_of(builder) if key.startswith("idle")]


def test_exposed_communication_names_its_kernels() -> None:
    builder = (TraceBuilder().kernel(0, 0, 100).kernel(0, 150, 250)
               .kernel(0, 200, 400, name=NCCL, stream=20).copy(0, 450, 500))
    finding = findings_of(builder)["communication:exposed"]
    assert (finding.at_stake_ns, finding.share) == (150, 0.3)
    assert finding.evidence["overlapped with compute"] == "25%"
    path, state = query(finding.url)
    assert (path, state["rank"], state["sel"]) == ("/kernels", "0", kernel_key(NCCL))


def test_communication_under_compute_is_not_exposed() -> None:
    builder = TraceBuilder().kernel(0, 0, 1000).kernel(0, 100, 900, name=NCCL, stream=20)
    assert "communication:exposed" not in findings_of(builder)


def _two_ranks(comm_ns_rank1: int) -> TraceBuilder:
    return (TraceBuilder().kernel(0, 0, 1000).kernel(0, 0, 100, name=NCCL, stream=20)
            .kernel(1, 0, 1000).kernel(1, 0, comm_ns_rank1, name=NCCL, stream=20))


def test_uneven_collectives_between_ranks() -> None:
    finding = findings_of(_two_ranks(300))["communication:uneven"]
    assert (finding.at_stake_ns, finding.share) == (200, 0.2)
    assert finding.evidence == {"rank 1": "300 ns", "rank 0": "100 ns"}
    assert "communication:uneven" not in findings_of(_two_ranks(150))  # spread 50 <= 10 % of 1000


def _short_kernels(duration: int, count: int = 200) -> TraceBuilder:
    builder = TraceBuilder()
    for index in range(count):
        start = index * 20_000
        builder.kernel(0, start, start + duration, launch_end=start - 1000 if index == 0 else start - 1,
                       layer="blocks.0.norm")
    return builder


def test_short_kernels_and_the_launch_bound_layer() -> None:
    found = findings_of(_short_kernels(5_000))
    short = found["launch:short-kernels"]
    # Each launch ends 1 ns before its kernel, after the 15 µs gap began: 199 launch-bound gaps of 15 µs.
    assert short.at_stake_ns == 199 * 15_000
    assert short.evidence["short kernels"] == 200 and short.evidence["median launch delay"] == "1 ns"
    layer = found["launch:layer:blocks.0.norm"]
    assert layer.at_stake_ns == 199 * 15_000 and query(layer.url) == (
        "/layers", {"run": "r1", "layer": "blocks.0.norm"})


def test_long_kernels_are_not_short_and_their_layer_not_launch_bound() -> None:
    found = findings_of(_short_kernels(15_000))  # 5 µs gaps: 1/3 of the kernel time
    assert "launch:short-kernels" not in found and not [k for k in found if k.startswith("launch:layer")]


@pytest.mark.parametrize(("kind", "make", "absent"), [
    ("pageable HtoD", lambda b, i: b.copy(0, i * 100, i * 100 + 50, src_kind="Pageable", size=1 << 20),
     lambda b, i: b.copy(0, i * 100, i * 100 + 50, src_kind="Pinned", size=1 << 20)),
    ("synchronous", lambda b, i: b.copy(0, i * 100, i * 100 + 50, call="cudaMemcpy", launch_end=i * 100),
     lambda b, i: b.copy(0, i * 100, i * 100 + 50, launch_end=i * 100) if i < 10 else None),
    ("small", lambda b, i: b.copy(0, i * 100, i * 100 + 50, size=1024),
     lambda b, i: b.copy(0, i * 100, i * 100 + 50, size=1024) if i < 99 else None),
])
def test_copy_findings(kind: str, make, absent) -> None:
    present = TraceBuilder()
    for index in range(100):
        make(present, index)
    finding = findings_of(present)[f"copies:{kind}"]
    assert (finding.at_stake_ns, finding.evidence["copies"]) == (5000, 100)
    assert query(finding.url)[1]["window"] == "-50-100"  # the longest copy (the first of equals)
    builder = TraceBuilder()
    for index in range(100):
        absent(builder, index)
    assert f"copies:{kind}" not in findings_of(builder)


def _ranks_with_step_times(times: list[int]) -> TraceBuilder:
    builder = TraceBuilder()
    for rank, step_ns in enumerate(times):
        for step in (1, 2):
            start = (step - 1) * 10_000
            builder.kernel(rank, start, start + 1000, step=step)
            builder.kernel(rank, start + 1000, start + step_ns, name="slow_kernel" if step_ns > 1000 else "gemm2",
                           step=step)
    return builder


def test_straggler_rank_and_the_kernels_that_make_the_difference() -> None:
    finding = findings_of(_ranks_with_step_times([2000, 2000, 2500]))["ranks:straggler"]
    assert finding.at_stake_ns == 1000 and finding.title.startswith("Rank 2 straggles")
    assert finding.evidence["slow steps"] == "1, 2"
    assert finding.evidence["+ slow_kernel"] == "1 µs"  # 3000 ns against the others' median of 2000 ns
    assert query(finding.url)[1] == {"run": "r1", "rank": "2", "window": "0-2500"}
    assert "ranks:straggler" not in findings_of(_ranks_with_step_times([2000, 2000, 2150]))


def test_severity_follows_the_share_at_stake() -> None:
    assert [severity_of(s) for s in (0.3, 0.25, 0.1, 0.0999)] == ["high", "high", "medium", "low"]
