"""Archives (.tar, .tar.gz / .tgz, .zip, told by their bytes) opened like folders, safely.

How a job's traces are shared is a tarball of per-rank files. Ingest unpacks
each archive it is given, or finds in a given folder, into the staging area and
parses the unpacked folder; the run's `source/` keeps the archive itself, byte
for byte, not its members.

Safe extraction: a member with an absolute path or a `..` component refuses the
archive (it would write outside the folder); links, devices and pipes are left
out and counted in a warning (a link could point anywhere the server can read);
the member count and the unpacked bytes are bounded (MAX_MEMBERS, MAX_BYTES),
counted as bytes are written, never taken from the headers, so a decompression
bomb stops with one line naming the archive and the limit. An archive inside an
archive is kept as a file, not opened.
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import IO, Any

from dashboard.collectors.archive_kind import archive_kind
from dashboard.collectors.base import IngestError, ProgressFn, no_progress

MAX_MEMBERS = 100_000
MAX_BYTES = 64 << 30  # unpacked; an upload is limited far below this, a local tarball of traces rarely above
UNPACKED_DIR = ".unpacked"  # inside the staging folder: removed before the run is published
_CHUNK = 1 << 20


@dataclass
class Unpacked:
    """The inputs to parse (archives replaced by their unpacked folders) and what unpacking found."""

    inputs: list[Path]
    folders: dict[Path, Path] = field(default_factory=dict)  # unpacked folder -> its archive
    warnings: list[str] = field(default_factory=list)

    def name(self, text: str) -> str:
        """`text` with each unpacked folder named as its archive (`job.tar.gz/rank0.json`)."""
        for folder, archive in self.folders.items():
            text = text.replace(str(folder), str(archive))
        return text

    def is_member(self, path: Path) -> bool:
        return any(path.is_relative_to(folder) for folder in self.folders)


@dataclass
class Limits:
    members: int = MAX_MEMBERS
    bytes: int = MAX_BYTES


class _Budget:
    def __init__(self, archive: Path, limits: Limits) -> None:
        self.archive, self.limits = archive, limits
        self.members = 0
        self.bytes = 0

    def member(self) -> None:
        self.members += 1
        if self.members > self.limits.members:
            raise IngestError(self.archive, f"holds more than {self.limits.members:,} files: not unpacked "
                                            "(an archive bomb, or split it into smaller archives)")

    def write(self, source: IO[bytes], target: Path) -> None:
        with open(target, "xb") as out:
            while chunk := source.read(_CHUNK):
                self.bytes += len(chunk)
                if self.bytes > self.limits.bytes:
                    raise IngestError(self.archive, f"unpacks to more than {_size(self.limits.bytes)}: not "
                                                    "unpacked (a decompression bomb, or unpack it yourself)")
                out.write(chunk)


def _size(count: int) -> str:
    return f"{count / (1 << 30):g} GiB" if count >= 1 << 30 else f"{count / (1 << 20):g} MiB"


def _safe_parts(archive: Path, name: str) -> tuple[str, ...]:
    """The member's path parts below the unpack folder; refuses absolute paths and `..`."""
    posix = PurePosixPath(name.replace("\\", "/"))
    if posix.is_absolute() or PureWindowsPath(name).drive:
        raise IngestError(archive, f"member {name[:200]!r} has an absolute path: the archive is refused")
    parts = tuple(part for part in posix.parts if part not in ("", "."))
    if ".." in parts:
        raise IngestError(archive, f"member {name[:200]!r} climbs out of the archive (`..`): the archive is refused")
    return parts


def _file_parts(archive: Path, root: Path, budget: _Budget, name: str, is_dir: bool) -> tuple[str, ...] | None:
    """A member counted against the budget and its safe path parts; None for a folder (made here)."""
    budget.member()
    parts = _safe_parts(archive, name)
    if not is_dir:
        return parts
    if parts:
        root.joinpath(*parts).mkdir(parents=True, exist_ok=True)
    return None


