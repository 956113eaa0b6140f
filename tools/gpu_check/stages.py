"""How the device check runs its stages: each timed, each failure kept as one line, none stopping the rest.

A stage is a function; `Stages.run` times it, prints its outcome, and turns any exception into a failed
stage with a one-line error, so one broken stage (no CUPTI, no Triton, an ingest that fails) costs that
stage and the checks that needed it, never the summary. Child processes get a timeout cut to what is left
of the check's overall deadline; a stage that would start with too little time left is skipped, and says
so, so the whole check ends in time to write its summary.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

# Seconds kept back at the end of the deadline for the comparison and the summary.
RESERVE_S = 20.0
# A stage is not started with less than this left: it could not finish anyway.
MIN_STAGE_S = 10.0
OUTPUT_TAIL = 4000


class StageFailed(Exception):
    """A stage failed; the message is the one line the summary keeps."""


@dataclass
class StageResult:
    name: str
    ok: bool
    seconds: float
    error: str | None = None


def one_line(text: str, limit: int = 300) -> str:
    """The last non-empty line of a message (where tracebacks and CLIs put the reason), shortened."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = lines[-1] if lines else "(no message)"
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Stages:
    """Runs stages against one deadline and records how each went."""

    def __init__(self, deadline_s: float, log: TextIO = sys.stdout) -> None:
        self.started = time.monotonic()
        self.deadline = self.started + deadline_s
        self.results: list[StageResult] = []
        self.log = log

    def left_s(self) -> float:
        return self.deadline - time.monotonic()

    def budget(self, wanted_s: float, final: bool = False) -> float:
        """A child's timeout: what it asks for, cut to the deadline less the reserve (a final stage, the
        comparison the reserve is kept for, may use it)."""
        return max(0.0, min(wanted_s, self.left_s() - (0.0 if final else RESERVE_S)))

    def run(self, name: str, stage: Callable[[], Any], reserve: bool = True) -> Any:
        """Run one stage; its return value, or None when it failed or was skipped. `reserve=False`: a final
        stage, run even when the deadline is near (the time reserved is for it)."""
        print(f"\n== {name}", file=self.log, flush=True)
        if reserve and self.left_s() - RESERVE_S < MIN_STAGE_S:  # the final stages always run
            return self._record(name, 0.0, f"skipped: the check's time budget is spent ({self.left_s():.0f} s left)")
        started = time.monotonic()
        try:
            value = stage()
        except StageFailed as exc:
            return self._record(name, time.monotonic() - started, str(exc))
        except Exception as exc:  # a defect in a stage costs that stage, never the summary
            return self._record(name, time.monotonic() - started, f"{type(exc).__name__}: {one_line(str(exc))}")
        self._record(name, time.monotonic() - started, None)
        return value

    def _record(self, name: str, seconds: float, error: str | None) -> None:
        self.results.append(StageResult(name, error is None, round(seconds, 2), error))
        outcome = "ok" if error is None else f"FAILED: {error}"
        print(f"-- {name}: {outcome} ({seconds:.1f} s)", file=self.log, flush=True)

    def failed(self, name: str) -> str | None:
        """The error of a recorded stage (None when it passed or never ran)."""
        return next((r.error for r in self.results if r.name == name and not r.ok), None)

    def as_dicts(self) -> list[dict[str, Any]]:
        return [asdict(result) for result in self.results]

    def command(self, argv: Sequence[str], wanted_s: float, env: Mapping[str, str], cwd: Path,
                stderr_to: Path | None = None, final: bool = False) -> str:
        """Run a child process to its end; its stdout. Non-zero exit or timeout: StageFailed with the reason."""
        timeout = self.budget(wanted_s, final)
        print("$ " + " ".join(str(a) for a in argv), file=self.log, flush=True)
        try:
            if stderr_to is not None:
                with open(stderr_to, "wb") as stderr:
                    done = subprocess.run(list(argv), cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=stderr,
                                          timeout=timeout, check=False)
                error_text = stderr_to.read_bytes()[-OUTPUT_TAIL:].decode("utf-8", "replace")
            else:
                done = subprocess.run(list(argv), cwd=cwd, env=dict(env), capture_output=True, timeout=timeout,
                                      check=False)
                error_text = done.stderr.decode("utf-8", "replace")
                self._echo(error_text)
        except subprocess.TimeoutExpired:
            raise StageFailed(f"timed out after {timeout:.0f} s") from None
        out = done.stdout.decode("utf-8", "replace")
        self._echo(out)
        if done.returncode != 0:
            raise StageFailed(f"exit {done.returncode}: {one_line(error_text or out)}")
        return out

    def _echo(self, text: str) -> None:
        if text.strip():
            print(text.rstrip()[-OUTPUT_TAIL:], file=self.log, flush=True)
