"""Where a benchmark puts what it generates: the folder the user named (kept afterwards), else a temporary one."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def work_folder(kept: Path | None) -> Iterator[Path]:
    """`kept` when given (its contents stay, so a later run can reuse them), else a temporary folder removed
    on exit."""
    if kept is not None:
        kept.mkdir(parents=True, exist_ok=True)
        yield kept
        return
    with tempfile.TemporaryDirectory(prefix="bench-") as temporary:
        yield Path(temporary)
