"""The long fuzz run (issue 14): the mutation corpus through the real ingest, many cases per format.

    python benchmarks/fuzz.py --cases 10000 --formats dot_plain,dot_planner,tt_log,tt_json
    python benchmarks/fuzz.py --cases 2000 --seed 7 --timeout 10 --workers 2
    python benchmarks/fuzz.py --replay dot_plain/pump/0/122 [--keep DIR]

Cases are the CI suite's (tests/support/fuzz_mutations.py: the demo generators' seeds, each with one
mutation drawn per case), numbered 0..N-1 under a master `--seed`, so any case id printed here can
be replayed alone. Each case runs `registry.collect` in one of `--workers` worker processes; a case
still running after `--timeout` seconds is stopped (an alarm in the worker, and the worker killed
when even that does not come back) and counted as a hang. Printed per format: cases, how many ended
in each outcome (ok / one-line error / multi-line error / library text / traceback / hang /
negative duration or bytes), the slowest case, and up to three case ids per failing outcome.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.fuzz_mutations import Case, make_case, parse_case_id  # noqa: E402
from tests.support.fuzz_outcomes import FAILURES, HANG, OUTCOMES, Outcome, ingest_outcome  # noqa: E402
from tests.support.fuzz_seeds import FORMATS, Seed, build_seeds  # noqa: E402

# A worker whose alarm did not stop the case (a loop inside a C extension) is killed this much later.
_KILL_GRACE_S = 5.0
_SEEDS: dict[str, list[Seed]] = {}


def _case(case_id: str) -> Case:
    """Rebuild a case from its id (`format/master/index`, or `format/mutation/master/index`)."""
    format_name, mutation, master, index = parse_case_id(case_id)
    if not _SEEDS:
        _SEEDS.update(build_seeds())
    return make_case(_SEEDS[format_name], index, master, mutation)


def _worker(connection: Connection, timeout: float) -> None:
    """Run cases sent as ids until told to stop (None); answer (id, kind, seconds, detail)."""
    with tempfile.TemporaryDirectory(prefix="fuzz-worker-") as scratch:
        while (case_id := connection.recv()) is not None:
            case = _case(case_id)
            folder = Path(scratch) / "case"
            try:
                outcome = ingest_outcome(case.write(folder), timeout=timeout)
            finally:
                for path in sorted(folder.rglob("*"), reverse=True):
                    path.rmdir() if path.is_dir() else path.unlink()
            detail = f"[{case.mutation} of {case.seed}] {outcome.detail[:300]}"
            connection.send((case.case_id, outcome.kind, outcome.seconds, detail))


@dataclass
class _Slot:
    """One worker process and the case it is running."""

    process: mp.process.BaseProcess
    connection: Connection
    case_id: str | None = None
    started: float = 0.0


@dataclass
class FormatReport:
    format: str
    counts: Counter[str] = field(default_factory=Counter)
    slowest: tuple[float, str] = (0.0, "")
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, case_id: str, outcome: Outcome) -> None:
        self.counts[outcome.kind] += 1
        self.slowest = max(self.slowest, (outcome.seconds, case_id))
        if outcome.kind in FAILURES and len(self.examples.setdefault(outcome.kind, [])) < 3:
            self.examples[outcome.kind].append(f"{case_id}  {outcome.detail[:160]}")


class Pool:
    """`size` spawned workers; a hung one is killed and replaced (a fork of polars' threads may deadlock)."""

    def __init__(self, size: int, timeout: float) -> None:
        self.timeout = timeout
        self.context = mp.get_context("spawn")
        self.slots = [self._start() for _ in range(size)]

    def _start(self) -> _Slot:
        parent, child = self.context.Pipe()
        process = self.context.Process(target=_worker, args=(child, self.timeout), daemon=True)
        process.start()
        child.close()
        return _Slot(process, parent)

    def run(self, case_ids: list[str], report: FormatReport, progress: bool) -> None:
        pending = list(reversed(case_ids))
        done = 0
        while pending or any(slot.case_id for slot in self.slots):
            for slot in self.slots:
                if slot.case_id is None and pending:
                    slot.case_id, slot.started = pending.pop(), time.perf_counter()
                    slot.connection.send(slot.case_id)
            busy = [slot for slot in self.slots if slot.case_id]
            deadline = min(slot.started for slot in busy) + self.timeout + _KILL_GRACE_S
            ready = wait([slot.connection for slot in busy], timeout=max(deadline - time.perf_counter(), 0.01))
            for slot in busy:
                if slot.connection in ready:
                    try:
                        case_id, kind, seconds, detail = slot.connection.recv()
                    except EOFError:  # the worker died (killed for memory, a crash in C)
                        case_id, kind, seconds, detail = slot.case_id, "traceback", 0.0, "worker process died"
                        self._replace(slot)
                    report.add(case_id, Outcome(kind, seconds, detail))
                elif time.perf_counter() - slot.started > self.timeout + _KILL_GRACE_S:
                    elapsed = time.perf_counter() - slot.started
                    report.add(slot.case_id, Outcome(HANG, elapsed, "killed: the alarm did not stop it"))
                    self._replace(slot)
                else:
                    continue
                slot.case_id = None
                done += 1
                if progress and done % 1000 == 0:
                    print(f"  {report.format}: {done:,} / {len(case_ids):,}", file=sys.stderr, flush=True)

    def _replace(self, slot: _Slot) -> None:
        slot.process.kill()
        slot.process.join()
        fresh = self._start()
        slot.process, slot.connection = fresh.process, fresh.connection

    def close(self) -> None:
        for slot in self.slots:
            slot.connection.send(None)
        for slot in self.slots:
            slot.process.join(timeout=10)
            if slot.process.is_alive():
                slot.process.kill()


def _print(report: FormatReport, seconds: float) -> None:
    cases = sum(report.counts.values())
    outcomes = ", ".join(f"{kind} {report.counts[kind]:,}" for kind in OUTCOMES)
    print(f"{report.format}: {cases:,} cases in {seconds:.0f} s: {outcomes}")
    print(f"  slowest: {report.slowest[0]:.2f} s  {report.slowest[1]}")
    for kind, examples in report.examples.items():
        for example in examples:
            print(f"  {kind}: {example}")


def _replay(case_id: str, keep: Path | None, timeout: float) -> None:
    case = _case(case_id)
    with tempfile.TemporaryDirectory(prefix="fuzz-replay-") as scratch:
        folder = keep or Path(scratch)
        paths = case.write(folder)
        outcome = ingest_outcome(paths, timeout=timeout)
    print(f"{case.case_id} (seed {case.seed}, mutation {case.mutation}): {outcome.kind} in {outcome.seconds:.2f} s")
    print(f"  files: {', '.join(str(p) for p in paths)}" + ("" if keep else " (removed; --keep DIR keeps them)"))
    if outcome.detail:
        print(f"  {outcome.detail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000, help="cases per format (default 1000)")
    parser.add_argument("--formats", default=",".join(FORMATS), help=f"comma-separated, of {', '.join(FORMATS)}")
    parser.add_argument("--seed", type=int, default=0, help="master seed: same seed, same cases")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds before a case counts as a hang")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--replay", metavar="CASE_ID", help="rerun one case in this process and print it")
    parser.add_argument("--keep", type=Path, help="with --replay: write the case's files here and keep them")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args()
    if args.replay:
        _replay(args.replay, args.keep, args.timeout)
        return
    formats = [name.strip() for name in args.formats.split(",") if name.strip()]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        parser.error(f"unknown formats {unknown}; known: {', '.join(FORMATS)}")
    pool = Pool(args.workers, args.timeout)
    started_all = time.perf_counter()
    failing = 0
    try:
        for format_name in formats:
            report = FormatReport(format_name)
            started = time.perf_counter()
            case_ids = [f"{format_name}/{args.seed}/{index}" for index in range(args.cases)]
            pool.run(case_ids, report, not args.quiet)
            _print(report, time.perf_counter() - started)
            failing += sum(report.counts[kind] for kind in FAILURES)
    finally:
        pool.close()
    print(f"all formats: {time.perf_counter() - started_all:.0f} s, {failing:,} cases broke the contract")
    sys.exit(1 if failing else 0)


if __name__ == "__main__":
    main()
