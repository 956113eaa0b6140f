"""One parser per URL key, shared by every page and the PNG export.

A parser never raises: a missing or malformed value gives the key's default,
so a hand-edited or stale link still opens a page. Formatting is the inverse
(`parse(format(v)) == v` for every value a parser can return). What depends on
the run (does rank 3 exist?) is checked by `resolve_rank` once the run is open.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from dashboard.analysis.kernel_keys import SEPARATOR

T = TypeVar("T")
ALL_RANKS = "all"
TOP_RANGE = (1, 200)  # bars a chart may be asked for: more are unreadable, fewer is nothing


@dataclass(frozen=True)
class Param(Generic[T]):
    """A URL key: its name, how its text becomes a value, and back."""

    key: str
    parse: Callable[[str | None], T]
    format: Callable[[T], str]


def parse_keys(value: str | None) -> list[str]:
    if not value:
        return []
    return [key for key in value.split(SEPARATOR) if len(key) == 8 and all(c in "0123456789abcdef" for c in key)]


def format_window(start_ns: int, end_ns: int) -> str:
    return f"{int(start_ns)}-{int(end_ns)}"


def parse_window(value: str | None) -> tuple[int, int] | None:
    """(start_ns, end_ns) from `window=a-b`; None when absent or malformed."""
    if not value:
        return None
    start, _, end = value.partition("-")
    try:
        window = int(start), int(end)
    except ValueError:
        return None
    return window if window[0] < window[1] else None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def parse_int(value: Any, default: int | None = None, low: int | None = None, high: int | None = None) -> int | None:
    """An integer, clamped into [low, high]; `default` when absent or not an integer."""
    text = _text(value)
    try:
        number = int(text) if text is not None else None
    except ValueError:
        number = None
    if number is None:
        return default
    if low is not None:
        number = max(number, low)
    if high is not None:
        number = min(number, high)
    return number


def rank(key: str = "rank") -> Param[int | None]:
    """`rank=3`; absent, "all" or malformed: None (all ranks, or the page's own default)."""
    return Param(key, lambda value: parse_int(None if _text(value) == ALL_RANKS else value, low=0),
                 lambda value: "" if value is None else str(value))


def resolve_rank(value: int | None, ranks: Collection[int]) -> int | None:
    """The rank asked for when the run has it, else None."""
    return value if value is not None and value in ranks else None


def parse_rank(value: Any, ranks: Collection[int]) -> int | None:
    """The rank a rank control or URL value names when the run has it, else None (= all ranks)."""
    return resolve_rank(rank().parse(None if value is None else str(value)), ranks)


# Above this many ranks a page that draws every event (/timeline) opens on one rank unless told otherwise:
# hundreds of ranks' lanes are neither legible nor quick to draw.
MANY_RANKS = 8


def initial_rank(value: Any, ranks: Collection[int]) -> int | None:
    """parse_rank, except that with no rank asked for (None) and more than MANY_RANKS ranks, the first rank."""
    if value is None and len(ranks) > MANY_RANKS:
        return min(ranks)
    return parse_rank(value, ranks)


def window(key: str = "window") -> Param[tuple[int, int] | None]:
    """`window=<start_ns>-<end_ns>` on the run's clock; start before end."""
    return Param(key, lambda value: parse_window(_text(value)),
                 lambda value: "" if value is None else format_window(*value))


def keys(key: str = "sel") -> Param[tuple[str, ...]]:
    """Selected kernels as 8-hex-digit keys (`analysis.kernel_keys.kernel_key`), in order, no repeats."""
    return Param(key, lambda value: tuple(dict.fromkeys(parse_keys(_text(value)))), SEPARATOR.join)


def top(default: int = 20, key: str = "top") -> Param[int]:
    """How many bars: an integer clamped into TOP_RANGE."""
    return Param(key, lambda value: parse_int(value, default, *TOP_RANGE) or default, str)


def number(key: str, default: int | None = None, low: int | None = None,
           high: int | None = None) -> Param[int | None]:
    """Any other integer key (an op index, a step, a time), clamped where the page says."""
    return Param(key, lambda value: parse_int(value, default, low, high),
                 lambda value: "" if value is None else str(value))


def choice(key: str, choices: Collection[str], default: str) -> Param[str]:
    """One of a fixed set of words (`group=op`); anything else is the default."""
    return Param(key, lambda value: value if (value := _text(value)) in choices else default, str)


def flag(key: str) -> Param[bool]:
    """`key=1` for on; absent or anything else is off."""
    return Param(key, lambda value: _text(value) == "1", lambda value: "1" if value else "")


def text(key: str, limit: int = 512) -> Param[str | None]:
    """Free text (a run id, a layer name, a compile hash), bounded so a URL cannot carry megabytes."""
    return Param(key, lambda value: value[:limit] if (value := _text(value)) else None,
                 lambda value: value or "")


def int_range(key: str) -> Param[tuple[int, int] | None]:
    """`ops=12-80`: an inclusive index range, low before high; None when absent or malformed."""
    def parse(value: str | None) -> tuple[int, int] | None:
        low, dash, high = (_text(value) or "").partition("-")
        try:
            span = int(low), int(high)
        except ValueError:
            return None
        return span if dash and 0 <= span[0] <= span[1] else None
    return Param(key, parse, lambda value: "" if value is None else f"{value[0]}-{value[1]}")


def tagged_index(key: str, tags: Collection[str]) -> Param[tuple[str, int] | None]:
    """`buffer=SMEM-3`: one of a fixed set of words (any case) and a non-negative index; None otherwise."""
    def parse(value: str | None) -> tuple[str, int] | None:
        tag, dash, index = (_text(value) or "").partition("-")
        tag = tag.upper()
        return (tag, int(index)) if dash and tag in tags and index.isdigit() else None
    return Param(key, parse, lambda value: "" if value is None else f"{value[0]}-{value[1]}")


def int_or_text(key: str, limit: int = 512) -> Param[int | str | None]:
    """`op=61` (an integer) or `op=op_op_12345` (a name, bounded like `text`); None when absent."""
    def parse(value: str | None) -> int | str | None:
        text = _text(value)
        if text is None:
            return None
        return int(text) if text.lstrip("-").isdigit() else text[:limit]
    return Param(key, parse, lambda value: "" if value is None else str(value))


def names(key: str, limit: int = 512) -> Param[tuple[str, ...]]:
    """`optype=MatmulOp,LinearOp`: comma-separated words, stripped, in order, no repeats, bounded like `text`."""
    def parse(value: str | None) -> tuple[str, ...]:
        return tuple(dict.fromkeys(item.strip()[:limit] for item in (_text(value) or "").split(",")[:limit]
                                   if item.strip()))
    return Param(key, parse, ",".join)


def rank_or_all(key: str = "rank") -> Param[int | str | None]:
    """`rank=3` or `rank=all`, told apart from no rank at all (None), for a page whose default rank depends
    on the run (/timeline: `initial_rank`). Malformed is ALL_RANKS, as `parse_rank` reads it."""
    def parse(value: str | None) -> int | str | None:
        text = _text(value)
        if text is None:
            return None
        number = parse_int(text, low=0)
        return ALL_RANKS if number is None else number
    return Param(key, parse, lambda value: "" if value is None else str(value))
