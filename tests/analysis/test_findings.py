"""Every GPU-time finding appears on a trace made to show it and stays away from one that does not."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from dashboard.analysis.finding import Finding, ranked, severity_of
from dashboard.analysis.insights import time_tables
from dashboard.analysis.kernel_keys import kernel_key
from dashboard.analysis.time_findings import time_findings
from tests.analysis.test_idle_causes import EXPECTED, LOADER, cause_trace
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


def test_each_idle_cause_is_one_finding_with_that_causes_time() -> None:
    found = findings_of(cause_trace())
    span = 1_110_000  # first kernel start (10 µs) to last end (1120 µs)
    assert "idle" not in found  # the idle total is each cause's evidence, not a finding counted again
    windows = {"data loading": "-180000-420000", "synchronisation": "130000-430000",
               "launch-bound": "280000-460000", "CPU-bound": "201000-801000", "communication wait": "910000-1210000",
               "outside steps": "322000-1189000", "unknown": "820000-1090000"}
    for cause, at_stake in EXPECTED.items():
        finding = found[f"idle:{cause}"]
        assert (finding.at_stake_ns, finding.rank, finding.budget) == (at_stake, 0, "idle")
        assert finding.share == pytest.approx(at_stake / span)
        assert finding.evidence["GPU idle in all"] == "1.04 ms (94% of the span)"
        assert query(finding.url)[1]["window"] == windows[cause]  # its longest gap, with its length on each side
    assert found["idle:data loading"].evidence[f"host in {LOADER[:70]}"] == "1 calls, 185 µs (longest 185 µs)"
    assert found["idle:data loading"].title == "GPU idle 180 µs on rank 0 while the host loads data"
    assert sum(f.at_stake_ns for f in found.values() if f.budget == "idle") == sum(EXPECTED.values())


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
    # The spread, at most rank 1's collective time not under compute (none of it is: all 300 ns overlap).
    assert (finding.rank, finding.budget, finding.at_stake_ns) == (1, "busy", 0)
    assert finding.evidence["uneven collectives (spread between ranks)"] == "200 ns"
    assert "communication:uneven" not in findings_of(_two_ranks(150))  # spread 50 <= 10 % of 1000


def test_uneven_collectives_are_evidence_of_exposed_communication() -> None:
    builder = (TraceBuilder().kernel(0, 0, 1000).kernel(0, 1000, 1100, name=NCCL, stream=20)
               .kernel(1, 0, 1000).kernel(1, 1000, 1400, name=NCCL, stream=20))
    found = findings_of(builder)
    assert "communication:uneven" not in found
    exposed = found["communication:exposed"]
    assert (exposed.rank, exposed.at_stake_ns) == (1, 400)
    assert exposed.evidence["uneven collectives (spread between ranks)"] == "300 ns"


def _short_kernels(duration: int, count: int = 200) -> TraceBuilder:
    builder = TraceBuilder()
    for index in range(count):
        start = index * 20_000
        builder.kernel(0, start, start + duration, launch_end=start - 1000 if index == 0 else start - 1,
                       layer="blocks.0.norm")
    return builder


def test_short_kernels_and_the_launch_bound_layer_are_evidence_of_the_launch_bound_finding() -> None:
    found = findings_of(_short_kernels(5_000))
    assert not [key for key in found if key.startswith("launch:")]  # symptoms, not findings of their own
    launch = found["idle:launch-bound"]
    # Each launch ends 1 ns before its kernel, inside the 15 µs gap: 199 launch-bound gaps of 15 µs.
    assert launch.at_stake_ns == 199 * 15_000
    assert launch.evidence["kernels under 10 µs"] == "200 of 200 (100%), 100.0% of kernel time"
    assert launch.evidence["median / p95 launch delay"] == "1 ns / 1 ns"
    assert launch.evidence["layer blocks.0.norm waited"] == "2.98 ms for its launches (1 ms of kernels)"


def test_long_kernels_leave_no_launch_bound_layer() -> None:
    found = findings_of(_short_kernels(15_000))  # 5 µs gaps: 1/3 of the kernel time, under the layer's threshold
    assert not [label for finding in found.values() for label in finding.evidence if label.startswith("layer ")]


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
    # 500 ns over the median in each of 2 steps, all of it extra kernel time (busy, not idle).
    assert finding.at_stake_ns == 1000 and finding.title.startswith("Rank 2 straggles")
    assert (finding.rank, finding.budget) == (2, "busy")
    assert finding.evidence["slow steps"] == "1, 2"
    assert finding.evidence["+ slow_kernel"] == "1 µs"  # 3000 ns against the others' median of 2000 ns
    assert query(finding.url)[1] == {"run": "r1", "rank": "2", "window": "0-2500"}
    assert "ranks:straggler" not in findings_of(_ranks_with_step_times([2000, 2000, 2150]))


def test_a_stragglers_extra_idle_time_is_not_its_at_stake() -> None:
    """Rank 2 is slower only because its GPU idles 500 ns per step: that idle time is its idle findings'."""
    builder = TraceBuilder()
    for rank, idle in enumerate((0, 0, 500)):
        for step in (1, 2):
            start = (step - 1) * 10_000
            builder.kernel(rank, start, start + 1000, step=step)
            builder.kernel(rank, start + 1000 + idle, start + 2000 + idle, step=step)
    finding = findings_of(builder)["ranks:straggler"]
    assert finding.at_stake_ns == 0 and finding.evidence["time over the median"] == "1 µs"


def test_severity_follows_the_share_at_stake() -> None:
    assert [severity_of(s) for s in (0.3, 0.25, 0.1, 0.0999)] == ["high", "high", "medium", "low"]


def test_a_finding_that_costs_no_runtime_is_info_and_ranks_after_runtime_ones() -> None:
    compile_time = Finding(key="c", title="c", share=0.9, share_of="ops", url="/", advice="", at_stake_ops=40,
                           informational=True)
    runtime = Finding(key="t", title="t", share=0.01, share_of="span", url="/", advice="", at_stake_ns=5)
    assert compile_time.severity == "info" and runtime.severity == "low"
    assert ranked([compile_time, runtime]) == [runtime, compile_time]
