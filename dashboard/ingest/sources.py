"""A user's inputs as ingest reads them: never through a symbolic link, named after the first input.

A link could point anywhere the server can read (`notes.txt -> /etc/passwd`,
a linked folder holding a whole tree), and what lands in a run's `source/`
can be downloaded by every user of the server. So a link given as an input is
refused with one line, and a link inside an input folder is neither parsed
(see `collectors.registry._files_under`) nor copied (`store.files.copy_sources`);
the run lists each one as a warning.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from dashboard.collectors.base import IngestError
from dashboard.store import safe_name

_KNOWN_SUFFIXES = (".gz", ".json", ".trace", ".pt", ".sqlite", ".log", ".dot", ".txt", ".csv", ".ndjson", ".tar",
                    ".tgz", ".zip", ".pickle")


def symlinks_under(paths: Sequence[Path]) -> list[Path]:
    """Every symbolic link inside the input folders (not followed, so a linked folder's own links are not listed)."""
    links: list[Path] = []
    for path in paths:
        if path.is_symlink() or not path.is_dir():
            continue
        for folder, dirs, files in os.walk(path):  # followlinks=False: linked folders are not entered
            links.extend(Path(folder) / name for name in sorted(dirs + files) if os.path.islink(Path(folder) / name))
    return sorted(links)


def refuse_symlink_inputs(paths: Sequence[Path]) -> None:
    """A link given as an input is refused: ingest never reads through a link."""
    for path in paths:
        if path.is_symlink():
            raise IngestError(path, f"symbolic link (to {os.readlink(path)}); give the file or folder it "
                                    "points to instead")


def default_name(paths: Sequence[Path]) -> str:
    """A run name from the first input, without format suffixes."""
    if not paths:
        return "run"
    stem = Path(paths[0]).name
    while True:
        lowered = stem.lower()
        suffix = next((s for s in _KNOWN_SUFFIXES if lowered.endswith(s) and len(stem) > len(s)), None)
        if suffix is None:
            break
        stem = stem[: -len(suffix)]
    return safe_name(stem)
