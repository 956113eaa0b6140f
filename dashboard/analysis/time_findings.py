"""Findings about GPU time, each a root cause with the time it costs, counted once.

The idle time of a rank is split into causes (idle_causes: one cause per
idle ns); each cause over CAUSE_SHARE_MIN of the span is one finding, whose
time at stake is that cause's idle time. Symptoms of the same time are its
evidence, never findings of their own: many short kernels and the layers
whose kernels waited on launches are evidence of the launch-bound finding,
the data-loading ranges of the data-loading one, uneven collective time of
the exposed-communication one. Busy time is split too: exposed
communication (communication_ns), copies (at most the rank's memory_ns, each
copy in one class) and a straggler's extra kernel time (at most its
compute_ns) are disjoint, so a rank's findings add up to at most its span
and its idle findings to at most its idle time (see finding.py).

For per-rank rules the worst rank is named and the others are listed in the
evidence, so one problem is one finding however many ranks share it.
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis import copies as copy_analysis
from dashboard.analysis import idle_causes as causes
from dashboard.analysis import launch_stats, ranks
from dashboard.analysis.finding import BUSY, IDLE, Finding, padded_window, view_href
from dashboard.analysis.kernel_keys import format_keys, kernel_key
from dashboard.analysis.time_tables import TimeTables
from dashboard.analysis.units import format_bytes, format_ns

CAUSE_SHARE_MIN = 0.05  # one idle cause over 5 % of the span
EXPOSED_COMMUNICATION_SHARE_MIN = 0.10  # collectives not hidden behind compute over 10 % of the span
PAGEABLE_MIN_BYTES = 1024 * 1024  # pageable host-to-device copies of 1 MiB or more
SYNC_COPY_MIN_COUNT = 10  # synchronous copies: at least this many
SMALL_COPY_MIN_COUNT = 100  # small copies: at least this many

THRESHOLDS: dict[str, str] = {
    "idle cause": f"one cause over {CAUSE_SHARE_MIN:.0%} of a rank's GPU span (at stake: that cause's idle time)",
    "exposed communication": f"collectives not overlapped by compute over {EXPOSED_COMMUNICATION_SHARE_MIN:.0%} "
                             "of the span (uneven collective time between ranks: its evidence)",
    "short kernels, launch-bound layers": "evidence of the launch-bound finding (their time is its time)",
    "pageable copies": f"host-to-device copies from pageable memory of {format_bytes(PAGEABLE_MIN_BYTES)} or more",
    "synchronous copies": f"{SYNC_COPY_MIN_COUNT} or more blocking copies",
    "small copies": f"{SMALL_COPY_MIN_COUNT} or more copies under {format_bytes(copy_analysis.SMALL_COPY_BYTES)}",
    "straggler": f"a rank's GPU span in a step over the median of the ranks by more than {ranks.STRAGGLER_MARGIN:.0%} "
                 "(at stake: its extra kernel time; its extra idle time is in its idle findings)",
    "uneven collectives": f"communication time spread between ranks over {ranks.UNEVEN_COLLECTIVE_SHARE:.0%} of "
                          "the longest span, when no exposed-communication finding holds it",
}
_TITLES = {
    causes.DATA_LOADING: "while the host loads data",
    causes.SYNCHRONISATION: "after the host synchronised with it",
    causes.LAUNCH_BOUND: "waiting for kernel launches (launch-bound)",
    causes.CPU_BOUND: "while the host ran CPU work that launched nothing (CPU-bound)",
    causes.COMMUNICATION_WAIT: "while the host waited in collectives",
    causes.OUTSIDE_STEPS: "outside profiler steps",
    causes.UNKNOWN: "with no cause on the host (work already launched, started late)",
}
_CAUSE_ADVICE = {
    causes.DATA_LOADING: "load batches in background workers (DataLoader num_workers > 0, pin_memory=True, "
                         "prefetch_factor) so the next batch is ready when the step ends",
    causes.SYNCHRONISATION: "the CPU waits for the GPU and then starts late: remove .item() / .cpu() / "
                            "torch.cuda.synchronize() from the loop, or defer them to the end of the step",
    causes.LAUNCH_BOUND: "the GPU waits for the CPU to launch: fuse small ops (torch.compile), use CUDA graphs, "
                         "or make the CPU side cheaper",
    causes.CPU_BOUND: "the host runs Python or CPU ops that feed the GPU nothing: move that work off the step "
                      "path (workers, another thread) or onto the GPU",
    causes.COMMUNICATION_WAIT: "the host blocks in a collective or barrier: overlap it with compute (async ops, "
                               "DDP bucketing) or look for the slower rank it waits for",
    causes.OUTSIDE_STEPS: "the GPU waits between steps: move logging / evaluation / checkpointing off the step "
                          "path, or profile the missing part with its own steps",
    causes.UNKNOWN: "work was launched in time but started late: look for waits on other streams or events; "
                    "a trace with events removed (sampled) leaves such gaps too",
}


def _others(frame: pl.DataFrame, value: str, worst: int) -> str:
    rest = frame.filter(pl.col("rank") != worst)
    return ", ".join(f"rank {r}: {v:.1%}" for r, v in zip(rest.get_column("rank"), rest.get_column(value),
                                                            strict=True)) or "–"


def _launch_evidence(tables: TimeTables, rank: int) -> dict[str, object]:
    """Short kernels, launch delays and the launch-bound layers of `rank`: symptoms of its launch-bound time."""
    evidence: dict[str, object] = {}
    launch = tables.launch.filter(pl.col("rank") == rank)
    if launch.height:
        row = launch.row(0, named=True)
        evidence[f"kernels under {format_ns(launch_stats.SHORT_KERNEL_NS)}"] = (
            f"{row['short_kernels']:,} of {row['kernels']:,} ({row['short_count_share']:.0%}), "
            f"{(row['short_time_share'] or 0):.1%} of kernel time")
        delays = f"{format_ns(row['median_delay_ns'])} / {format_ns(row['p95_delay_ns'])}"
        evidence["median / p95 launch delay"] = delays
    per_gap = tables.idle_parts.filter(pl.col("rank") == rank, pl.col("cause") == causes.LAUNCH_BOUND).group_by(
        "rank", "gap_start_ns").agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("wait_ns"))
    waits = per_gap.join(tables.gaps.select("rank", pl.col("start_ns").alias("gap_start_ns"),
                                            pl.col("next_correlation").alias("correlation")),
                         on=["rank", "gap_start_ns"]).select("rank", "correlation", "wait_ns")
    layers = launch_stats.launch_bound_layers(tables.kernels.filter(pl.col("rank") == rank), waits)
    for layer in layers.head(3).iter_rows(named=True):
        evidence[f"layer {layer['layer']} waited"] = (f"{format_ns(layer['launch_bound_ns'])} for its launches "
                                                      f"({format_ns(layer['kernel_ns'])} of kernels)")
    return evidence


def _data_evidence(tables: TimeTables, rank: int) -> dict[str, object]:
    mine = tables.data_ranges.filter(pl.col("rank") == rank).head(2)
    return {f"host in {row['name'][:70]}": f"{row['calls']:,} calls, {format_ns(row['time_ns'])} "
                                           f"(longest {format_ns(row['longest_ns'])})"
            for row in mine.iter_rows(named=True)}


def idle_findings(tables: TimeTables) -> list[Finding]:
    """One finding per idle cause over CAUSE_SHARE_MIN of a rank's span (the worst rank of each cause)."""
    found: list[Finding] = []
    if tables.idle_parts.height == 0:
        return found
    by_cause = tables.idle_causes.join(tables.by_rank.select("rank", "span_ns", "idle_ns").rename(
        {"idle_ns": "rank_idle_ns"}), on="rank").with_columns((pl.col("idle_ns") / pl.col("span_ns")).alias("share"))
    for cause in causes.CAUSES:
        chosen = by_cause.filter(pl.col("cause") == cause).sort("share", "rank", descending=[True, False])
        if chosen.height == 0 or chosen.get_column("share")[0] <= CAUSE_SHARE_MIN:
            continue
        row = chosen.row(0, named=True)
        if row["idle_ns"] == 0:
            continue
        rank = row["rank"]
        longest = tables.idle_parts.filter(pl.col("rank") == rank, pl.col("cause") == cause).group_by(
            "gap_start_ns").agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("ns")).sort(
            "ns", "gap_start_ns", descending=[True, False]).row(0, named=True)
        gap = tables.gaps.filter(pl.col("rank") == rank, pl.col("start_ns") == longest["gap_start_ns"]).row(
            0, named=True)
        evidence: dict[str, object] = {
            "idle, this cause": format_ns(row["idle_ns"]), "gaps with it": row["gaps"],
            "GPU idle in all": f"{format_ns(row['rank_idle_ns'])} ({row['rank_idle_ns'] / row['span_ns']:.0%} of "
                               "the span)",
            "of the idle time": f"{row['idle_ns'] / row['rank_idle_ns']:.0%}",
            "longest gap with it": format_ns(gap["gap_ns"]),
        }
        if cause == causes.LAUNCH_BOUND:
            evidence.update(_launch_evidence(tables, rank))
        elif cause == causes.DATA_LOADING:
            evidence.update(_data_evidence(tables, rank))
        evidence["other ranks"] = _others(chosen, "share", rank)
        found.append(Finding(
            key=f"idle:{cause}", title=f"GPU idle {format_ns(row['idle_ns'])} on rank {rank} {_TITLES[cause]}",
            share=row["share"], share_of=tables.span_text(rank), at_stake_ns=row["idle_ns"],
            url=view_href("/timeline", tables.run_id, rank=rank,
                          window=padded_window(gap["start_ns"], gap["end_ns"])),
            advice=_CAUSE_ADVICE[cause], evidence=evidence, rank=rank, budget=IDLE))
    return found


