"""The thin layer between a capture session and cupti-python.

A backend is the handful of CUPTI calls a session makes: register the buffer
callbacks, enable / disable activity kinds (and single runtime functions), flush,
read CUPTI's clock and its dropped-record count. `CuptiBackend` makes those calls on the real
`cupti` module, imported lazily so the rest of the dashboard runs without it;
`dashboard.capture.cupti_fake.FakeCuptiBackend` makes them on a simulated
GPU for tests and demos. Both deliver records through the same two callbacks.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, Protocol

from dashboard.capture import records

RequestedFn = Callable[[], tuple[int, int]]
CompletedFn = Callable[[list[Any]], None]

_VERSION_SUFFIX = re.compile(r"_v\d+$")
# The callback-id enums are spelt differently across cupti-python releases: RuntimeApiTraceCbid (13.4),
# Runtime_api_trace_cbid (13.2), runtime_api_trace_cbid only (13.0, the one torch's CUDA 13.0 libcupti pairs with).
_CBID_ENUMS = {
    records.RUNTIME: ("RuntimeApiTraceCbid", "Runtime_api_trace_cbid", "runtime_api_trace_cbid"),
    records.DRIVER: ("DriverApiTraceCbid", "Driver_api_trace_cbid", "driver_api_trace_cbid"),
}


class CaptureUnavailable(RuntimeError):
    """CUPTI cannot be used here (no package, no driver, no GPU)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"CUPTI unavailable: {reason}")


class CaptureBackend(Protocol):
    name: str

    def register_callbacks(self, requested: RequestedFn, completed: CompletedFn) -> None: ...
    def unregister_callbacks(self) -> None: ...
    def enable(self, kind: int) -> None: ...
    def disable(self, kind: int) -> None: ...
    def flush_all(self) -> None: ...
    def timestamp(self) -> int: ...
    def synchronize(self) -> None: ...
    def dropped_records(self) -> int | None: ...
    def skip_api(self, kind: int, cbid: int) -> bool: ...
    def api_name(self, kind: int, cbid: int) -> str: ...


def display_api_name(enum_name: str) -> str:
    """`cudaLaunchKernel_v7000` -> `cudaLaunchKernel` (the version tag is noise in a chart)."""
    return _VERSION_SUFFIX.sub("", enum_name)


class _CallbackRouter:
    """The one pair of buffer callbacks this process ever registers with CUPTI.

    CUPTI keeps a single pair per process; registering a second pair (as the
    original code did for its memcpy and kernel collectors) silently steals
    the records of the first. Sessions come and go, so CUPTI gets these two
    trampolines once and they forward to whichever sink is current.
    """

    def __init__(self) -> None:
        self.registered = False
        self.requested: RequestedFn | None = None
        self.completed: CompletedFn | None = None
        self.orphan_records = 0

    def on_requested(self) -> tuple[int, int]:
        target = self.requested
        return target() if target is not None else (records.BUFFER_BYTES, 0)

    def on_completed(self, activities: list[Any]) -> None:
        target = self.completed
        if target is None:
            self.orphan_records += len(activities)
            return
        target(activities)


_ROUTER = _CallbackRouter()
# `cupti.ActivityThreadIdType.SYSTEM` (cupti_activity.h): threads named by the OS's id, not pthread_self().
_SYSTEM_THREAD_IDS = 1
_IMPORT_LOCK = threading.Lock()


def _load_cupti() -> Any:
    """Import `cupti.cupti` and prove the driver answers, or say why not."""
    with _IMPORT_LOCK:
        try:
            from cupti import cupti  # type: ignore[import-not-found]
        except ImportError as exc:
            missing = getattr(exc, "name", None)
            if missing in ("cupti", "cupti.cupti"):
                raise CaptureUnavailable(
                    "cupti-python is not installed (pip install 'dashboard[cuda]' beside torch cu130, "
                    "'dashboard[cuda12]' beside torch cu128 / cu129)"
                ) from None
            raise CaptureUnavailable(f"cupti-python cannot be imported ({exc})") from None
        except Exception as exc:  # a broken install fails in odd ways
            raise CaptureUnavailable(f"cupti-python cannot be imported ({exc})") from None
    try:
        cupti.get_timestamp()
    except Exception as exc:  # NotSupportedError (a RuntimeError) or cupti.cuptiError
        raise CaptureUnavailable(str(exc) or type(exc).__name__) from None
    return cupti


