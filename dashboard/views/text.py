"""Small wording helpers shared by the views and pages: counts with the right plural."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 rank`, `2 ranks`, `1,605 launches` (`plural` for nouns that do not take an `s`)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
