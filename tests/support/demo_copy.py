"""A module's own copy of the session's seeded demo (tests/conftest.py `demo_template`)."""

from __future__ import annotations

import shutil
from pathlib import Path


def demo_copy(template: Path, target: Path) -> Path:
    """`target` (created) holding the demo's runs and sources as seeded in `template`; returns `target`."""
    shutil.copytree(template, target, symlinks=True)
    return target
