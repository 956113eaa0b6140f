"""Python call stacks as intervals on the capture's clock (the `stack` table).

Each row is one frame's activation on one thread: function, depth, start_ns,
end_ns. Every timestamp comes from the capture backend's clock (CUPTI's
`get_timestamp`), so the stack lines up with kernels and layers, unlike the
original tool's event-index axis.

Python 3.12+ uses `sys.monitoring` (process-wide, and a filtered function is
switched off at its code location after its first call, so skipped library
code costs almost nothing). Python 3.11 uses `sys.setprofile` / `threading.
setprofile`: every Python call and return still enters the callback, which
is why the bounds below exist.

Bounds (all in `StackLimits`):
  * only user code by default: frames from the standard library, from
    site-packages / dist-packages and from the dashboard itself are skipped
    (`include=` replaces the rule with your own predicate on the code object);
  * `max_depth` (64): deeper recorded frames are counted, not stored;
  * `max_intervals` (1,000,000, ~100 MB at most): after that no new frames
    are recorded and a warning says so;
  * threads: with setprofile, only the capturing thread and threads started
    after the capture began are seen (a 3.11 limitation).
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

import polars as pl

_DASHBOARD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIRS = tuple(
    {os.path.abspath(p) + os.sep for p in (sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")) if p}
)
_THIRD_PARTY_MARKERS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
_UNSEEN = object()

_STACK_COLUMNS: dict[str, pl.DataType] = {
    "thread": pl.Int64,
    "function": pl.String,
    "depth": pl.Int32,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
}


@dataclass(frozen=True)
class StackLimits:
    """What the stack recorder keeps; see the module docstring for the costs."""

    max_depth: int = 64
    max_intervals: int = 1_000_000
    skip_stdlib: bool = True
    skip_site_packages: bool = True
    include: Callable[[CodeType], bool] | None = None


def is_user_code(code: CodeType, limits: StackLimits) -> bool:
    """The default filter: True for the code a user wrote."""
    if limits.include is not None:
        return bool(limits.include(code))
    filename = code.co_filename
    if filename.startswith("<"):
        # <frozen ...> is the stdlib; <string> is mostly code that dataclasses /
        # namedtuple generate; <stdin> is the user typing.
        return filename == "<stdin>" or not limits.skip_stdlib
    filename = os.path.abspath(filename)
    if filename.startswith(_DASHBOARD_DIR):
        return False  # the profiler's own hooks
    if limits.skip_site_packages and any(marker in filename for marker in _THIRD_PARTY_MARKERS):
        return False
    return not (limits.skip_stdlib and filename.startswith(_STDLIB_DIRS))


def describe(code: CodeType) -> str:
    """`Model.forward (train.py:12)`: qualified name plus where it is defined."""
    return f"{code.co_qualname} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


class _ThreadState:
    __slots__ = ("overflow", "stack", "thread")

    def __init__(self) -> None:
        self.thread = threading.get_native_id()
        self.stack: list[tuple[Any, str, int]] = []  # (frame or code, name, start_ns)
        self.overflow = 0


class StackRecorder:
    """Records Python frame intervals between `start()` and `stop()`."""

    def __init__(self, clock: Callable[[], int], limits: StackLimits | None = None) -> None:
        self.clock = clock
        self.limits = limits or StackLimits()
        self.warnings: list[str] = []
        self.mechanism: str | None = None
        self._names: dict[CodeType, str | None] = {}
        self._rows: list[tuple[int, str, int, int, int]] = []
        self._local = threading.local()
        self._states: list[_ThreadState] = []
        self._states_lock = threading.Lock()
        self._full = False
        self._running = False
        self._previous_profile: Any = None
        self._previous_thread_profile: Any = None

    # ---- lifecycle ---------------------------------------------------------
    def start(self) -> bool:
        """Begin recording; False (with a warning) when another profiler owns the hooks."""
        if self._running:
            return True
        if sys.version_info >= (3, 12) and self._start_monitoring():
            self.mechanism = "sys.monitoring"
        elif sys.getprofile() is not None:
            self.warnings.append("Python stacks not captured: another profiler (sys.setprofile) is active")
            return False
        else:
            self._previous_thread_profile = threading.getprofile()
            threading.setprofile(self._on_profile)
            sys.setprofile(self._on_profile)
            self.mechanism = "sys.setprofile"
        self._running = True
        return True

    def stop(self) -> None:
        if not self._running:
            return
        if self.mechanism == "sys.monitoring":
            self._stop_monitoring()
        else:
            sys.setprofile(None)
            threading.setprofile(self._previous_thread_profile)
        self._running = False
        end = self.clock()
        with self._states_lock:
            states = list(self._states)
        for state in states:  # frames still running at stop end there
            while state.stack:
                _key, name, start = state.stack.pop()
                self._rows.append((state.thread, name, len(state.stack), start, max(end, start)))
        if self._full:
            self.warnings.append(
                f"Python stack capture stopped after {self.limits.max_intervals:,} frames (max_intervals)"
            )

    def frame(self) -> pl.DataFrame:
        """The `stack` rows recorded so far (without `rank`)."""
        return pl.DataFrame(list(self._rows), schema=_STACK_COLUMNS, orient="row")

    # ---- the per-event path (keep it short) ----------------------------------
    def _state(self) -> _ThreadState:
        state = getattr(self._local, "state", None)
        if state is None:
            state = self._local.state = _ThreadState()
            with self._states_lock:
                self._states.append(state)
        return state

    def _name(self, code: CodeType) -> str | None:
        name = self._names.get(code, _UNSEEN)
        if name is _UNSEEN:
            name = self._names[code] = describe(code) if is_user_code(code, self.limits) else None
        return name  # type: ignore[return-value]

    def _enter(self, code: CodeType, key: Any) -> bool:
        """False when this code is filtered out (never recorded)."""
        name = self._name(code)
        if name is None:
            return False
        state = self._state()
        if self._full or len(state.stack) >= self.limits.max_depth:
            state.overflow += 1
            return True
        state.stack.append((key, name, self.clock()))
        return True

    def _exit(self, code: CodeType, key: Any) -> bool:
        if self._name(code) is None:
            return False
        state = self._state()
        if state.overflow:
            state.overflow -= 1
            return True
        stack = state.stack
        if not stack or stack[-1][0] is not key:
            return True  # a frame that began before the capture did
        _key, name, start = stack.pop()
        self._rows.append((state.thread, name, len(stack), start, self.clock()))
        if len(self._rows) >= self.limits.max_intervals:
            self._full = True
        return True

    def _on_profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            self._enter(frame.f_code, frame)
        elif event == "return":
            self._exit(frame.f_code, frame)

    # ---- sys.monitoring (3.12+) ----------------------------------------------
    def _start_monitoring(self) -> bool:
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        tool = monitoring.PROFILER_ID
        try:
            monitoring.use_tool_id(tool, "dashboard-stacks")
        except ValueError:
            return False  # another profiler holds the id: fall back to setprofile
        events = monitoring.events
        disable = monitoring.DISABLE

        def on_start(code: CodeType, offset: int) -> Any:
            return None if self._enter(code, code) else disable

        def on_end(code: CodeType, offset: int, value: Any) -> Any:
            return None if self._exit(code, code) else disable

        def on_unwind(code: CodeType, offset: int, exception: BaseException) -> None:
            self._exit(code, code)  # PY_UNWIND cannot be disabled per location

        # Locations switched off by an earlier capture would stay off.
        monitoring.restart_events()
        monitoring.register_callback(tool, events.PY_START, on_start)
        monitoring.register_callback(tool, events.PY_RESUME, on_start)
        monitoring.register_callback(tool, events.PY_RETURN, on_end)
        monitoring.register_callback(tool, events.PY_YIELD, on_end)
        monitoring.register_callback(tool, events.PY_UNWIND, on_unwind)
        monitoring.set_events(
            tool, events.PY_START | events.PY_RESUME | events.PY_RETURN | events.PY_YIELD | events.PY_UNWIND
        )
        return True

    def _stop_monitoring(self) -> None:
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        tool = monitoring.PROFILER_ID
        monitoring.set_events(tool, 0)
        events = monitoring.events
        for event in (events.PY_START, events.PY_RESUME, events.PY_RETURN, events.PY_YIELD, events.PY_UNWIND):
            monitoring.register_callback(tool, event, None)
        monitoring.free_tool_id(tool)
