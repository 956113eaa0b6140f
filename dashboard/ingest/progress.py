"""Progress of an ingest: the CLI's lines on stderr, and the phases in order and timed, as an upload lists them.

Progress reaches a sink as (fraction, message) calls, many per phase; a phase
is a run of calls with one message ("detecting formats", "kineto: decoding
x.json", ..., "writing run"). The CLI prints every new message on stderr; an
upload job keeps them here, so the page can show the same phases with how
long each took, however often its status is written.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any


class StderrProgress:
    """Progress on stderr: a bar on a terminal, occasional lines elsewhere."""

    # Quick work prints nothing, so a failure stays one line on stderr (benchmarks set
    # DASHBOARD_PROGRESS_QUIET_S=0 to see every phase from the start).
    QUIET_SECONDS = float(os.environ.get("DASHBOARD_PROGRESS_QUIET_S") or 1.0)

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()
        self.started = time.monotonic()
        self.last_print = 0.0
        self.last_message = ""
        self.printed = False

    def __call__(self, fraction: float | None, message: str) -> None:
        now = time.monotonic()
        if now - self.started < self.QUIET_SECONDS:
            return
        if message == self.last_message and now - self.last_print < 0.5:
            return
        self.last_print, self.last_message = now, message
        percent = "" if fraction is None else f"{fraction * 100:5.1f}% "
        line = f"{self.label}: {percent}{message}"
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + line)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self.printed = True

    def done(self) -> None:
        if self.tty and self.printed:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


class PhaseLog:
    """Phases seen so far: name and seconds (the current one's so far)."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._starts: list[float] = []

    def note(self, message: str) -> bool:
        """Record a progress message; True when it begins a new phase."""
        if self._names and self._names[-1] == message:
            return False
        self._names.append(message)
        self._starts.append(time.monotonic())
        return True

    def as_list(self) -> list[dict[str, Any]]:
        ends = [*self._starts[1:], time.monotonic()]
        return [{"name": name, "seconds": round(end - start, 3)}
                for name, start, end in zip(self._names, self._starts, ends, strict=True)]


def phase_names(status: dict[str, Any]) -> list[str]:
    """The phase names a job's status lists (empty for a status written before phases were kept)."""
    return [str(phase.get("name", "")) for phase in status.get("phases") or [] if isinstance(phase, dict)]


PHASES_SHOWN = 12


def phases_text(status: dict[str, Any]) -> str | None:
    """`Phases (wall seconds each): detecting formats 0.2 s · …` for a job's status; None without phases.
    A folder of many files has a phase per file: the latest PHASES_SHOWN, and how many came before."""
    phases = [phase for phase in status.get("phases") or [] if isinstance(phase, dict)]
    if not phases:
        return None
    earlier = f"({len(phases) - PHASES_SHOWN} earlier) · " if len(phases) > PHASES_SHOWN else ""
    shown = " · ".join(f"{phase.get('name', '')} {float(phase.get('seconds') or 0):.1f} s"
                       for phase in phases[-PHASES_SHOWN:])
    return f"Phases (wall seconds each): {earlier}{shown}"
