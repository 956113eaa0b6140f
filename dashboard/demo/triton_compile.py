"""Demo compiler run: Triton's own pass dumps when Triton is installed, else a small generated log.

With Triton importable, `triton_kernels_src.py` is copied into the demo folder
and compiled there in a child Python under `MLIR_ENABLE_DUMP=1` (no GPU: an
explicit GPUTarget), its stderr being the log. Without Triton (or when that
fails), `generated_log` writes a dump log of the same shape for add_kernel:
two compiles (BLOCK 1024 and 2048), TTIR -> TTGIR -> LLVM dialect passes,
unchanged passes, a SoftwarePipeliner snapshot and the shared-memory plan.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dashboard.demo.triton_ir_text import generated_log

log = logging.getLogger("dashboard.demo")

KERNELS = "demo_kernels.py"
TIMEOUT_S = 300


def _compile_with_triton(folder: Path) -> Path | None:
    """Compile the demo kernels with the installed Triton; the log, or None when that is not possible."""
    if os.environ.get("DASHBOARD_DEMO_TRITON", "1") in ("0", "false") or importlib.util.find_spec("triton") is None:
        return None
    dump = folder / "triton_mlir_dump.txt"
    with tempfile.TemporaryDirectory() as cache, open(dump, "wb") as stderr:
        env = {**os.environ, "MLIR_ENABLE_DUMP": "1", "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": cache}
        try:
            done = subprocess.run([sys.executable, KERNELS], cwd=folder, env=env, stdout=subprocess.DEVNULL,
                                  stderr=stderr, timeout=TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("demo: compiling the Triton kernels failed (%s); using a generated log", exc)
            return None
    if done.returncode != 0 or dump.stat().st_size == 0:
        log.warning("demo: compiling the Triton kernels failed (exit %s); using a generated log", done.returncode)
        return None
    return dump


def write(folder: Path) -> list[Path]:
    """Write the demo's compiler output under `folder`; the paths to ingest."""
    folder.mkdir(parents=True, exist_ok=True)
    kernels = folder / KERNELS
    shutil.copyfile(Path(__file__).with_name("triton_kernels_src.py"), kernels)
    dump = _compile_with_triton(folder)
    if dump is None:
        dump = folder / "triton_mlir_dump.txt"
        dump.write_text(generated_log(kernels))
    return [dump, kernels]
