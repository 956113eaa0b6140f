"""Qualified module names (`Model.blocks.0.attn`) for the layer ranges of a live capture."""

from __future__ import annotations

import weakref
from collections import Counter
from typing import Any


class ModuleNames:
    """Qualified names (`Model.blocks.0.attn`) for modules, found once per root."""

    def __init__(self) -> None:
        self._names: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._roots: Counter[str] = Counter()

    def name_of(self, module: Any, parent: Any | None) -> str:
        name = self._names.get(module)
        if name is not None:
            return name
        parent_name = self._names.get(parent) if parent is not None else None
        if parent_name is not None:
            # Created after its parent was walked (or not a registered child).
            name = f"{parent_name}.{type(module).__name__}"
        else:
            base = type(module).__name__
            self._roots[base] += 1
            name = base if self._roots[base] == 1 else f"{base}#{self._roots[base]}"
        self._names[module] = name
        for child_name, child in module.named_modules():
            if child_name and child not in self._names:
                self._names[child] = f"{name}.{child_name}"
        return name
