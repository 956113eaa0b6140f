"""`dashboard.mark`: name a region of your program in the capture.

    import dashboard

    with dashboard.mark("data loading"):
        batch = next(loader)

    @dashboard.mark("optimizer")
    def step(): ...

    for i, batch in enumerate(loader):
        with dashboard.mark(f"ProfilerStep#{i}", category="profiler_step"):
            train_step(batch)

Inside a capture session the region becomes a range (category "marker" by
default) on the capture's clock; kernels launched inside it are attributed
to it. It is also emitted as an NVTX range, so Nsight Systems sees it when
the program runs under nsys instead: through the `nvtx` package (domain
"dashboard") when installed, else through `torch.cuda.nvtx` when CUDA is up.
With neither and no session, `mark` costs one function call.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

NVTX_DOMAIN = "dashboard"


@cache
def _nvtx_package() -> Any:
    try:
        import nvtx  # type: ignore[import-not-found]
    except Exception:
        return None
    return nvtx


def _nvtx_calls(session_active: bool) -> tuple[Callable[[str], None], Callable[[], None]] | None:
    package = _nvtx_package()
    if package is not None:
        return (
            lambda name: package.push_range(message=name, domain=NVTX_DOMAIN),
            lambda: package.pop_range(domain=NVTX_DOMAIN),
        )
    if session_active:
        # torch's NVTX uses the default domain, which the capture would record
        # a second time as an "nvtx" range next to this mark: skip it.
        return None
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        return torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    except Exception:
        return None


class mark(contextlib.ContextDecorator):  # lower case: it reads like a function at call sites
    """A named region: a range in the active capture and an NVTX range."""

    def __init__(self, name: str, *, category: str = "marker") -> None:
        self.name = str(name)
        self.category = category
        self._range_id: int | None = None
        self._session: Any = None
        self._nvtx_pop: Callable[[], None] | None = None

    def _recreate_cm(self) -> mark:
        # As a decorator each call gets its own instance (recursion, threads).
        return mark(self.name, category=self.category)

    def __enter__(self) -> mark:
        from dashboard.capture.session import active_session

        session = active_session()
        if session is not None and session.ranges is not None:
            self._session = session
            self._range_id = session.ranges.open(self.name, self.category)
        calls = _nvtx_calls(session is not None)
        if calls is not None:
            push, pop = calls
            try:
                push(self.name)
                self._nvtx_pop = pop
            except Exception:
                self._nvtx_pop = None
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._nvtx_pop is not None:
            with contextlib.suppress(Exception):
                self._nvtx_pop()
            self._nvtx_pop = None
        if self._range_id is not None and self._session is not None and self._session.ranges is not None:
            self._session.ranges.close(self._range_id)
        self._range_id = None
        self._session = None
