"""Live capture with cupti-python: a session that records kernels, copies, API
calls, layers, marks and Python stacks of this process, on CUPTI's clock.

    from dashboard.capture.session import CaptureSession

    with CaptureSession(data_dir="data", name="train") as session:
        train_one_epoch()
    print(session.run_id)

    @CaptureSession(data_dir="data", name="step")      # or as a decorator:
    def step(): ...                                    # one run per call

One session owns CUPTI per process: it registers the (single) pair of buffer
callbacks, enables every kind it needs at once, and on exit synchronises,
flushes (`activity_flush_all(1)`), checks dropped records and disables the
kinds. A second session while one is active raises `CaptureError`, and so
does starting under `torch.profiler` (both drive the process-wide CUPTI
state). Without cupti-python, a driver or a GPU, starting raises
`CaptureUnavailable("CUPTI unavailable: <reason>")`.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

from dashboard import schema
from dashboard.capture import records as rec
from dashboard.capture.cupti_backend import CaptureBackend, CaptureUnavailable, CuptiBackend
from dashboard.capture.ranges import RangeRecorder
from dashboard.capture.rank_merge import rank_from_env
from dashboard.capture.records import RecordSink
from dashboard.capture.stacks import StackLimits, StackRecorder
from dashboard.capture.tables import build_tables

__all__ = [
    "DEFAULT_KINDS",
    "CaptureError",
    "CaptureSession",
    "CaptureUnavailable",
    "active_session",
]

# Kinds every capture needs; a failure to enable one of them aborts the start.
REQUIRED_KINDS = (rec.CONCURRENT_KERNEL, rec.MEMCPY, rec.MEMSET, rec.RUNTIME)
# Kinds that add detail; a failure to enable one is a warning.
OPTIONAL_KINDS = (rec.MARKER, rec.MEMCPY2)
DEFAULT_KINDS = REQUIRED_KINDS + OPTIONAL_KINDS

F = TypeVar("F", bound=Callable[..., Any])


class CaptureError(RuntimeError):
    """A capture cannot start here and now (another session or profiler owns CUPTI)."""


_OWNER_LOCK = threading.Lock()
_OWNER: CaptureSession | None = None


def active_session() -> CaptureSession | None:
    """The session capturing this process right now, if any."""
    return _OWNER


def _torch_profiler_active() -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.autograd._profiler_enabled())
    except Exception:
        return False


class CaptureSession:
    """One capture of this process. Use as a context manager, or as a decorator."""

    def __init__(
        self,
        name: str = "capture",
        data_dir: Path | str | None = None,
        *,
        backend: CaptureBackend | None = None,
        rank: int | None = None,
        driver_api: bool = False,
        layers: bool | str | None = None,
        flops: bool = True,
        flop_steps: int | None = 2,
        stacks: bool | StackLimits = False,
        staging: Path | str | None = None,
    ) -> None:
        """
        name / data_dir: where `stop()` writes the run (no run is written without data_dir).
        backend: the CUPTI backend; default the real one (`CuptiBackend`).
        rank: this process's rank; default from RANK / SLURM_PROCID / LOCAL_RANK, else 0.
        driver_api: also record CUDA driver API calls (DRIVER kind).
        layers: torch module hooks. "forward" (None's choice when torch is importable): a forward
            range per module call and one backward range per model call (its kernels get pass
            "backward" and the model's name), the cheap form; "full" (or True): a backward range
            per module call too, through two autograd hooks per call, which cost a launch-bound
            step far more (README, "Live capture: installing, options and what they cost"); False: none.
        flops: count FLOPs per layer and pass with torch's FlopCounterMode (with layers).
        flop_steps: steps counted before FLOPs are reused by layer, pass and input shapes
            (the counter costs CPU time per op); None = count every step.
        stacks: record Python call stacks (True, or StackLimits for custom bounds).
        staging: write this rank's partial into this folder instead of a run (DDP).
        """
        if layers not in (False, None, True, "forward", "full"):
            raise ValueError(f"layers={layers!r}: use 'forward', 'full', True (= 'full'), False or None")
        self.name = name
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.staging = Path(staging) if staging is not None else None
        self.rank = rank_from_env() if rank is None else rank
        self.kinds = DEFAULT_KINDS + ((rec.DRIVER,) if driver_api else ())
        self._settings = {
            "backend": backend,
            "rank": rank,
            "driver_api": driver_api,
            "layers": layers,
            "flops": flops,
            "flop_steps": flop_steps,
            "stacks": stacks,
            "staging": staging,
        }
        self.backend: CaptureBackend | None = backend
        self.layers = layers
        self.flops = flops
        self.flop_steps = flop_steps
        self.stack_limits = (stacks if isinstance(stacks, StackLimits) else StackLimits()) if stacks else None
        self.sink = RecordSink()
        self.ranges: RangeRecorder | None = None
        self.stacks: StackRecorder | None = None
        self.torch_hooks: Any = None
        self.warnings: list[str] = []
        self.enabled_kinds: list[int] = []
        self.skipped_apis: dict[str, str] = {}  # runtime function -> who leaves it out ("cupti" / "tables")
        self.dropped: int | None = 0
        self.started_ns: int | None = None
        self.stopped_ns: int | None = None
        self.run_id: str | None = None
        self.partial_path: Path | None = None
        self.run_ids: list[str] = []
        self.last_session: CaptureSession | None = None
        self._state = "new"

    # ---- lifecycle -----------------------------------------------------------
    def start(self) -> CaptureSession:
        global _OWNER
        if self._state != "new":
            raise CaptureError("a CaptureSession records once; create a new one for another capture")
        with _OWNER_LOCK:
            if _OWNER is not None:
                raise CaptureError(
                    f"another capture session ({_OWNER.name!r}) is active in this process; "
                    "CUPTI has one owner per process"
                )
            if _torch_profiler_active():
                raise CaptureError("torch.profiler is active: it owns CUPTI in this process, stop it first")
            _OWNER = self
        try:
            self._start_backend()
        except BaseException:
            with _OWNER_LOCK:
                _OWNER = None
            raise
        self._state = "running"
        try:
            self._start_host_recorders()
        except BaseException:
            self.stop(write=False)
            raise
        return self

    def _start_backend(self) -> None:
        backend = self.backend if self.backend is not None else CuptiBackend()
        self.backend = backend
        backend.register_callbacks(self.sink.buffer_requested, self.sink.buffer_completed)
        try:
            for kind in self.kinds:
                try:
                    backend.enable(kind)
                except Exception as exc:
                    if kind in REQUIRED_KINDS:
                        raise
                    self.warnings.append(f"activity kind {rec.KIND_NAMES.get(kind, kind)} not recorded ({exc})")
                    continue
                self.enabled_kinds.append(kind)
        except BaseException:
            for kind in self.enabled_kinds:
                backend.disable(kind)
            backend.unregister_callbacks()
            raise
        self._skip_noisy_apis(backend)
        self.ranges = RangeRecorder(backend.timestamp)
        self.started_ns = backend.timestamp()

    def _skip_noisy_apis(self, backend: CaptureBackend) -> None:
        """Threads by OS id, and no records of the runtime's host-only queries (records.SKIPPED_RUNTIME_APIS)."""
        use_system_ids = getattr(backend, "use_system_thread_ids", None)
        if use_system_ids is not None:
            use_system_ids()
        if rec.RUNTIME not in self.enabled_kinds:
            return
        skip = getattr(backend, "skip_api", None)
        for cbid, name in rec.SKIPPED_RUNTIME_APIS.items():
            self.skipped_apis[name] = "cupti" if skip is not None and skip(rec.RUNTIME, cbid) else "tables"

    def _start_host_recorders(self) -> None:
        assert self.backend is not None and self.ranges is not None
        if self.layers is not False:
            from dashboard.capture import torch_hooks

            reason = torch_hooks.unavailable_reason()
            if reason is None:
                per_module_backward = self.layers in (True, "full")
                hooks = torch_hooks.LayerHooks(self.ranges, count_flops=self.flops, flop_steps=self.flop_steps,
                                               per_module_backward=per_module_backward)
                try:
                    hooks.install()
                    self.torch_hooks = hooks
                except Exception as exc:  # a torch without these hooks: capture goes on without layers
                    hooks.uninstall()
                    self.warnings.append(f"layers not recorded: {exc}")
            elif self.layers is not None:
                self.warnings.append(f"layers not recorded: {reason}")
        if self.stack_limits is not None:
            self.stacks = StackRecorder(self.backend.timestamp, self.stack_limits)
            self.stacks.start()

    def stop(self, write: bool = True) -> None:
        """Stop recording, flush CUPTI, release ownership; write the run when data_dir is set."""
        global _OWNER
        if self._state != "running":
            return
        self._state = "stopped"
        backend = self.backend
        assert backend is not None and self.ranges is not None
        try:
            if self.stacks is not None:
                self.stacks.stop()
                self.warnings.extend(self.stacks.warnings)
            if self.torch_hooks is not None:
                self.torch_hooks.uninstall()
                self.warnings.extend(self.torch_hooks.warnings)
            left_open = self.ranges.close_all()
            if left_open:
                self.warnings.append(f"{left_open} ranges were still open at the end and end there")
            self.stopped_ns = backend.timestamp()
            backend.synchronize()
            backend.flush_all()
            dropped = backend.dropped_records()
            self.dropped = dropped
            if dropped is None:
                self.warnings.append("CUPTI could not say whether it dropped records: totals may be low")
            elif dropped:
                self.warnings.append(f"CUPTI dropped {dropped} records (buffers full); totals are low")
        finally:
            for kind in self.enabled_kinds:
                backend.disable(kind)
            backend.unregister_callbacks()
            with _OWNER_LOCK:
                _OWNER = None
        if not write:
            return
        if self.staging is not None:
            self.partial_path = self.write_partial(self.staging)
        elif self.data_dir is not None:
            self.run_id = self.write_run(self.data_dir, self.name)

    def __enter__(self) -> CaptureSession:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __call__(self, func: F) -> F:
        """Decorate a function: each call is captured by a fresh session with these settings."""

        @functools.wraps(func)
        def captured(*args: Any, **kwargs: Any) -> Any:
            session = CaptureSession(self.name, self.data_dir, **self._settings)
            self.last_session = session
            with session:
                result = func(*args, **kwargs)
            if session.run_id is not None:
                self.run_ids.append(session.run_id)
                self.run_id = session.run_id
            return result

        return captured  # type: ignore[return-value]

    # ---- what was captured ---------------------------------------------------
    def timestamp(self) -> int:
        """Now, on the capture's clock (CUPTI's)."""
        if self.backend is None:
            raise CaptureError("the session has not started")
        return self.backend.timestamp()

    def tables(self) -> dict[str, pl.DataFrame]:
        """The canonical tables captured so far (complete after `stop()`)."""
        if self.backend is None or self.ranges is None:
            raise CaptureError("the session has not started")
        tables = build_tables(self.sink.frames(), self.ranges.frame(), self.rank, self.backend.api_name)
        stack = self.stacks.frame() if self.stacks is not None else None
        if stack is not None and stack.height:
            tables["stack"] = schema.conform("stack", stack.with_columns(pl.lit(self.rank).alias("rank")))
        return {name: frame for name, frame in tables.items() if frame.height}

    def metadata(self) -> dict[str, Any]:
        return {
            "capture": {
                "backend": getattr(self.backend, "name", "?"),
                "rank": self.rank,
                "kinds": [rec.KIND_NAMES.get(k, str(k)) for k in self.enabled_kinds],
                "started_ns": self.started_ns,
                "stopped_ns": self.stopped_ns,
                "records": self.sink.records,
                "buffers": self.sink.buffers_completed,
                "ignored_kinds": {str(k): n for k, n in self.sink.ignored_kinds.items()},
                "skipped_apis": dict(self.skipped_apis),
                "dropped_records": self.dropped,
                "layers": (("full" if self.torch_hooks.per_module_backward else "forward")
                           if self.torch_hooks is not None else False),
                "flops": bool(self.torch_hooks is not None and self.torch_hooks.counting_flops),
                "stacks": getattr(self.stacks, "mechanism", None),
            }
        }

    def write_run(self, data_dir: Path | str, name: str | None = None, metadata: dict[str, Any] | None = None,
                  extra_warnings: Iterable[str] = ()) -> str:
        """Write the captured tables as a new run (run_output.write_run); returns its id."""
        from dashboard.capture import run_output

        return run_output.write_run(self, data_dir, name, metadata, extra_warnings)

    def write_partial(self, staging: Path | str, metadata: dict[str, Any] | None = None) -> Path:
        """Write this rank's tables into a shared staging folder (run_output.write_partial)."""
        from dashboard.capture import run_output

        return run_output.write_partial(self, staging, metadata)
