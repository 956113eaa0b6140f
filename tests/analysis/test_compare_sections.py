"""Every /compare section on hand-computed numbers: renamed kernels, passes, busy, memory, planner."""

from __future__ import annotations

import polars as pl

from dashboard import schema
from dashboard.analysis import kernels as ka
from dashboard.analysis.compare import ONLY_A, ONLY_B, kernel_comparison
from dashboard.analysis.compare_kernels import RENAMED, SAME_SHORT, SAME_SIGNATURE, match_renamed, merge_renamed
from dashboard.analysis.compare_memory import (
    BY_INDEX,
    BY_MATCHER,
    BY_OCCURRENCE,
    align_ops,
    aligned_curves,
    first_divergence,
    op_sequence,
    peak_comparison,
)
from dashboard.analysis.compare_passes import busy_comparison, pass_comparison
from dashboard.analysis.compare_planner import (
    ADDED,
    CHANGED,
    MOVED,
    REMOVED,
    RESIZED,
    SAME,
    buffer_changes,
    change_counts,
    channel_changes,
    default_groups,
    peak_changes,
)
from dashboard.analysis.gpu_busy import activity_intervals, gpu_busy
from dashboard.analysis.rank_summaries import median_step_ns, step_source, step_times


def summary(*launches: tuple[str, int]) -> pl.DataFrame:
    start, rows = 0, []
    for name, duration in launches:
        rows.append({"name": name, "start_ns": start, "end_ns": start + duration, "rank": 0})
        start += duration + 10
    kernels = schema.conform("kernels", pl.DataFrame(rows))
    return ka.kernel_summary(ka.filter_kernels(ka.prepare_kernels(kernels)))


# --- kernels renamed between runs -------------------------------------------------------------------------

def test_renamed_kernels_match_by_base_name_and_template_arguments() -> None:
    a = summary(("void ns1::gemm<float, 128>(int)", 100), ("void relu_kernel<float>(float*)", 50),
                ("void flash::fwd<true>(void*)", 70), ("only_in_a_kernel", 30), ("shared", 10))
    b = summary(("void ns2::gemm<float, 128>(int, int)", 130), ("void relu_kernel<half>(half*)", 20),
                ("void dup<1>()", 5), ("void dup<2>()", 6), ("shared", 12))
    comparison = kernel_comparison(a, b)
    matches = match_renamed(comparison)
    pairs = {(row["group_a"], row["group_b"]): row["match"] for row in matches.to_dicts()}
    assert pairs == {
        ("void ns1::gemm<float, 128>(int)", "void ns2::gemm<float, 128>(int, int)"): SAME_SIGNATURE,
        ("void relu_kernel<float>(float*)", "void relu_kernel<half>(half*)"): SAME_SHORT,
    }
    merged = merge_renamed(comparison, matches)
    gemm = merged.filter(pl.col("renamed_from") == "void ns1::gemm<float, 128>(int)").row(0, named=True)
    assert (gemm["presence"], gemm["total_a_ns"], gemm["total_b_ns"], gemm["delta_ns"]) == (RENAMED, 100, 130, 30)
    assert gemm["ratio"] == 1.3 and gemm["label"] == "gemm (renamed)"
    relu = merged.filter(pl.col("group") == "void relu_kernel<half>(half*)").row(0, named=True)
    assert relu["delta_ns"] == -30
    # One side only: flash::fwd and only_in_a_kernel in A; dup<1>, dup<2> in B (two candidates: no guess).
    assert sorted(merged.filter(pl.col("presence") == ONLY_A).get_column("group").to_list()) == [
        "only_in_a_kernel", "void flash::fwd<true>(void*)"]
    assert sorted(merged.filter(pl.col("presence") == ONLY_B).get_column("group").to_list()) == [
        "void dup<1>()", "void dup<2>()"]
    assert merged.height == comparison.height - 2
    assert merged.get_column("delta_ns").sum() == comparison.get_column("delta_ns").sum()


