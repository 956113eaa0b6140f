"""Frames an analysis keeps beside a run (`<run>/derived/<name>/<part>.arrow`), so every process serving
the run reads what one of them (or the ingest) computed instead of computing it again.

A team server's workers are separate processes: each used to compute a new run's GPU-time tables on its
own first visit (seconds for a million kernels, on every worker at once when a new run became everyone's
default page). A set is written whole into a temporary folder and renamed into place, so a reader sees all
of it or nothing; when two processes race, the first rename wins and the other's copy is dropped. A set
that cannot be read (a damaged file, another version's parts) counts as absent: the caller computes it.
Writing is best effort: a read-only or full data folder only means the next process computes it too.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path

import polars as pl

DERIVED_DIR = "derived"
_COMPLETE = "complete"  # written last: a set without it was cut short
log = logging.getLogger(__name__)


def read_derived(run_path: Path, name: str) -> dict[str, pl.DataFrame] | None:
    """The frames kept under `name` for the run at `run_path`, or None when there are none (or unreadable)."""
    folder = run_path / DERIVED_DIR / name
    if not (folder / _COMPLETE).is_file():
        return None
    try:
        return {path.stem: pl.read_ipc(path) for path in sorted(folder.glob("*.arrow"))}
    except (OSError, pl.exceptions.PolarsError) as error:
        log.warning("derived tables %s of %s could not be read (%s): computing them again", name, run_path.name,
                    error)
        return None


def write_derived(run_path: Path, name: str, frames: Mapping[str, pl.DataFrame]) -> bool:
    """Keep `frames` under `name` beside the run; False when they were not kept (another process's are there,
    or the folder could not be written)."""
    parent = run_path / DERIVED_DIR
    target = parent / name
    if target.exists():
        return False
    temporary = parent / f".{name}-{uuid.uuid4().hex}.tmp"
    try:
        # Never `parents=True`: a run deleted meanwhile must not come back as a folder holding only these.
        parent.mkdir(exist_ok=True)
        temporary.mkdir()
        for part, frame in frames.items():
            frame.write_ipc(temporary / f"{part}.arrow", compression="lz4")
        (temporary / _COMPLETE).write_text("")
        os.rename(temporary, target)  # fails onto a folder another process has put there: theirs stays
        return True
    except OSError as error:
        if not target.exists():
            log.warning("derived tables %s of %s were not kept: %s", name, run_path.name, error)
        return False
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
