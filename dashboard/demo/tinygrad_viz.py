"""The demo's tinygrad run: VIZ files written by real tinygrad when it is installed, else a generated pair.

With tinygrad importable by this interpreter (never imported here: it runs in a child process),
`DEMO_PROGRAM` runs under `VIZ=-1` (record every rewrite and the profile, write both files at exit,
start no server), `DEV=CPU` (naming the device skips tinygrad's probing of every backend, seconds
on a machine without GPUs) and `HCQ2=1` (CPU kernels get real start and end times; tinygrad's CPU
device needs clang on PATH). It costs about 1.5-3 s of CPU; the files are kept for the rest of the
process, so seeding several demo folders (the tests do) runs it once. When tinygrad is missing,
fails or takes longer than REAL_TIMEOUT_S, `tinygrad_generated.demo_pair` writes a pair of the same
structure (three kernels, one with a symbolic size, run eagerly and as a graph).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from dashboard.demo.tinygrad_generated import demo_pair

log = logging.getLogger(__name__)

REAL_TIMEOUT_S = 60.0
# A matmul, relu and row sum: a schedule, a few kernels compiled and run, their buffers allocated and freed.
DEMO_PROGRAM = """
from tinygrad import Tensor
Tensor.manual_seed(0)
x, w = Tensor.randn(8, 16).realize(), Tensor.randn(16, 16).realize()
print(((x @ w).relu() + 1).sum(axis=1).tolist()[:2])
"""


def tinygrad_installed() -> bool:
    """Whether this interpreter can import tinygrad (found, not imported)."""
    return importlib.util.find_spec("tinygrad") is not None


def run_tinygrad(program: str, folder: Path, env: dict[str, str] | None = None,
                 timeout: float = REAL_TIMEOUT_S, keep_names: bool = False) -> tuple[Path, Path]:
    """Run `program` with real tinygrad and `VIZ=-1` in a child process; returns (rewrites.pkl, profile.pkl)
    copied into `folder` (named as tinygrad named them, `rewrites.pkl.<user>`, with `keep_names`).
    Raises CalledProcessError / TimeoutExpired / FileNotFoundError when it fails."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tinygrad-viz-") as scratch:
        settings = {**os.environ, "VIZ": "-1", "DEBUG": "0", "TMPDIR": scratch, **(env or {})}
        subprocess.run([sys.executable, "-c", program], env=settings, timeout=timeout, check=True,
                       capture_output=True, cwd=scratch)
        written = []
        for stem in ("rewrites.pkl", "profile.pkl"):
            found = sorted(Path(scratch).glob(f"{stem}*"))  # `<stem>.<user>`: tinygrad appends the user name
            if not found:
                raise FileNotFoundError(f"tinygrad wrote no {stem}")
            target = folder / (found[0].name if keep_names else stem)
            target.write_bytes(found[0].read_bytes())
            written.append(target)
    return written[0], written[1]


@functools.cache
def _real_demo_bytes() -> tuple[bytes, bytes] | None:
    if not tinygrad_installed():
        return None
    with tempfile.TemporaryDirectory(prefix="tinygrad-demo-") as folder:
        try:
            rewrites, profile = run_tinygrad(DEMO_PROGRAM, Path(folder), {"DEV": "CPU", "HCQ2": "1"})
        except (subprocess.SubprocessError, OSError) as exc:
            log.warning("tinygrad is installed but its demo run failed (%s); using a generated pair", exc)
            return None
        return rewrites.read_bytes(), profile.read_bytes()


def write(folder: Path) -> list[Path]:
    """rewrites.pkl and profile.pkl under `folder`: real tinygrad's when it runs here, else generated."""
    folder.mkdir(parents=True, exist_ok=True)
    files = _real_demo_bytes() or demo_pair().files()
    paths = [folder / "rewrites.pkl", folder / "profile.pkl"]
    for path, data in zip(paths, files, strict=True):
        path.write_bytes(data)
    return paths