def test_no_renames_leaves_the_comparison_as_it_is() -> None:
    comparison = kernel_comparison(summary(("k1", 10)), summary(("k1", 15)))
    merged = merge_renamed(comparison, match_renamed(comparison))
    assert merged.select("group", "delta_ns", "presence").rows() == [("k1", 5, "both")]


# --- passes, steps, GPU busy -------------------------------------------------------------------------------

def kernels(*rows: tuple[str | None, int, int, float | None, int | None]) -> pl.DataFrame:
    """(pass, start, end, flops, step) rows of rank 0."""
    return schema.conform("kernels", pl.DataFrame(
        [{"rank": 0, "name": "k", "pass": p, "start_ns": s, "end_ns": e, "flops": f, "step": st}
         for p, s, e, f, st in rows]))


def test_pass_deltas_and_tflops() -> None:
    a = kernels(("forward", 0, 100, 2e5, 1), ("forward", 100, 200, None, 1), ("backward", 200, 500, 6e5, 1),
                (None, 500, 520, None, None))
    b = kernels(("forward", 0, 150, 3e5, 1), ("optimizer", 150, 160, None, 1), ("forward", 1000, 1100, None, 2))
    rows = {row["pass"]: row for row in pass_comparison(a, b).to_dicts()}
    assert list(rows) == ["forward", "backward", "optimizer", "unattributed"]
    assert (rows["forward"]["time_a_ns"], rows["forward"]["time_b_ns"], rows["forward"]["delta_ns"]) == (200, 250, 50)
    # A: 2e5 FLOPs over the 100 ns of the one kernel that has them = 2 TFLOP/s; B: 3e5 / 150 ns = 2 TFLOP/s.
    assert rows["forward"]["tflops_a"] == 2.0 and rows["forward"]["tflops_b"] == 2.0
    assert (rows["backward"]["delta_ns"], rows["backward"]["presence"]) == (-300, ONLY_A)
    assert (rows["optimizer"]["delta_ns"], rows["optimizer"]["tflops_b"], rows["optimizer"]["presence"]) == (
        10, None, ONLY_B)
    assert rows["unattributed"]["time_a_ns"] == 20
    # Step time without ProfilerStep ranges: the kernel spans. A step 1 spans 0-500; B steps 160 and 100 -> 130.
    assert median_step_ns(step_times(None, a)) == 500 and median_step_ns(step_times(None, b)) == 130
    assert step_source(step_times(None, a)) == "kernel spans (the trace has no ProfilerStep range)"
    assert median_step_ns(step_times(None, kernels(("forward", 0, 10, None, None)))) is None


def test_one_step_time_prefers_the_profiler_step_range() -> None:
    """The ResNet case: ProfilerStep 175 ms, its kernels span 116 ms: every page reads 175 ms."""
    ranges = pl.DataFrame({"rank": [0, 0], "device": [None, None], "step": [5, 6],
                           "category": ["profiler_step"] * 2, "name": ["ProfilerStep#5", "ProfilerStep#6"],
                           "start_ns": [0, 175], "end_ns": [175, 350]}, schema_overrides={"device": pl.Int32})
    stepped = kernels(("forward", 10, 126, None, 5), ("forward", 185, 301, None, 6))
    steps = step_times(ranges, stepped)
    assert median_step_ns(steps) == 175 and step_source(steps) == "ProfilerStep ranges"


def test_busy_side_by_side() -> None:
    busy_a = gpu_busy(activity_intervals(kernels(("f", 0, 100, None, 1), ("f", 50, 150, None, 1),
                                                 ("f", 200, 300, None, 1))))
    busy_b = gpu_busy(activity_intervals(kernels(("f", 0, 100, None, 1))))
    rows = busy_comparison(busy_a, busy_b).to_dicts()
    assert rows[0] == {"side": "A", "span_ns": 300, "busy_ns": 250, "idle_ns": 50, "busy_share": 250 / 300}
    assert rows[1] == {"side": "B", "span_ns": 100, "busy_ns": 100, "idle_ns": 0, "busy_share": 1.0}


# --- device memory -----------------------------------------------------------------------------------------

