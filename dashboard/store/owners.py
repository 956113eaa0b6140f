"""Which process owns a piece of work on disk, and whether that process is gone.

A staging folder, an ingest job or a child ingest records the pid and host of
the process doing it. Only a process on this host can be checked: another
host's owner is never declared gone (the caller falls back to an age rule).
A pid that was reused by an unrelated process reads as alive, which errs on the
side of keeping data.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any


def current_owner() -> dict[str, Any]:
    """This process, as recorded next to the work it does."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def owner_is_gone(owner: dict[str, Any] | None) -> bool:
    """True only when `owner` is a process on this host that no longer exists."""
    if not isinstance(owner, dict):
        return False
    pid, host = owner.get("pid"), owner.get("host")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, owned by another user
    return False


def read_owner(marker: Path) -> dict[str, Any] | None:
    """The owner written in a marker file, or None when there is none (or it is unreadable)."""
    try:
        owner = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) else None


PART_SUFFIX = ".part"


def write_owner(marker: Path) -> None:
    """Record this process as the owner of the work `marker` sits beside.

    Written whole or not at all: the record goes to `<marker>.<pid>.part` and is renamed into place, so a
    process killed mid-write (an ingest child stopped at its budget) leaves no empty marker that nobody
    could attribute, only a part file whose name says whose it is (`partial_marker_is_orphaned`). A failed
    write (a full disk) leaves neither.
    """
    part = marker.with_name(f"{marker.name}.{os.getpid()}{PART_SUFFIX}")
    try:
        part.write_text(json.dumps(current_owner()), encoding="utf-8")
        os.replace(part, marker)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def partial_marker_is_orphaned(path: Path) -> bool:
    """Whether `path` is a `write_owner` part file whose writer, a process of this host, is gone."""
    stem, _, pid = path.name.removesuffix(PART_SUFFIX).rpartition(".")
    return (path.name.endswith(PART_SUFFIX) and bool(stem) and pid.isdigit()
            and owner_is_gone({"pid": int(pid), "host": socket.gethostname()}))
