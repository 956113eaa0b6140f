"""The temporary folder of an ingest child: `DATA/.tmp/child-<host>-<pid>/`, its TMPDIR.

Inside the data folder (the disk the server was given, not a small /tmp), named by its owner so the
parent can measure it against the child's disk budget and remove it whatever became of the child, and
so a server start can remove those of children that are gone. Light on purpose: the child sets its
TMPDIR from it before anything loads polars.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

TEMP_DIR = ".tmp"
_PREFIX = "child-"


def child_temp_dir(data_dir: Path | str, pid: int, host: str | None = None) -> Path:
    return Path(data_dir) / TEMP_DIR / f"{_PREFIX}{host or socket.gethostname()}-{pid}"


def remove_child_temp(data_dir: Path | str, pid: int) -> None:
    shutil.rmtree(child_temp_dir(data_dir, pid), ignore_errors=True)


def remove_stale_child_temps(data_dir: Path | str) -> int:
    """Remove the temporary folders of this host's ingest children that are gone; returns how many."""
    removed = 0
    prefix = f"{_PREFIX}{socket.gethostname()}-"
    try:
        entries = list(os.scandir(Path(data_dir) / TEMP_DIR))
    except OSError:
        return 0
    for entry in entries:
        pid_text = entry.name.removeprefix(prefix)
        if not entry.name.startswith(prefix) or not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
            continue  # alive
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed += 1
    return removed