def op_memory(ops: list[tuple[str, int]], rank: int = 0) -> pl.DataFrame:
    """(op_type, DRAM allocated per bank before the op) per op; L1 stays at 5; 1000 per bank of capacity."""
    rows = []
    for index, (op_type, dram) in enumerate(ops):
        for buffer_type, allocated in (("DRAM", dram), ("L1", 5)):
            rows.append({"rank": rank, "op_index": index, "op_type": op_type, "buffer_type": buffer_type, "banks": 2,
                         "total_per_bank": 1000, "allocated_per_bank": allocated, "free_per_bank": 1000 - allocated,
                         "largest_free_per_bank": (1000 - allocated) // 2, "allocated": allocated * 2,
                         "total": 2000})
    return schema.conform("op_memory", pl.DataFrame(rows))


def test_identical_sequences_align_by_index_and_peaks_compare() -> None:
    a = op_memory([("Load", 0), ("Matmul", 100), ("Add", 300), ("Free", 200)])
    b = op_memory([("Load", 0), ("Matmul", 100), ("Add", 250), ("Free", 400)])
    alignment = align_ops(op_sequence(a), op_sequence(b))
    assert (alignment.method, alignment.matched, alignment.only_a, alignment.only_b) == (BY_INDEX, 4, 0, 0)
    parted = first_divergence(aligned_curves(a, b, alignment))
    assert parted is not None
    assert (parted["position"], parted["buffer_type"], parted["allocated_a"], parted["allocated_b"]) == (
        2, "DRAM", 300, 250)
    peaks = {row["buffer_type"]: row for row in peak_comparison(a, b).to_dicts()}
    dram = peaks["DRAM"]
    # A peaks before op 2 (allocated by op 1, Matmul); B before op 3 (allocated by op 2, Add).
    assert (dram["peak_a_bytes_per_bank"], dram["peak_b_bytes_per_bank"], dram["delta_bytes_per_bank"]) == (
        300, 400, 100)
    assert (dram["culprit_op_index_a"], dram["culprit_op_type_a"]) == (1, "Matmul")
    assert (dram["culprit_op_index_b"], dram["culprit_op_type_b"]) == (2, "Add")
    # Fragmentation 1 - largest / free: A at its peak 1 - 350/700 = 0.5.
    assert abs(dram["fragmentation_at_peak_a"] - 0.5) < 1e-9
    assert peaks["L1"]["delta_bytes_per_bank"] == 0


def test_sequences_of_different_length_align_by_identity() -> None:
    a = op_memory([("Load", 0), ("Matmul", 100), ("Add", 300), ("Free", 200)])
    b = op_memory([("Load", 0), ("Matmul", 100), ("Relu", 150), ("Add", 300), ("Free", 200), ("Copy", 50)])
    alignment = align_ops(op_sequence(a), op_sequence(b))
    assert (alignment.method, alignment.matched, alignment.only_a, alignment.only_b) == (BY_MATCHER, 4, 0, 2)
    assert alignment.pairs.rows() == [(0, 0, 0), (1, 1, 1), (2, None, 2), (3, 2, 3), (4, 3, 4), (5, None, 5)]
    curves = aligned_curves(a, b, alignment)
    assert curves.filter(pl.col("buffer_type") == "DRAM").get_column("allocated_a").to_list() == [
        0, 100, None, 300, 200, None]
    parted = first_divergence(curves)
    assert parted is not None and (parted["position"], parted["op_index_a"], parted["op_type_b"]) == (2, None, "Relu")
    # Same peak value (300 per bank), reached before A's op 2 and B's op 3: the culprits are A's op 1 and B's op 2.
    dram = peak_comparison(a, b).filter(pl.col("buffer_type") == "DRAM").row(0, named=True)
    assert (dram["delta_bytes_per_bank"], dram["culprit_op_index_a"], dram["culprit_op_index_b"]) == (0, 1, 2)