def _communication_selection(tables: TimeTables) -> tuple[str, pl.DataFrame]:
    comm_names = tables.kernels.filter(pl.col("kind") == "communication").group_by("name").agg(
        (pl.col("end_ns") - pl.col("start_ns")).sum().alias("t")).sort("t", descending=True)
    return format_keys([kernel_key(name) for name in comm_names.get_column("name").head(5).to_list()]), comm_names


def communication_findings(tables: TimeTables) -> list[Finding]:
    """Collectives not hidden behind compute; uneven collective time between ranks as its evidence (or alone)."""
    exposed = tables.by_rank.with_columns((pl.col("communication_ns") / pl.col("span_ns")).alias("share")).sort(
        "share", descending=True)
    selection, comm_names = _communication_selection(tables)
    spread = ranks.collective_spread(tables.by_rank)
    uneven: dict[str, object] = {}
    if spread is not None:
        uneven = {"uneven collectives (spread between ranks)": format_ns(spread["spread_ns"]),
                  f"collective time, rank {spread['most_rank']}": format_ns(spread["most_ns"]),
                  f"collective time, rank {spread['least_rank']}": format_ns(spread["least_ns"])}
    if exposed.height and exposed.get_column("share")[0] > EXPOSED_COMMUNICATION_SHARE_MIN:
        row = exposed.row(0, named=True)
        overlap = row["overlap_ns"] / row["communication_total_ns"] if row["communication_total_ns"] else 0.0
        top = comm_names.row(0, named=True) if comm_names.height else {"name": "–", "t": 0}
        return [Finding(
            key="communication:exposed",
            title=f"Communication not hidden behind compute: {format_ns(row['communication_ns'])} on rank "
                  f"{row['rank']}",
            share=row["share"], share_of=tables.span_text(row["rank"]), at_stake_ns=row["communication_ns"],
            url=view_href("/kernels", tables.run_id, rank=row["rank"], sel=selection),
            advice="overlap collectives with compute (DDP bucketing, FSDP prefetch, a separate stream) or send "
                   "less (gradient compression, larger buckets); long collectives often wait for a slower rank",
            evidence={"communication (all)": format_ns(row["communication_total_ns"]),
                      "overlapped with compute": f"{overlap:.0%}", "exposed": format_ns(row["communication_ns"]),
                      "top collective": f"{top['name']} ({format_ns(top['t'])}, all ranks)", **uneven},
            rank=row["rank"], budget=BUSY)]
    if spread is None:
        return []
    rank = spread["most_rank"]
    at_stake = min(spread["spread_ns"], tables.rank_value(rank, "communication_ns"))
    return [Finding(
        key="communication:uneven",
        title=f"Uneven collectives: rank {rank} spends {format_ns(spread['spread_ns'])} more in collectives "
              f"than rank {spread['least_rank']}",
        share=at_stake / tables.span(rank), share_of=tables.span_text(rank), at_stake_ns=at_stake,
        url=view_href("/kernels", tables.run_id, sel=selection),
        advice="the rank with the most collective time mostly waits for the others: look for the slow rank's "
               "extra work (stragglers) or an uneven split of data",
        evidence={**uneven, "at stake": "the spread, at most that rank's collective time not under compute"},
        rank=rank, budget=BUSY)]


