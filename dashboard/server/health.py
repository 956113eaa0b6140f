"""What `/health` answers, in one place: the app's route and the gunicorn worker's own loop say the same.

Cheap on purpose (a load balancer asks every few seconds, and the worker's loop answers it between
accepting connections): the run count is the number of run folders holding a `run.json`, nothing is
opened or parsed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dashboard import __version__


def run_count(data_dir: Path) -> int:
    runs = data_dir / "runs"
    try:
        entries = list(os.scandir(runs))
    except OSError:
        return 0
    return sum(1 for entry in entries
               if not entry.name.startswith(".") and os.path.isfile(os.path.join(entry.path, "run.json")))


def health(data_dir: Path) -> dict[str, Any]:
    """status, version, the run count and the answering process (which worker, on a multi-worker server)."""
    return {"status": "ok", "version": __version__, "runs": run_count(data_dir), "pid": os.getpid()}