def _target(root: Path, parts: tuple[str, ...]) -> Path | None:
    if not parts:
        return None
    target = root.joinpath(*parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def _tar_members(archive: Path) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    with tarfile.open(archive, "r:*") as tar:
        while (member := tar.next()) is not None:
            yield tar, member


def _unpack_tar(archive: Path, root: Path, budget: _Budget, skipped: list[str]) -> None:
    for tar, member in _tar_members(archive):
        parts = _file_parts(archive, root, budget, member.name, member.isdir())
        if parts is None:
            continue
        if not member.isreg():
            skipped.append(member.name)
            continue
        target = _target(root, parts)
        source = tar.extractfile(member)
        if target is None or source is None or target.exists():
            continue  # a member twice: the first is kept
        budget.write(source, target)


def _unpack_zip(archive: Path, root: Path, budget: _Budget, skipped: list[str]) -> None:
    with zipfile.ZipFile(archive) as bundle:
        for info in bundle.infolist():
            parts = _file_parts(archive, root, budget, info.filename, info.is_dir())
            if parts is None:
                continue
            kind = stat.S_IFMT(info.external_attr >> 16)  # 0 where the zip's writer gave no Unix mode
            if kind and kind != stat.S_IFREG:  # a link (S_IFLNK), a device...
                skipped.append(info.filename)
                continue
            if info.flag_bits & 0x1:
                raise IngestError(archive, f"member {info.filename[:200]!r} is encrypted: unpack the archive "
                                           "with its password first")
            target = _target(root, parts)
            if target is None or target.exists():
                continue
            with bundle.open(info) as source:
                budget.write(source, target)


def unpack_archive(archive: Path, root: Path, limits: Limits | None = None) -> list[str]:
    """Unpack one archive into `root` (created); the warnings it gives."""
    kind = archive_kind(archive)
    if kind is None:
        raise IngestError(archive, "not an archive")
    root.mkdir(parents=True)
    budget, skipped = _Budget(archive, limits or Limits()), []
    try:
        (_unpack_zip if kind == "zip" else _unpack_tar)(archive, root, budget, skipped)
    except IngestError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError,
            NotImplementedError) as exc:
        what = "truncated" if isinstance(exc, EOFError) or "unexpected end" in str(exc).lower() else "damaged"
        raise IngestError(archive, f"a {what} {kind} archive: it cannot be unpacked") from None
    warnings = []
    if skipped:
        shown = ", ".join(repr(name[:80]) for name in skipped[:3])
        warnings.append(f"{archive}: {len(skipped):,} links or special files left out ({shown}"
                        f"{', ...' if len(skipped) > 3 else ''}): an archive's links are never followed")
    if not budget.members or not any(root.rglob("*")):
        raise IngestError(archive, f"an empty {kind} archive")
    return warnings


def _archives_in(folder: Path) -> list[Path]:
    # As the registry walks folders: no links, no hidden files.
    found = []
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(Path(current) / d))
        for name in sorted(files):
            path = Path(current) / name
            if not name.startswith(".") and not path.is_symlink() and archive_kind(path) is not None:
                found.append(path)
    return found


def unpack_inputs(inputs: Sequence[Path], into: Path, limits: Limits | None = None,
                  progress: ProgressFn = no_progress) -> Unpacked:
    """Each archive given, or found in a given folder, unpacked under `into` (one folder per archive)."""
    result = Unpacked(inputs=[])
    archives: list[Path] = []
    for path in inputs:
        if path.is_file() and archive_kind(path) is not None:
            archives.append(path)
            continue
        result.inputs.append(path)
        if path.is_dir():
            archives += _archives_in(path)
    for index, archive in enumerate(archives):
        progress(None, f"unpacking {archive.name}")
        root = into / f"{index}" / archive.name
        result.warnings += unpack_archive(archive, root, limits)
        result.folders[root] = archive
        result.inputs.append(root)
        nested = _archives_in(root)
        if nested:
            result.warnings.append(f"{archive}: {len(nested)} archive{'s' if len(nested) > 1 else ''} inside it "
                                   f"kept as files, not opened ({nested[0].name}{', ...' if len(nested) > 1 else ''})")
    return result


def named_in(value: Any, unpacked: Unpacked) -> Any:
    """Metadata with each unpacked path named as its archive's member (`job.tar.gz/rank0.json`)."""
    if not unpacked.folders:
        return value
    if isinstance(value, str):
        return unpacked.name(value)
    if isinstance(value, dict):
        return {key: named_in(item, unpacked) for key, item in value.items()}
    if isinstance(value, list):
        return [named_in(item, unpacked) for item in value]
    return value


def remove_unpacked(into: Path) -> None:
    shutil.rmtree(into, ignore_errors=True)