def copy_findings(tables: TimeTables) -> list[Finding]:
    """Pageable host-to-device, synchronous and many small copies (worst rank of each; each copy in one class).

    At stake: the class's copy time, at most what is left of the rank's memory time (copies under no kernel),
    so the copy findings of a rank never claim more than its copies held the GPU alone.
    """
    found: list[Finding] = []
    left = dict(tables.by_rank.select("rank", "memory_ns").rows())
    rules = (("pageable HtoD", pl.col("bytes") >= PAGEABLE_MIN_BYTES, "Host-to-device copies from pageable memory",
              "pin the host tensors (pin_memory=True in the DataLoader, tensor.pin_memory()) and copy with "
              "non_blocking=True"),
             ("synchronous", pl.col("copies") >= SYNC_COPY_MIN_COUNT, "Synchronous copies stall the CPU",
              "avoid .item() / .cpu() / .tolist() in the loop; use non_blocking copies into pinned memory"),
             ("small", pl.col("copies") >= SMALL_COPY_MIN_COUNT, "Many small copies",
              "gather small tensors into one buffer and copy once, or keep them on the GPU"))
    for kind, condition, title, advice in rules:
        chosen = tables.copies.filter(pl.col("class") == kind, condition).sort("time_ns", descending=True)
        if chosen.height == 0:
            continue
        row = chosen.row(0, named=True)
        at_stake = min(int(row["time_ns"]), int(left.get(row["rank"], 0)))
        left[row["rank"]] = left.get(row["rank"], 0) - at_stake
        found.append(Finding(
            key=f"copies:{kind}",
            title=f"{title}: {row['copies']:,} copies, {format_bytes(row['bytes'])}, "
                  f"{format_ns(row['time_ns'])} on rank {row['rank']}",
            share=at_stake / tables.span(row["rank"]), share_of=tables.span_text(row["rank"]),
            at_stake_ns=at_stake, advice=advice,
            url=view_href("/timeline", tables.run_id, rank=row["rank"],
                          window=padded_window(row["longest_start_ns"], row["longest_end_ns"])),
            evidence={"copies": row["copies"], "bytes": format_bytes(row["bytes"]),
                      "copy time": format_ns(row["time_ns"]),
                      "at stake": "copy time the GPU spent on copies alone (not under a kernel)"},
            rank=row["rank"], budget=BUSY))
    return found


