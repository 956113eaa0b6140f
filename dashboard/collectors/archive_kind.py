"""Which archive a file is, by its bytes (never its name): zip, tar, or a gzip-compressed tar.

The registry sets archives aside (they are not a format any collector reads); `ingest.archives` opens
them like folders before the registry looks, and keeps the archive itself as the run's source.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from dashboard.collectors.base import GZIP_MAGIC

_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header, or the end record of an empty zip
_TAR_MAGIC_AT, _TAR_MAGICS = 257, (b"ustar\x00", b"ustar ")  # POSIX ustar / pax, and GNU tar


def _is_tar_header(block: bytes) -> bool:
    return block[_TAR_MAGIC_AT:_TAR_MAGIC_AT + 6] in _TAR_MAGICS


def archive_kind(path: Path) -> str | None:
    """"zip", "tar", "tar.gz" for an archive, None for anything else (a gzip of one file included)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64 * 1024)
    except OSError:
        return None
    if head.startswith(_ZIP_MAGICS):
        return "zip"
    if _is_tar_header(head[:512]):
        return "tar"
    if head.startswith(GZIP_MAGIC):
        try:
            inner = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 512)
        except zlib.error:
            return None
        return "tar.gz" if _is_tar_header(inner) else None
    return None
