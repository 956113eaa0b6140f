"""Benchmark and check: our GPU time breakdown against Holistic Trace Analysis' temporal breakdown.

    python benchmarks/hta_breakdown.py ../shared/samples/kineto
    python benchmarks/hta_breakdown.py TRACE_DIR --venv /tmp/hta-venv

Groups the Kineto traces of a folder by job (files named `*rank-N*` together,
every other file alone), builds (once, cached) a venv with HTA in it (never a
dependency of the project), runs `TraceAnalysis(trace_dir=...)
.get_temporal_breakdown()` on each group, ingests the same files with our
collector and prints, per rank, idle / compute / non-compute shares of both,
the difference in percentage points and the wall time of each side. Exits 1
when a share differs by more than MAX_DIFFERENCE_PP.

HTA leaves out the last profiler step and GPU work whose launch is not in
the trace, and splits kernels by its own names; our side is what `report
--json` prints as `gpu_time_hta` (breakdown.hta_breakdown: the same events,
HTA's split), read through run_insights as the report reads it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HTA_REQUIREMENT = "HolisticTraceAnalysis==0.5.0"
MAX_DIFFERENCE_PP = 0.5
DEFAULT_VENV = Path(os.environ.get("DASHBOARD_HTA_VENV") or Path(tempfile.gettempdir()) / "dashboard-hta-venv")
# HTA's own numbers on the shared Kineto samples, as this script printed them from HolisticTraceAnalysis 0.5.0
# (job, rank) -> (kernel_time µs, idle, compute, non-compute shares): the CI-only test compares with these
# where HTA cannot be installed.
HTA_PRINTED: dict[tuple[str, int], tuple[float, float, float, float]] = {
    ("hta_trace_filter_sampled", 0): (600058.0, 0.5355782274380143, 0.17706954994350546, 0.2873522226184802),
    ("hta_trace_filter_sampled", 1): (600674.0, 0.5471703453120994, 0.22565984211069565, 0.22716981257720495),
    ("kineto_tb_plugin_resnet50_legacy_categories", 0): (830494.0, 0.3942990557427266, 0.593491343706276,
                                                         0.012209600550997358),
}
SHARES = ("idle", "compute", "non_compute")
HTA_SCRIPT = """
import json, sys, time
from hta.trace_analysis import TraceAnalysis
started = time.perf_counter()
frame = TraceAnalysis(trace_dir=sys.argv[1]).get_temporal_breakdown(visualize=False)
seconds = time.perf_counter() - started
rows = [{"rank": int(r["rank"]), "span_us": float(r["kernel_time(us)"]),
         **{share: float(r[f"{share}_time(us)"]) / float(r["kernel_time(us)"])
            for share in ("idle", "compute", "non_compute")}} for r in frame.to_dict(orient="records")]
print(json.dumps({"seconds": seconds, "ranks": rows}))
"""


class HtaUnavailable(RuntimeError):
    """HTA could not be installed in its own venv here (no index reachable, no wheel for this Python)."""


def hta_python(folder: Path = DEFAULT_VENV) -> Path:
    """The interpreter of a venv holding HTA, created on first use."""
    python = folder / "bin" / "python"
    marker = folder / ".hta-installed"
    if marker.exists() and python.exists():
        return python
    shutil.rmtree(folder, ignore_errors=True)
    venv.create(folder, with_pip=True)
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", HTA_REQUIREMENT],
                             capture_output=True, text=True, timeout=900)
    if install.returncode != 0:
        raise HtaUnavailable(f"pip install {HTA_REQUIREMENT} failed: {install.stderr.strip()[-400:]}")
    marker.write_text(HTA_REQUIREMENT)
    return python


def job_groups(folder: Path) -> dict[str, list[Path]]:
    """Traces of one job together: `x_rank-0.json.gz`, `x_rank-1.json.gz` -> `x`; other files alone."""
    groups: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*.json*")):
        match = re.match(r"(.*?)[_-]?rank[-_]?\d+", path.name)
        groups.setdefault(match.group(1) if match else path.name.split(".")[0], []).append(path)
    return groups


def hta_breakdown(python: Path, traces: list[Path], work: Path) -> dict:
    """HTA's shares per rank (and its wall seconds) for the traces of one job, in a folder of their own."""
    folder = work / "hta"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for trace in traces:
        shutil.copy(trace, folder / trace.name)
    done = subprocess.run([str(python), "-c", HTA_SCRIPT, str(folder)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"HTA failed on {folder}: {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def our_breakdown(traces: list[Path], work: Path) -> dict:
    """`report --json`'s gpu_time_hta per rank, and the wall seconds of ingest + report data."""
    from dashboard.cli.insights_report import report_data
    from dashboard.ingest.pipeline import ingest_paths
    from dashboard.store import RunStore

    started = time.perf_counter()
    store = RunStore(work / "data")
    run = store.open(ingest_paths(store, traces, name="hta-check"))
    rows = report_data(run)["gpu_time_hta"]
    seconds = time.perf_counter() - started
    ranks = [{"rank": row["rank"], "span_us": row["span_ns"] / 1000, "idle": row["idle_share"],
              "compute": row["compute_share"], "non_compute": row["non_compute_share"]} for row in rows]
    return {"seconds": seconds, "ranks": ranks}


def compare(folder: Path, python: Path) -> list[dict]:
    """One row per (job, rank): both sides' shares and the largest difference in percentage points."""
    rows = []
    for job, traces in job_groups(folder).items():
        with tempfile.TemporaryDirectory() as work:
            theirs = hta_breakdown(python, traces, Path(work))
            ours = our_breakdown(traces, Path(work))
        by_rank = {row["rank"]: row for row in ours["ranks"]}
        for hta_row in theirs["ranks"]:
            our_row = by_rank.get(hta_row["rank"], {})
            differences = {share: abs(100 * (our_row.get(share, float("nan")) - hta_row[share])) for share in SHARES}
            rows.append({"job": job, "rank": hta_row["rank"], "hta": hta_row, "ours": our_row,
                         "max_difference_pp": max(differences.values()), "hta_seconds": theirs["seconds"],
                         "our_seconds": ours["seconds"]})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="folder of Kineto traces (e.g. ../shared/samples/kineto)")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="where HTA's own venv lives (made once)")
    args = parser.parse_args()
    try:
        python = hta_python(args.venv)
    except (HtaUnavailable, subprocess.TimeoutExpired, OSError) as exc:
        print(f"HTA unavailable: {exc}", file=sys.stderr)
        return 2
    rows = compare(args.folder, python)
    print(f"{'job':<46} {'rank':>4}  {'idle HTA/ours':>15}  {'compute HTA/ours':>17}  {'non-compute HTA/ours':>21}"
          f"  {'max Δ pp':>8}  {'HTA s':>6}  {'ours s':>6}")
    for row in rows:
        hta, ours = row["hta"], row["ours"]
        cells = [f"{100 * hta[s]:6.2f}/{100 * ours.get(s, float('nan')):6.2f}" for s in SHARES]
        print(f"{row['job'][:46]:<46} {row['rank']:>4}  {cells[0]:>15}  {cells[1]:>17}  {cells[2]:>21}  "
              f"{row['max_difference_pp']:8.3f}  {row['hta_seconds']:6.2f}  {row['our_seconds']:6.2f}")
    return 0 if all(row["max_difference_pp"] <= MAX_DIFFERENCE_PP for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