def straggler_findings(tables: TimeTables) -> list[Finding]:
    """The slowest rank against the median of the ranks, step by step, with the kernels that differ.

    At stake: its extra kernel time (compute over the median rank's), at most its step excess; the rest of
    its excess is idle or communication time, which its own findings hold.
    """
    slow = ranks.step_stragglers(tables.by_step)
    if slow.height == 0:
        return []
    per_rank = slow.group_by("rank").agg(pl.col("excess_ns").sum(), pl.col("step").sort_by("excess_ns").last()
                                         .alias("worst_step"), pl.col("step").alias("steps")).sort(
        "excess_ns", descending=True)
    row = per_rank.row(0, named=True)
    rank = row["rank"]
    stepped = tables.by_step.filter(pl.col("step").is_in(row["steps"]))
    compute = stepped.group_by("rank").agg(pl.col("compute_ns").sum())
    median_compute = compute.filter(pl.col("rank") != rank).get_column("compute_ns").median() or 0
    mine = compute.filter(pl.col("rank") == rank).get_column("compute_ns")
    extra_compute = max(0, int(mine.item() if mine.len() else 0) - int(median_compute))  # type: ignore[arg-type]
    at_stake = min(int(row["excess_ns"]), extra_compute)
    worst = tables.by_step.filter(pl.col("rank") == rank, pl.col("step") == row["worst_step"])
    window_start = int(tables.kernels.filter(pl.col("rank") == rank, pl.col("step") == row["worst_step"])
                       .get_column("start_ns").min())  # type: ignore[arg-type]
    window = f"{window_start}-{window_start + int(worst.get_column('span_ns').item())}"
    differing = ranks.straggler_kernels(tables.kernels, rank, row["steps"])
    evidence: dict[str, object] = {"slow steps": ", ".join(str(s) for s in sorted(row["steps"])),
                                   "time over the median": format_ns(row["excess_ns"]),
                                   "of it, extra kernel time (at stake)": format_ns(at_stake)}
    for kernel in differing.iter_rows(named=True):
        evidence[f"+ {kernel['name'][:80]}"] = format_ns(kernel["difference_ns"])
    return [Finding(
        key="ranks:straggler",
        title=f"Rank {rank} straggles: {format_ns(row['excess_ns'])} over the median GPU span of its steps",
        share=at_stake / tables.span(rank), share_of=tables.span_text(rank),
        at_stake_ns=at_stake, evidence=evidence,
        url=view_href("/timeline", tables.run_id, rank=rank, window=window),
        advice="every other rank waits for this one at the next collective: balance its data, check its "
               "GPU (clocks, thermal) and its host (data loading, other processes)", rank=rank, budget=BUSY)]


def time_findings(tables: TimeTables) -> list[Finding]:
    return [*idle_findings(tables), *communication_findings(tables), *copy_findings(tables),
            *straggler_findings(tables)]
