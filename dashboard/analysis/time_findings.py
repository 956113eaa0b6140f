"""Findings about GPU time: idle GPU and why, exposed communication, launch overhead, copies, stragglers.

Each rule reads the tables prepared in `TimeTables` and gives zero or one
finding per subject; the thresholds below are the page's named constants.
For per-rank rules the worst rank is named and the others are listed in the
evidence, so one problem is one finding however many ranks share it.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from dashboard.analysis import copies as copy_analysis
from dashboard.analysis import launch_stats, ranks
from dashboard.analysis.finding import Finding, padded_window, view_href
from dashboard.analysis.kernel_keys import format_keys, kernel_key
from dashboard.analysis.units import format_bytes, format_ns

IDLE_SHARE_MIN = 0.20  # GPU idle over 20 % of its span
CAUSE_SHARE_MIN = 0.05  # one idle cause over 5 % of the span
EXPOSED_COMMUNICATION_SHARE_MIN = 0.10  # collectives not hidden behind compute over 10 % of the span
SHORT_KERNEL_COUNT_SHARE_MIN = 0.50  # over half the kernels shorter than SHORT_KERNEL_NS ...
SHORT_KERNEL_MIN_COUNT = 100  # ... among at least this many kernels
PAGEABLE_MIN_BYTES = 1024 * 1024  # pageable host-to-device copies of 1 MiB or more
SYNC_COPY_MIN_COUNT = 10  # synchronous copies: at least this many
SMALL_COPY_MIN_COUNT = 100  # small copies: at least this many

THRESHOLDS: dict[str, str] = {
    "GPU idle": f"idle over {IDLE_SHARE_MIN:.0%} of a rank's GPU span",
    "idle cause": f"one cause over {CAUSE_SHARE_MIN:.0%} of the span",
    "exposed communication": f"collectives not overlapped by compute over {EXPOSED_COMMUNICATION_SHARE_MIN:.0%} "
                             "of the span",
    "short kernels": f"over {SHORT_KERNEL_COUNT_SHARE_MIN:.0%} of at least {SHORT_KERNEL_MIN_COUNT} kernels shorter "
                     f"than {format_ns(launch_stats.SHORT_KERNEL_NS)}",
    "launch-bound layer": f"launch-bound gaps over {launch_stats.LAUNCH_BOUND_LAYER_SHARE:.0%} of the layer's "
                          "kernel time",
    "pageable copies": f"host-to-device copies from pageable memory of {format_bytes(PAGEABLE_MIN_BYTES)} or more",
    "synchronous copies": f"{SYNC_COPY_MIN_COUNT} or more blocking copies",
    "small copies": f"{SMALL_COPY_MIN_COUNT} or more copies under {format_bytes(copy_analysis.SMALL_COPY_BYTES)}",
    "straggler": f"a rank's step time over the median of the ranks by more than {ranks.STRAGGLER_MARGIN:.0%}",
    "uneven collectives": f"communication time spread between ranks over {ranks.UNEVEN_COLLECTIVE_SHARE:.0%} of "
                          "the longest span",
}
_CAUSE_ADVICE = {
    "outside steps": "the GPU waits between steps: load data in background workers (num_workers, "
                     "pin_memory, prefetch) and move logging / evaluation off the step path",
    "synchronisation": "the CPU waits for the GPU and then starts late: remove .item() / .cpu() / "
                       "torch.cuda.synchronize() from the loop, or defer them to the end of the step",
    "launch-bound": "the GPU waits for the CPU to launch: fuse small ops (torch.compile), use CUDA graphs, "
                    "or make the CPU side cheaper",
    "other": "work was launched in time but started late: look for waits on other streams or events",
}


@dataclass(frozen=True)
class TimeTables:
    run_id: str
    by_rank: pl.DataFrame  # breakdown.breakdown_by_rank
    by_step: pl.DataFrame  # breakdown.breakdown_by_step
    gaps: pl.DataFrame  # idle_causes.idle_gaps
    kernels: pl.DataFrame  # rank, step, name, layer, correlation, start_ns, end_ns
    launch: pl.DataFrame  # launch_stats.launch_summary
    copies: pl.DataFrame  # copies.copy_summary

    def span(self, rank: int) -> int:
        return int(self.by_rank.filter(pl.col("rank") == rank).get_column("span_ns").item())

    def span_text(self, rank: int) -> str:
        return f"rank {rank}'s GPU span ({format_ns(self.span(rank))})"


def _others(frame: pl.DataFrame, value: str, worst: int) -> str:
    rest = frame.filter(pl.col("rank") != worst)
    return ", ".join(f"rank {r}: {v:.1%}" for r, v in zip(rest.get_column("rank"), rest.get_column(value),
                                                            strict=True)) or "–"


def idle_findings(tables: TimeTables) -> list[Finding]:
    """The GPU idle finding, then one per idle cause over CAUSE_SHARE_MIN."""
    found: list[Finding] = []
    ranked = tables.by_rank.drop_nulls("idle_share").sort("idle_share", descending=True)
    if ranked.height and ranked.get_column("idle_share")[0] > IDLE_SHARE_MIN:
        row = ranked.row(0, named=True)
        found.append(Finding(
            key="idle", title=f"GPU idle {row['idle_share']:.0%} of its span on rank {row['rank']}",
            share=row["idle_share"], share_of=tables.span_text(row["rank"]), at_stake_ns=row["idle_ns"],
            url=view_href("/timeline", tables.run_id, rank=row["rank"]),
            advice="its causes are findings of their own; the timeline shows where the GPU lanes are empty",
            evidence={"span": format_ns(row["span_ns"]), "idle": format_ns(row["idle_ns"]),
                      "compute": format_ns(row["compute_ns"]), "communication": format_ns(row["communication_ns"]),
                      "memory": format_ns(row["memory_ns"]), "other ranks idle": _others(ranked, "idle_share",
                                                                                          row["rank"])}))
    if tables.gaps.height == 0:
        return found
    causes = tables.gaps.group_by("rank", "cause").agg(pl.col("gap_ns").sum().alias("idle_ns"),
                                                       pl.len().alias("gaps"))
    causes = causes.join(tables.by_rank.select("rank", "span_ns"), on="rank").with_columns(
        (pl.col("idle_ns") / pl.col("span_ns")).alias("share"))
    for cause in ("outside steps", "synchronisation", "launch-bound", "other"):
        chosen = causes.filter(pl.col("cause") == cause).sort("share", descending=True)
        if chosen.height == 0 or chosen.get_column("share")[0] <= CAUSE_SHARE_MIN:
            continue
        row = chosen.row(0, named=True)
        longest = tables.gaps.filter(pl.col("rank") == row["rank"], pl.col("cause") == cause).sort(
            "gap_ns", descending=True).row(0, named=True)
        found.append(Finding(
            key=f"idle:{cause}", title=f"GPU idle {format_ns(row['idle_ns'])} on rank {row['rank']}: {cause}",
            share=row["share"], share_of=tables.span_text(row["rank"]), at_stake_ns=row["idle_ns"],
            url=view_href("/timeline", tables.run_id, rank=row["rank"],
                          window=padded_window(longest["start_ns"], longest["end_ns"])),
            advice=_CAUSE_ADVICE[cause],
            evidence={"gaps": row["gaps"], "idle": format_ns(row["idle_ns"]),
                      "longest gap": format_ns(longest["gap_ns"]),
                      "other ranks": _others(chosen, "share", row["rank"])}))
    return found


def communication_findings(tables: TimeTables) -> list[Finding]:
    """Collectives not hidden behind compute, and uneven collective time between ranks."""
    found: list[Finding] = []
    exposed = tables.by_rank.with_columns((pl.col("communication_ns") / pl.col("span_ns")).alias("share")).sort(
        "share", descending=True)
    comm_names = tables.kernels.filter(pl.col("kind") == "communication").group_by("name").agg(
        (pl.col("end_ns") - pl.col("start_ns")).sum().alias("t")).sort("t", descending=True)
    selection = format_keys([kernel_key(name) for name in comm_names.get_column("name").head(5).to_list()])
    if exposed.height and exposed.get_column("share")[0] > EXPOSED_COMMUNICATION_SHARE_MIN:
        row = exposed.row(0, named=True)
        overlap = row["overlap_ns"] / row["communication_total_ns"] if row["communication_total_ns"] else 0.0
        top = comm_names.row(0, named=True) if comm_names.height else {"name": "–", "t": 0}
        found.append(Finding(
            key="communication:exposed",
            title=f"Communication not hidden behind compute: {format_ns(row['communication_ns'])} on rank "
                  f"{row['rank']}",
            share=row["share"], share_of=tables.span_text(row["rank"]), at_stake_ns=row["communication_ns"],
            url=view_href("/kernels", tables.run_id, rank=row["rank"], sel=selection),
            advice="overlap collectives with compute (DDP bucketing, FSDP prefetch, a separate stream) or send "
                   "less (gradient compression, larger buckets); long collectives often wait for a slower rank",
            evidence={"communication (all)": format_ns(row["communication_total_ns"]),
                      "overlapped with compute": f"{overlap:.0%}", "exposed": format_ns(row["communication_ns"]),
                      "top collective": f"{top['name']} ({format_ns(top['t'])}, all ranks)"}))
    spread = ranks.collective_spread(tables.by_rank)
    if spread is not None:
        longest = int(tables.by_rank.get_column("span_ns").max())  # type: ignore[arg-type]
        found.append(Finding(
            key="communication:uneven",
            title=f"Rank {spread['most_rank']} spends {format_ns(spread['spread_ns'])} more in collectives than "
                  f"rank {spread['least_rank']}",
            share=spread["spread_ns"] / longest, share_of=f"the longest GPU span ({format_ns(longest)})",
            at_stake_ns=spread["spread_ns"], url=view_href("/kernels", tables.run_id, sel=selection),
            advice="the rank with the most collective time mostly waits for the others: look for the slow rank's "
                   "extra work (stragglers) or an uneven split of data",
            evidence={f"rank {spread['most_rank']}": format_ns(spread["most_ns"]),
                      f"rank {spread['least_rank']}": format_ns(spread["least_ns"])}))
    return found


def launch_findings(tables: TimeTables) -> list[Finding]:
    """Many short kernels; layers whose kernels wait on their launches."""
    found: list[Finding] = []
    launch_bound = tables.gaps.filter(pl.col("cause") == "launch-bound").group_by("rank").agg(
        pl.col("gap_ns").sum().alias("waits"))
    short = tables.launch.filter(pl.col("kernels") >= SHORT_KERNEL_MIN_COUNT,
                                 pl.col("short_count_share") > SHORT_KERNEL_COUNT_SHARE_MIN).sort(
        "short_count_share", descending=True)
    if short.height:
        row = short.row(0, named=True)
        waits = launch_bound.filter(pl.col("rank") == row["rank"]).get_column("waits")
        at_stake = int(waits[0]) if waits.len() else 0
        found.append(Finding(
            key="launch:short-kernels",
            title=f"{row['short_count_share']:.0%} of kernels on rank {row['rank']} run under "
                  f"{format_ns(launch_stats.SHORT_KERNEL_NS)} but take {row['short_time_share']:.1%} of kernel time",
            share=at_stake / tables.span(row["rank"]), share_of=tables.span_text(row["rank"]), at_stake_ns=at_stake,
            url=view_href("/kernels", tables.run_id, rank=row["rank"]),
            advice="short kernels cost a launch each: fuse them (torch.compile), batch the work, or capture the "
                   "loop in a CUDA graph; at stake: the time the GPU waited on launches",
            evidence={"kernels": row["kernels"], "short kernels": row["short_kernels"],
                      "time in short kernels": format_ns(row["short_kernel_ns"]),
                      "median launch delay": format_ns(row["median_delay_ns"]),
                      "p95 launch delay": format_ns(row["p95_delay_ns"])}))
    layers = launch_stats.launch_bound_layers(tables.kernels, tables.gaps)
    total_span = int(tables.by_rank.get_column("span_ns").sum())
    for row in layers.head(3).iter_rows(named=True):
        found.append(Finding(
            key=f"launch:layer:{row['layer']}",
            title=f"Layer {row['layer']} is launch-bound: the GPU waited {format_ns(row['launch_bound_ns'])} "
                  f"for its launches",
            share=row["launch_bound_ns"] / total_span, share_of=f"the GPU span of all ranks ({format_ns(total_span)})",
            at_stake_ns=row["launch_bound_ns"], url=view_href("/layers", tables.run_id, layer=row["layer"]),
            advice="fuse this layer's small ops (torch.compile) or capture it in a CUDA graph",
            evidence={"kernel time": format_ns(row["kernel_ns"]), "kernels": row["kernels"],
                      "short kernels": row["short_kernels"]}))
    return found


def copy_findings(tables: TimeTables) -> list[Finding]:
    """Pageable host-to-device, synchronous and many small copies (worst rank of each)."""
    found: list[Finding] = []
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
        found.append(Finding(
            key=f"copies:{kind}",
            title=f"{title}: {row['copies']:,} copies, {format_bytes(row['bytes'])}, "
                  f"{format_ns(row['time_ns'])} on rank {row['rank']}",
            share=row["time_ns"] / tables.span(row["rank"]), share_of=tables.span_text(row["rank"]),
            at_stake_ns=row["time_ns"], advice=advice,
            url=view_href("/timeline", tables.run_id, rank=row["rank"],
                          window=padded_window(row["longest_start_ns"], row["longest_end_ns"])),
            evidence={"copies": row["copies"], "bytes": format_bytes(row["bytes"]),
                      "copy time": format_ns(row["time_ns"])}))
    return found


def straggler_findings(tables: TimeTables) -> list[Finding]:
    """The slowest rank against the median of the ranks, step by step, with the kernels that differ."""
    slow = ranks.step_stragglers(tables.by_step)
    if slow.height == 0:
        return []
    per_rank = slow.group_by("rank").agg(pl.col("excess_ns").sum(), pl.col("step").sort_by("excess_ns").last()
                                         .alias("worst_step"), pl.col("step").alias("steps")).sort(
        "excess_ns", descending=True)
    row = per_rank.row(0, named=True)
    worst = tables.by_step.filter(pl.col("rank") == row["rank"], pl.col("step") == row["worst_step"])
    window_start = int(tables.kernels.filter(pl.col("rank") == row["rank"], pl.col("step") == row["worst_step"])
                       .get_column("start_ns").min())  # type: ignore[arg-type]
    window = f"{window_start}-{window_start + int(worst.get_column('span_ns').item())}"
    differing = ranks.straggler_kernels(tables.kernels, row["rank"], row["steps"])
    evidence: dict[str, object] = {"slow steps": ", ".join(str(s) for s in sorted(row["steps"])),
                                   "time over the median": format_ns(row["excess_ns"])}
    for kernel in differing.iter_rows(named=True):
        evidence[f"+ {kernel['name'][:80]}"] = format_ns(kernel["difference_ns"])
    return [Finding(
        key="ranks:straggler",
        title=f"Rank {row['rank']} straggles: {format_ns(row['excess_ns'])} over the median step time",
        share=row["excess_ns"] / tables.span(row["rank"]), share_of=tables.span_text(row["rank"]),
        at_stake_ns=int(row["excess_ns"]), evidence=evidence,
        url=view_href("/timeline", tables.run_id, rank=row["rank"], window=window),
        advice="every other rank waits for this one at the next collective: balance its data, check its "
               "GPU (clocks, thermal) and its host (data loading, other processes)")]


def time_findings(tables: TimeTables) -> list[Finding]:
    return [*idle_findings(tables), *communication_findings(tables), *launch_findings(tables),
            *copy_findings(tables), *straggler_findings(tables)]