def test_occurrence_alignment_for_long_sequences(monkeypatch) -> None:
    from dashboard.analysis import compare_memory

    monkeypatch.setattr(compare_memory, "MATCHER_LIMIT", 2)
    a = op_memory([("Load", 0), ("Add", 10), ("Add", 20)])
    b = op_memory([("Load", 0), ("Add", 10)])
    alignment = align_ops(op_sequence(a), op_sequence(b))
    assert (alignment.method, alignment.matched, alignment.only_a, alignment.only_b) == (BY_OCCURRENCE, 2, 1, 0)
    assert alignment.pairs.rows() == [(0, 0, 0), (1, 1, 1), (2, 2, None)]


def test_a_buffer_type_on_one_side_only() -> None:
    a = op_memory([("Load", 0), ("Add", 10)])
    b = pl.concat([op_memory([("Load", 0), ("Add", 10)]), schema.conform("op_memory", pl.DataFrame({
        "rank": [0], "op_index": [1], "op_type": ["Add"], "buffer_type": ["TRACE"], "banks": [1],
        "total_per_bank": [64], "allocated_per_bank": [32], "free_per_bank": [32], "largest_free_per_bank": [32]}))])
    trace = peak_comparison(a, b).filter(pl.col("buffer_type") == "TRACE").row(0, named=True)
    assert (trace["peak_a_bytes_per_bank"], trace["peak_b_bytes_per_bank"], trace["delta_bytes_per_bank"]) == (
        None, 32, None)
    parted = first_divergence(aligned_curves(a, b, align_ops(op_sequence(a), op_sequence(b))))
    assert parted is not None and (parted["position"], parted["buffer_type"]) == (1, "TRACE")


# --- planner dumps -----------------------------------------------------------------------------------------

def ws_buffers(group: str, rows: list[tuple[str, int, str, int | None, int | None, int, int]]) -> pl.DataFrame:
    """(memory, buffer_index, name, bytes, cols, start_op, end_op) rows."""
    return schema.conform("ws_buffers", pl.DataFrame(
        [{"group": group, "memory": m, "buffer_index": i, "name": n, "bytes": b, "rows": 128 if c else None,
          "cols": c, "start_op": s, "end_op": e} for m, i, n, b, c, s, e in rows]))


def test_buffers_added_removed_resized_moved() -> None:
    a = ws_buffers("k#1", [("SMEM", 0, "q", 1024, None, 0, 10), ("SMEM", 1, "dq", 512, None, 2, 8),
                           ("SMEM", 2, "dq", 512, None, 3, 9), ("SMEM", 3, "gone", 64, None, 1, 2),
                           ("TMEM", 0, "acc", None, 128, 4, 12)])
    b = ws_buffers("k#2", [("SMEM", 0, "q", 2048, None, 0, 10), ("SMEM", 1, "new", 256, None, 0, 4),
                           ("SMEM", 2, "dq", 512, None, 2, 8), ("SMEM", 3, "dq", 512, None, 5, 11),
                           ("TMEM", 0, "acc", None, 256, 4, 12)])
    changes = buffer_changes(a, "k#1", b, "k#2")
    by_name = {(row["memory"], row["name"], row["nth"]): row for row in changes.to_dicts()}
    assert by_name[("SMEM", "q", 0)]["change"] == RESIZED
    assert by_name[("SMEM", "new", 0)]["change"] == ADDED
    assert by_name[("SMEM", "gone", 0)]["change"] == REMOVED
    assert by_name[("SMEM", "dq", 0)]["change"] == SAME
    second_dq = by_name[("SMEM", "dq", 1)]
    assert (second_dq["change"], second_dq["start_shift"], second_dq["end_shift"]) == (MOVED, 2, 2)
    assert by_name[("TMEM", "acc", 0)]["change"] == RESIZED
    assert change_counts(changes) == {RESIZED: 2, ADDED: 1, REMOVED: 1, SAME: 1, MOVED: 1}
    peaks = {row["memory"]: row for row in peak_changes(a, "k#1", b, "k#2").to_dicts()}
    # SMEM A: ops 3-8 hold q 1024 + dq 512 + dq 512 = 2048. B: ops 2-4 hold q 2048 + new 256 + dq 512 = 2816,
    # ops 5-8 q 2048 + dq 512 + dq 512 = 3072, the peak.
    assert (peaks["SMEM"]["peak_a"], peaks["SMEM"]["peak_b"], peaks["SMEM"]["delta"]) == (2048, 3072, 1024)
    assert (peaks["SMEM"]["at_op_a"], peaks["SMEM"]["at_op_b"]) == (3, 5)
    assert (peaks["TMEM"]["peak_a"], peaks["TMEM"]["peak_b"], peaks["TMEM"]["delta"]) == (128, 256, 128)