def _set_nvtx_injection() -> None:
    # NVTX ranges reach CUPTI only when NVTX loads the same libcupti
    # (cupti-python docs, Getting Started); harmless when it cannot be found.
    if os.environ.get("NVTX_INJECTION64_PATH"):
        return
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib  # type: ignore[import-not-found]

        os.environ["NVTX_INJECTION64_PATH"] = load_nvidia_dynamic_lib("cupti").abs_path
    except Exception:
        return


class CuptiBackend:
    """The real backend: every method is one cupti-python call."""

    name = "cupti"

    def __init__(self) -> None:
        self._cupti = _load_cupti()
        _set_nvtx_injection()

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            raise CaptureUnavailable(f"{what} failed ({exc})") from exc

    def register_callbacks(self, requested: RequestedFn, completed: CompletedFn) -> None:
        _ROUTER.requested, _ROUTER.completed = requested, completed
        if not _ROUTER.registered:
            self._call(
                "activity_register_callbacks",
                self._cupti.activity_register_callbacks,
                _ROUTER.on_requested,
                _ROUTER.on_completed,
            )
            _ROUTER.registered = True

    def unregister_callbacks(self) -> None:
        _ROUTER.requested, _ROUTER.completed = None, None

    def enable(self, kind: int) -> None:
        self._call(f"activity_enable({records.KIND_NAMES.get(kind, kind)})", self._cupti.activity_enable, kind)

    def disable(self, kind: int) -> None:
        with contextlib.suppress(Exception):
            self._cupti.activity_disable(kind)

    def flush_all(self) -> None:
        self._call("activity_flush_all", self._cupti.activity_flush_all, 1)  # 1 = FLUSH_FORCED

    def skip_api(self, kind: int, cbid: int) -> bool:
        """Ask CUPTI not to record one runtime / driver function; False when it cannot."""
        name = "activity_enable_driver_api" if kind == records.DRIVER else "activity_enable_runtime_api"
        try:
            getattr(self._cupti, name)(cbid, 0)
        except Exception:  # an older CUPTI without per-function control: the tables drop them instead
            return False
        return True

    def use_system_thread_ids(self) -> bool:
        """API records name threads by OS id (as `threading.get_native_id()` and the ranges and stack
        tables do), not by pthread handle; False when this CUPTI cannot."""
        try:
            self._cupti.set_thread_id_type(_SYSTEM_THREAD_IDS)
        except Exception:
            return False
        return True

    def timestamp(self) -> int:
        return self._cupti.get_timestamp()

    def synchronize(self) -> None:
        """Wait for queued GPU work so its records exist before the flush."""
        torch = sys.modules.get("torch")
        if torch is not None:
            with contextlib.suppress(Exception):
                if torch.cuda.is_initialized():
                    torch.cuda.synchronize()
                    return
        with contextlib.suppress(Exception):
            from cuda.bindings import driver  # type: ignore[import-not-found]

            error, context = driver.cuCtxGetCurrent()
            if int(error) == 0 and int(context or 0):
                driver.cuCtxSynchronize()

    def dropped_records(self) -> int | None:
        """Records CUPTI dropped for lack of buffer space since the last call; None when it cannot say.

        `activity_get_num_dropped_records(context, stream_id, dropped)` takes the address of a size_t
        (cupti-python passes pointers as ints); context 0 asks about the global queue, where CUPTI 12+
        keeps the records of every kind the capture enables. A failure is not read as "none dropped".
        """
        dropped = ctypes.c_size_t(0)
        try:
            self._cupti.activity_get_num_dropped_records(0, 0, ctypes.addressof(dropped))
        except Exception:
            return None
        return int(dropped.value)

    def api_name(self, kind: int, cbid: int) -> str:
        # The cbid enums work offline; `get_callback_name` would need the driver.
        spellings = _CBID_ENUMS[records.DRIVER if kind == records.DRIVER else records.RUNTIME]
        enum = next((getattr(self._cupti, name) for name in spellings if hasattr(self._cupti, name)), None)
        if enum is None:
            return f"cbid {cbid}"
        try:
            return display_api_name(enum(cbid).name)
        except ValueError:
            return f"cbid {cbid}"


def probe() -> str | None:
    """None when live capture can run here, else the reason it cannot."""
    try:
        _load_cupti()
    except CaptureUnavailable as exc:
        return exc.reason
    return None
