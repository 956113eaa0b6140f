"""A user's inputs as a run keeps them: copied byte for byte, never through a symbolic link.

A link could point anywhere the server can read (`notes.txt -> /etc/passwd`,
a linked folder holding a whole tree), and what lands in a run's `source/`
can be downloaded by every user of the server. So a link given as an input is
refused with one line, and a link inside an input folder is neither parsed
(see `collectors.registry._files_under`) nor copied; the store reports each
one as a warning of the run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from dashboard.collectors.base import IngestError


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


def _skip_symlinks(folder: str, names: list[str]) -> list[str]:
    return [name for name in names if os.path.islink(os.path.join(folder, name))]


def copy_sources(paths: Sequence[Path], target: Path) -> list[str]:
    """Copy every input byte for byte under `target`, keeping folder structure; links are not copied."""
    refuse_symlink_inputs(paths)
    target.mkdir(parents=True)
    copied: list[str] = []
    for index, path in enumerate(paths):
        destination = target / path.name
        if destination.exists():  # two inputs with one file name
            destination = target / f"{index}" / path.name
            destination.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.copytree(path, destination, symlinks=False, ignore=_skip_symlinks)
        else:
            shutil.copyfile(path, destination)
        copied.append(str(destination.relative_to(target)))
    return copied
