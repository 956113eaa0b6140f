"""Regular expressions compiled on first use.

The registry imports every collector to sniff a file, so a module-level
`re.compile` of a big pattern is paid by every ingest, whatever its format:
the DOT lexer's patterns took ~0.07 s (more on a busy machine) of each
`dashboard ingest` start-up (issue 19).
"""

from __future__ import annotations

import re
from typing import Any


class LazyPattern:
    """`re.compile(pattern, flags)` on the first attribute used (`finditer`, `match`, ...)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern, self._flags = pattern, flags
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(self._pattern, self._flags)
        return getattr(self._compiled, name)
