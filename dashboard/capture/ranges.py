"""Host-side ranges (modules, passes, user marks) on CUPTI's clock.

Each range records the thread that opened it (OS id) and its start and end on
CUPTI's clock; `tables._owners` gives a CUDA API call (CUPTI names its thread
by OS id too) to the innermost range open on its thread when it started, so
kernels and copies are attributed to layers and marks exactly, with no
synchronize and no CUPTI call per range (issue 32 measured external-correlation
ids at ~8 % of a launch-bound step). A range may be closed from another thread
(autograd ends a backward range where the gradient is ready): it keeps its
owner, and the owner's stack stays consistent under one lock.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

from dashboard.collectors.inputs import cut_text

_RANGE_COLUMNS: dict[str, pl.DataType] = {
    "id": pl.Int64,
    "thread": pl.Int64,
    "name": pl.String,
    "category": pl.String,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "depth": pl.Int32,
    "parent": pl.Int64,
    "pass": pl.String,
    "layer": pl.String,
    "flops": pl.Float64,
    "correlation": pl.Int64,
    "input_shapes": pl.String,
    "input_dtypes": pl.String,
}
# A range's inputs as recorded: (sizes, dtype) per tensor (torch.Size and torch.dtype: no tensor is kept).
Inputs = tuple[tuple[tuple[int, ...], object], ...]


@dataclass(slots=True, eq=False)  # identity: `list.remove` must not compare fields
class OpenRange:
    id: int
    name: str
    category: str
    start_ns: int
    thread: int
    depth: int
    parent: int | None
    pass_: str | None
    layer: str | None


@dataclass(slots=True)
class _ThreadStacks:
    thread: int  # native thread id
    wanted: list[OpenRange] = field(default_factory=list)  # open ranges, outermost first


def _default_pass(name: str, parent: OpenRange | None) -> str:
    inherited = parent.pass_ if parent else None
    if name.startswith("Optimizer.") and inherited != "backward":
        return "optimizer"
    return inherited or "unattributed"


class RangeRecorder:
    """Open / close nested ranges per thread; finished ranges become the `ranges` table."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._local = threading.local()  # this thread's _ThreadStacks, found without a lookup
        self._threads: dict[int, _ThreadStacks] = {}
        self._open: dict[int, tuple[_ThreadStacks, OpenRange]] = {}  # id -> (owner's stacks, range)
        self._rows: list[tuple] = []

    # ---- recording -------------------------------------------------------
    def open(
        self,
        name: str,
        category: str,
        pass_: str | None = None,
        layer: str | None = None,
        under: int = 0,
    ) -> int:
        """Open a range on the calling thread; returns its id.

        `pass_` / `layer` default to the enclosing range's (pass "unattributed"
        at the top: a step holds every pass); an `Optimizer.…` mark (outside
        backward) is "optimizer", as in Kineto traces (collectors.kineto.passes). `under` > 0 opens
        the range *beneath* the innermost `under` open ranges, which become
        its children (they started first only because of hook order; the new
        range starts with the earliest of them).
        """
        # Called twice per module call by the layer hooks: keep this path short.
        stacks = self._here()
        with self._lock:
            wanted = stacks.wanted
            position = max(0, len(wanted) - under) if under > 0 else len(wanted)
            parent = wanted[position - 1] if position else None
            opened = OpenRange(
                id=next(self._ids),
                name=name,
                category=category,
                start_ns=0,
                thread=stacks.thread,
                depth=position,
                parent=parent.id if parent is not None else None,
                pass_=pass_ if pass_ is not None else _default_pass(name, parent),
                layer=layer if layer is not None else (parent.layer if parent is not None else None),
            )
            above = wanted[position:]
            if above:
                for child in above:
                    child.depth += 1
                above[0].parent = opened.id
                wanted.insert(position, opened)
            else:
                wanted.append(opened)
            self._open[opened.id] = (stacks, opened)
        now = self.clock()
        opened.start_ns = min(now, *(child.start_ns for child in above)) if above else now
        return opened.id

    def open_stack(self) -> list[OpenRange]:
        """The ranges open on the calling thread, outermost first (a copy)."""
        stacks = self._here()
        with self._lock:
            return list(stacks.wanted)

    def _here(self) -> _ThreadStacks:
        """The calling thread's stacks (made on its first range)."""
        stacks: _ThreadStacks | None = getattr(self._local, "stacks", None)
        if stacks is None:
            thread = threading.get_native_id()
            with self._lock:
                stacks = self._threads.setdefault(thread, _ThreadStacks(thread))
            self._local.stacks = stacks
        return stacks

    def close(self, range_id: int, flops: float | None = None, inputs: Inputs | None = None) -> bool:
        """Close a range (from any thread); False when it is not open. `inputs`: its input tensors' sizes and
        dtypes, written as text once, in `frame`."""
        end = self.clock()
        with self._lock:
            entry = self._open.pop(range_id, None)
            if entry is None:
                return False
            stacks, opened = entry
            wanted = stacks.wanted
            if wanted and wanted[-1] is opened:
                wanted.pop()
            else:
                wanted.remove(opened)
            self._rows.append(
                (
                    opened.id,
                    opened.thread,
                    opened.name,
                    opened.category,
                    opened.start_ns,
                    max(end, opened.start_ns),
                    opened.depth,
                    opened.parent,
                    opened.pass_,
                    opened.layer,
                    flops,
                    opened.id,
                    inputs,
                )
            )
        return True

    def close_all(self) -> int:
        """Close every range still open (at session stop); returns how many."""
        with self._lock:
            ids = [opened.id for _thread, opened in self._open.values()]
        # Innermost first, so parents end no earlier than their children.
        for range_id in sorted(ids, reverse=True):
            self.close(range_id)
        return len(ids)

    def frame(self) -> pl.DataFrame:
        with self._lock:
            rows = list(self._rows)
        texts: dict[Inputs, tuple[str, str]] = {}  # a layer sees the same shapes step after step
        for index, row in enumerate(rows):
            inputs = row[-1]
            if inputs is not None:
                found = texts.get(inputs)
                if found is None:
                    found = texts[inputs] = inputs_text(inputs)
                rows[index] = (*row[:-1], *found)
            else:
                rows[index] = (*row[:-1], None, None)
        return pl.DataFrame(rows, schema=_RANGE_COLUMNS, orient="row")


def inputs_text(inputs: Inputs) -> tuple[str, str]:
    """(input_shapes, input_dtypes) as the ranges table stores them (`collectors.inputs`): `[64, 512], [512]`
    and `float32, float32` (torch's dtype names)."""
    shapes = ", ".join("[" + ", ".join(map(str, sizes)) + "]" for sizes, _ in inputs)
    dtypes = ", ".join(str(dtype).removeprefix("torch.") for _, dtype in inputs)
    return cut_text(shapes), cut_text(dtypes)
