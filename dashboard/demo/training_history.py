"""Earlier versions of the demo's training job, so /history shows a trend out of the box.

The demo's `demo-training` run is the job as it is now; these are the same job profiled twice before, each
slower in the kernels a team would have tuned since (the GEMMs, flash attention, the all-reduce). They are
ingested under the same run name, before it, so the series reads oldest (slowest) to newest, and /compare of
the newest against the one before shows what got faster.
"""

from __future__ import annotations

from pathlib import Path

from dashboard.demo import kineto_trace

# Oldest first: kernel name -> factor on its duration in that version.
VERSIONS: tuple[dict[str, float], ...] = (
    {kineto_trace.GEMM: 1.35, kineto_trace.GEMM_NT: 1.3, kineto_trace.FLASH_FWD: 1.6, kineto_trace.FLASH_BWD: 1.5,
     kineto_trace.NCCL: 1.25},
    {kineto_trace.GEMM: 1.12, kineto_trace.GEMM_NT: 1.1, kineto_trace.FLASH_FWD: 1.2, kineto_trace.FLASH_BWD: 1.15},
)


def write(folder: Path, version: int) -> list[Path]:
    """Two ranks of the training job as it ran in `version` (0 = the oldest), one trace per rank."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"tinygpt_v{version + 1}_rank{rank}.pt.trace.json.gz" for rank in range(2)]
    for rank, path in enumerate(paths):
        kineto_trace.write_trace(path, rank, slowdown=VERSIONS[version])
    return paths