def test_a_memory_without_buffers_has_an_unknown_peak() -> None:
    a = ws_buffers("k", [("SMEM", 0, "q", 100, None, 0, 2)])
    b = ws_buffers("k", [("SMEM", 0, "q", 100, None, 0, 2), ("TMEM", 0, "acc", None, 64, 0, 3)])
    tmem = peak_changes(a, "k", b, "k").filter(pl.col("memory") == "TMEM").row(0, named=True)
    assert (tmem["peak_a"], tmem["peak_b"], tmem["delta"]) == (None, 64, None)


def test_channels_changed() -> None:
    def channels(rows: list[tuple[int, int, int, str]]) -> pl.DataFrame:
        return schema.conform("ws_channels", pl.DataFrame(
            [{"group": "k", "uid": u, "src_op": s, "dst_op": d, "memory": m, "name": f"ch{u}"} for u, s, d, m in rows]))

    a = channels([(1, 1, 2, "SMEM"), (2, 2, 3, "SMEM"), (3, 3, 4, "TMEM")])
    b = channels([(1, 1, 2, "SMEM"), (2, 2, 5, "SMEM"), (4, 4, 6, "TMEM")])
    changes = channel_changes(a, "k", b, "k")
    assert changes.select("uid", "change").rows() == [(1, SAME), (2, CHANGED), (3, REMOVED), (4, ADDED)]


def test_default_groups() -> None:
    assert default_groups(["x#1", "k#1"], ["k#1", "y"]) == ("k#1", "k#1")
    assert default_groups(["x"], ["y"]) == ("x", "y")
    assert default_groups([], ["y"]) is None


def test_alignment_stretches() -> None:
    from dashboard.analysis.compare_memory import alignment_stretches

    a = op_memory([("Load", 0), ("Matmul", 100), ("Add", 300), ("Free", 200)])
    b = op_memory([("Load", 0), ("Matmul", 100), ("Relu", 150), ("Add", 300), ("Free", 200), ("Copy", 50)])
    stretches = alignment_stretches(align_ops(op_sequence(a), op_sequence(b)).pairs)
    assert stretches.rows() == [(0, 1, "both", 0, 1, 0, 1), (2, 2, "only in B", None, None, 2, 2),
                                (3, 4, "both", 2, 3, 3, 4), (5, 5, "only in B", None, None, 5, 5)]


def test_layer_tflops_side_by_side() -> None:
    from dashboard.analysis.compare import layer_comparison
    from dashboard.analysis.layers import layer_stats

    def occurrences(duration: int, flops: float | None) -> pl.DataFrame:
        return pl.DataFrame({"rank": [0], "layer": ["attn"], "pass": ["forward"], "start_ns": [0],
                             "end_ns": [duration], "duration_ns": [duration], "flops": [flops]},
                            schema_overrides={"rank": pl.Int32, "flops": pl.Float64})

    # 2e6 FLOPs in 1000 ns = 2 TFLOP/s; 2e6 FLOPs in 500 ns = 4 TFLOP/s; unknown FLOPs: no rate.
    row = layer_comparison(layer_stats(occurrences(1000, 2e6)), layer_stats(occurrences(500, 2e6))).row(0, named=True)
    assert (row["delta_ns"], row["tflops_a"], row["tflops_b"]) == (-500, 2.0, 4.0)
    row = layer_comparison(layer_stats(occurrences(1000, 2e6)), layer_stats(occurrences(500, None))).row(0, named=True)
    assert row["tflops_b"] is None
