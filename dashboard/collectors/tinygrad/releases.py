"""Which tinygrad release wrote a rewrites.pkl, from the file's structure: the files carry no version.

Op names are not in the file (`Ops(33)`), and the numbering changes in every release (Ops has 88
members in 0.12, 93 in 0.13, 79 in 0.14, in different orders). A release's table fits a file when
every structural fact the file states decodes as that release says it must:

- the `View Program` step of each kernel (0.13+) has a PROGRAM sink whose sources are
  (SINK, LINEAR, SOURCE, BINARY) in 0.14 and (SINK, DEVICE, LINEAR, SOURCE, BINARY) in 0.13
  (the spec's check; 0.12 has no such step and renders through a pickled ProgramSpec instead);
- a UOp's argument fixes its op: a KernelInfo only sits on a SINK, a ProgramInfo on a PROGRAM, a
  ConstFloat on a CONST, a CallInfo on a CALL, bytes on a BINARY, `(..., AxisType.X)` on a RANGE,
  `(Ops.X, ...)` on a REDUCE (REDUCE_AXIS in 0.12), a BufferizeOpts on a STAGE (BUFFERIZE in 0.12).

The newest release that fits wins; fields that only some releases pickle (`walk` on each step
from 0.14, a ProgramSpec before 0.13) break ties. When none fits, op names stay numbers
(`Ops(33)`) and a warning says so: a wrong table would name every op wrongly without a sign.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from dashboard.collectors.tinygrad.enums import RELEASES

# What the sources of a View Program's PROGRAM decode as, per release (0.12 has no View Program step).
PROGRAM_SOURCES: dict[str, tuple[str, ...] | None] = {
    "0.14.0": ("SINK", "LINEAR", "SOURCE", "BINARY"),
    "0.13.0": ("SINK", "DEVICE", "LINEAR", "SOURCE", "BINARY"),
    "0.12.0": None,
}
# Argument kind -> the ops that may carry it (in any supported release).
ARG_OPS: dict[str, frozenset[str]] = {
    "KernelInfo": frozenset({"SINK"}),
    "ProgramInfo": frozenset({"PROGRAM"}),
    "ConstFloat": frozenset({"CONST"}),
    "CallInfo": frozenset({"CALL"}),
    "bytes": frozenset({"BINARY"}),
    "axis": frozenset({"RANGE"}),
    "reduce": frozenset({"REDUCE", "REDUCE_AXIS"}),
    "BufferizeOpts": frozenset({"STAGE", "BUFFERIZE"}),
}


@dataclass(frozen=True)
class ReleaseChoice:
    release: str | None  # None: no table fits, op names stay numbers
    warning: str | None
    fitting: tuple[str, ...]  # every release whose table fits


@dataclass(frozen=True)
class Evidence:
    """The structural facts of one file, as op values (ints) in the file's own numbering."""

    programs: Sequence[tuple[int, tuple[int, ...]]]  # (PROGRAM op value, its sources' op values) per View Program
    arguments: Counter[tuple[str, int]]  # (argument kind, op value) -> how many UOps
    has_walk: bool  # TrackedGraphRewrite pickles `walk` (0.14)
    has_program_spec: bool  # a context returns a pickled ProgramSpec (0.12)


def _violations(release: str, evidence: Evidence) -> int:
    ops = RELEASES[release]["Ops"]
    expected = PROGRAM_SOURCES.get(release)
    broken = 0
    for program, sources in evidence.programs:
        if expected is None or ops.get(program) != "PROGRAM" or tuple(ops.get(s) for s in sources) != expected:
            broken += 1
    for (kind, value), count in evidence.arguments.items():
        if ops.get(value) not in ARG_OPS[kind]:
            broken += count
    return broken


def _hinted(release: str, evidence: Evidence) -> bool:
    if release == "0.14.0":
        return evidence.has_walk
    if release == "0.12.0":
        return evidence.has_program_spec
    return not evidence.has_walk and not evidence.has_program_spec


def choose_release(evidence: Evidence) -> ReleaseChoice:
    """The release whose enum numbering the file follows, and a warning when that is unsure or unknown."""
    supported = ", ".join(RELEASES)
    if not evidence.programs and not evidence.arguments:
        newest = next(iter(RELEASES))
        return ReleaseChoice(newest, f"nothing in the file shows which tinygrad release wrote it; op names follow "
                                     f"tinygrad {newest}", ())
    fitting = tuple(release for release in RELEASES if _violations(release, evidence) == 0)
    if not fitting:
        return ReleaseChoice(None, f"the op numbering fits none of the supported tinygrad releases ({supported}); "
                                   "ops are shown by number (Ops(33)), not by name", ())
    hinted = [release for release in fitting if _hinted(release, evidence)]
    return ReleaseChoice((hinted or list(fitting))[0], None, fitting)
