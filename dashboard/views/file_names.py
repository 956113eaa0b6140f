"""File names made from what users named (runs, groups, kernels): safe on every file system and in a
Content-Disposition header."""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_stem(name: str) -> str:
    """`name` with every character outside letters, digits, `.`, `_`, `-` turned into `-`, at most 120 long."""
    return _UNSAFE.sub("-", name).strip("-.")[:120] or "chart"
