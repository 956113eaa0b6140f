"""The device check: our live capture against the PyTorch profiler on a real GPU, in minutes.

    bash tools/gpu_check/run.sh               # installs what the machine lacks, then runs this
    python3 tools/gpu_check/check.py --out DIR [--work DIR] [--steps 20] [--deadline 480]
    python3 tools/gpu_check/check.py --dry-run

One small training loop (model.py) runs in four processes: without a profiler and under a
`CaptureSession`; under `python -m dashboard.capture`; under `torch.profiler` with the allocator's
history on; and a Triton kernel is compiled with its MLIR passes dumped. The dashboard ingests the trace,
the snapshot and the dump (`python -m dashboard.app ingest`), and `verdicts.py` compares the runs.
Everything a user or the device tool takes back lands in --out: summary.json (every stage's time and
error, every check with its bound and verdict), the Kineto trace, the snapshot, the MLIR dump and our
two runs as archives, each at most 16 MiB. Whatever fails, the summary is written.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script: the package lives two folders up
    sys.path.insert(0, str(REPO))

from tools.gpu_check import carried  # noqa: E402 (after the path is set)
from tools.gpu_check.stages import StageFailed, Stages, one_line  # noqa: E402
from tools.gpu_check.wheels import installed_versions  # noqa: E402

HERE = Path(__file__).resolve().parent
SUMMARY = "summary.json"
TRACE = "kineto.pt.trace.json.gz"
SNAPSHOT = "memory_snapshot.pickle"
DUMP = "triton_mlir_dump.txt"
CAPTURE_TAR = "capture_run.tar.gz"
SESSION_TAR = "session_run.tar.gz"
ARTIFACT_LIMIT = 16 * 1024 * 1024  # the device tool brings back files up to 16 MiB

# (stage, what it does, seconds it may take): the plan the dry run prints and the stages run in order.
PLAN = (
    ("loop", "the loop without profiler, under a CaptureSession, without again (workload.py --mode plain)", 150),
    ("capture", "the loop under `python -m dashboard.capture` (layers, FLOPs, stacks: the defaults)", 150),
    ("overhead", "each feature's cost: blocks without capture and per feature set (CUPTI only, + layers, + layers "
     "full, + FLOPs, stacks, the command's defaults), interleaved (workload.py --mode overhead)", 150),
    ("kineto", "the loop under torch.profiler(profile_memory=True) + allocator history and snapshot", 180),
    ("triton", "a Triton matmul compiled for this GPU with MLIR_ENABLE_DUMP=1, checked against torch", 150),
    ("ingest-trace", f"python -m dashboard.app ingest {TRACE}", 120),
    ("ingest-snapshot", f"python -m dashboard.app ingest {SNAPSHOT}", 90),
    ("ingest-dump", f"python -m dashboard.app ingest {DUMP}", 90),
    ("compare", "capture and session runs vs Kineto per step; overhead; CUDA peaks; Triton target and steps", 60),
    ("artifacts", f"our runs archived as {CAPTURE_TAR} and {SESSION_TAR}; every file in --out kept <= 16 MiB", 30),
)
BUDGET = {name: seconds for name, _, seconds in PLAN}


def median_ms(times: list[float] | None) -> float | None:
    return round(statistics.median(times) * 1e3, 3) if times else None


class DeviceCheck:
    """The stages of one check and what they found; `summary()` is the JSON written at the end."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: Path = args.out
        self.work: Path = args.work
        self.data = self.work / "data"
        self.stages = Stages(args.deadline)
        self.results: dict[str, dict[str, Any]] = {}  # the JSON each stage's process wrote, by stage
        self.runs: dict[str, str] = {}  # run ids by what they hold
        self.checks: list[dict[str, Any]] = []
        self.artifacts: dict[str, int] = {}
        self.cupti = "not tried"
        self.interrupted: str | None = None
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])}

    # ---- the stages ------------------------------------------------------------
    def run_all(self) -> None:
        cuda = self.args.device.startswith("cuda")
        run = self.stages.run
        run("loop", self.loop)
        run("capture", self.capture)
        run("overhead", lambda: self.workload("overhead", "--rounds", str(self.args.overhead_rounds),
                                              "--steps-per-block", str(self.args.steps_per_block)))
        run("kineto", self.kineto)
        run("triton", self.triton if cuda else self._no_gpu("a Triton compile for this GPU"))
        run("ingest-trace", lambda: self.ingest("kineto", self.out / TRACE, BUDGET["ingest-trace"]))
        run("ingest-snapshot", lambda: self.ingest("snapshot", self.out / SNAPSHOT, BUDGET["ingest-snapshot"]))
        run("ingest-dump", lambda: self.ingest("triton", self.out / DUMP, BUDGET["ingest-dump"]))
        run("compare", self.compare, reserve=False)
        run("artifacts", self.keep_artifacts, reserve=False)

    @staticmethod
    def _no_gpu(what: str) -> Any:
        def stage() -> None:
            raise StageFailed(f"skipped: {what} needs a CUDA device")

        return stage

    def workload(self, mode: str, *extra: str, prefix: tuple[str, ...] = ()) -> dict[str, Any]:
        out = self.work / f"{mode}.json"
        out.unlink(missing_ok=True)
        argv = [*prefix, str(HERE / "workload.py"), "--mode", mode, "--out", str(out), "--device", self.args.device,
                "--size", self.args.size, "--steps", str(self.args.steps), "--warmup", str(self.args.warmup), *extra]
        stdout = self.stages.command([self.args.python, *argv], BUDGET[mode if mode != "plain" else "loop"],
                                     self.env, REPO)
        self.results[mode] = json.loads(out.read_text(encoding="utf-8"))
        return {"stdout": stdout, **self.results[mode]}

    def loop(self) -> None:
        result = self.workload("plain", "--session-data", str(self.data))
        if result.get("session_run"):
            self.runs["session"] = result["session_run"]
            self.cupti = "available"
        if result.get("session_error"):
            self.cupti = result["session_error"]
            raise StageFailed(f"plain steps timed; the CaptureSession could not start: {result['session_error']}")

    def capture(self) -> None:
        prefix = ("-m", "dashboard.capture", "--name", "gpu-check", "--data", str(self.data), "--")
        try:
            result = self.workload("capture", prefix=prefix)
        except StageFailed as failed:
            if "CUPTI unavailable" in str(failed):
                self.cupti = str(failed).split(": ", 1)[-1]
            raise
        self.runs["capture"] = result["stdout"].strip().splitlines()[-1]
        if not result.get("captured"):
            raise StageFailed("the script ran without an active capture session")

    def kineto(self) -> None:
        (self.out / TRACE).unlink(missing_ok=True)
        snapshot = ("--snapshot", str(self.out / SNAPSHOT)) if self.args.device.startswith("cuda") else ()
        result = self.workload("kineto", "--trace", str(self.out / TRACE), *snapshot)
        if result.get("snapshot_error"):
            raise StageFailed(f"trace written; no snapshot: {result['snapshot_error']}")

    def triton(self) -> None:
        out = self.work / "triton.json"
        # Always compile (a cached kernel prints no dump); Triton's own cache dir is kept, so its launcher
        # and driver stubs, built with the machine's C compiler, are reused when they are there.
        env = {**self.env, "MLIR_ENABLE_DUMP": "1", "TRITON_ALWAYS_COMPILE": "1"}
        self.stages.command([self.args.python, str(HERE / "triton_matmul.py"), "--out", str(out)], BUDGET["triton"],
                            env, REPO, stderr_to=self.out / DUMP)
        self.results["triton"] = json.loads(out.read_text(encoding="utf-8"))

    def ingest(self, what: str, path: Path, wanted_s: float) -> None:
        if not path.is_file():
            raise StageFailed(f"skipped: {path.name} was not written")
        argv = [self.args.python, "-m", "dashboard.app", "ingest", str(path), "--data", str(self.data),
                "--name", f"gpu-check-{what}"]
        stdout = self.stages.command(argv, wanted_s, self.env, REPO)
        self.runs[what] = stdout.strip().splitlines()[-1]

    def compare(self) -> None:
        evidence, checks = self.work / "evidence.json", self.work / "checks.json"
        missing = {r.name: r.error for r in self.stages.results if not r.ok}
        evidence.write_text(json.dumps({"data": str(self.data), "runs": self.runs, "results": self.results,
                                        "dump": str(self.out / DUMP), "missing": missing}), encoding="utf-8")
        checks.unlink(missing_ok=True)
        self.stages.command([self.args.python, "-m", "tools.gpu_check.verdicts", str(evidence), str(checks)],
                            BUDGET["compare"], self.env, REPO, final=True)
        self.checks = json.loads(checks.read_text(encoding="utf-8"))
        for check in self.checks:
            mark = {True: "pass", False: "FAIL", None: "n/a "}[check["passed"]]
            print(f"  {mark} {check['name']}: {check['value']}  [{check['bound']}] {check['detail']}", flush=True)

    def keep_artifacts(self) -> None:
        for key, name in (("capture", CAPTURE_TAR), ("session", SESSION_TAR)):
            if key in self.runs:
                with tarfile.open(self.out / name, "w:gz") as archive:
                    archive.add(self.data / "runs" / self.runs[key], arcname=self.runs[key])
        dropped = []
        for path in sorted(p for p in self.out.iterdir() if p.is_file() and p.name != SUMMARY):
            name = path.name
            if path.stat().st_size > ARTIFACT_LIMIT and not name.endswith(".gz"):
                path = self._gzipped(path)  # an MLIR dump or a snapshot shrinks 10x; the dashboard reads .gz
            size = path.stat().st_size
            if size > ARTIFACT_LIMIT:
                dropped.append(f"{name} ({size / 2**20:.1f} MiB compressed)")
                path.unlink()  # it would not come back, and might keep the rest from coming back
            else:
                self.artifacts[path.name] = size
        if dropped:
            raise StageFailed(f"over {ARTIFACT_LIMIT / 2**20:g} MiB, removed: {', '.join(dropped)}")

    @staticmethod
    def _gzipped(path: Path) -> Path:
        packed = path.with_name(path.name + ".gz")
        with open(path, "rb") as source, gzip.open(packed, "wb", compresslevel=6) as target:
            shutil.copyfileobj(source, target, 1 << 20)
        path.unlink()
        return packed

    # ---- the summary -----------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        verdicts = [c["passed"] for c in self.checks]
        stages = self.stages.as_dicts()
        # What the stages' own Python reported (the loop's process), else this process's view.
        facts = (self.results.get("plain") or self.results.get("kineto") or {}).get("facts") or {}
        return {
            "ok": bool(verdicts) and all(v is True for v in verdicts) and all(s["ok"] for s in stages)
            and self.interrupted is None,
            "passed": verdicts.count(True),
            "failed": verdicts.count(False),
            "not_judged": verdicts.count(None),
            "cupti": self.cupti,
            "interrupted": self.interrupted,
            "device": {k: v for k, v in facts.items() if k != "versions"},
            "versions": facts.get("versions") or installed_versions(),
            "step_ms": self._step_ms(),
            "stages": stages,
            "checks": self.checks,
            "runs": self.runs,
            "data": str(self.data),
            "artifacts": self.artifacts,
            "elapsed_s": round(time.monotonic() - self.stages.started, 1),
        }

    def _step_ms(self) -> dict[str, float | None]:
        """Median step times (ms): no profiler, CaptureSession, the capture command, torch.profiler, and
        per feature set of the overhead stage (`none` is its own baseline, timed between them)."""
        get = self.results.get
        features = get("overhead", {}).get("features") or {}
        return {"plain": median_ms(get("plain", {}).get("plain_s")),
                "session": median_ms(get("plain", {}).get("session_s")),
                "capture": median_ms(get("capture", {}).get("steps_s")),
                "kineto": median_ms(get("kineto", {}).get("steps_s")),
                "features": {name: median_ms(result.get("steps_s")) for name, result in features.items()}}

    def write_summary(self) -> dict[str, Any]:
        summary = self.summary()
        partial = self.out / (SUMMARY + ".partial")
        partial.write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
        partial.replace(self.out / SUMMARY)
        return summary


def dry_run(args: argparse.Namespace) -> None:
    print(f"gpu check, dry run: what `bash tools/gpu_check/run.sh` does (out: {args.out}, "
          f"deadline {args.deadline:.0f} s, {args.steps} timed steps, size {args.size})")
    print(" 0. install the carried wheels this Python lacks (tools/gpu_check/wheels/) into "
          "/tmp/gpu-check/site-packages")
    for number, (name, what, seconds) in enumerate(PLAN, start=1):
        print(f"{number:2d}. {name}: {what} (at most {seconds} s)")
    print(carried.carried().describe())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or REPO / "gpu-check-out"))
    parser.add_argument("--work", type=Path, help="runs and scratch files (default: a new temporary folder)")
    parser.add_argument("--device", help="cuda or cpu (default: cuda when torch sees one)")
    parser.add_argument("--size", default="small", help="model size in model.py (small, tiny)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per block")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--overhead-rounds", type=int, default=16, help="overhead stage: rounds of one block a variant")
    parser.add_argument("--steps-per-block", type=int, default=4, help="overhead stage: timed steps per block")
    parser.add_argument("--deadline", type=float, default=480.0, help="seconds for the whole check")
    parser.add_argument("--python", default=sys.executable, help="the Python the stages run with")
    parser.add_argument("--dry-run", action="store_true", help="print the stages and the carried size, run nothing")
    return parser.parse_args(argv)


def _device(python: str) -> str:
    """cuda when the stages' torch sees a GPU (asked in a child: this process never imports torch)."""
    import subprocess

    probe = "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    except (OSError, subprocess.SubprocessError):
        return "cpu"
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "cpu"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.dry_run:
        dry_run(args)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    args.work = args.work or Path(tempfile.mkdtemp(prefix="gpu-check-"))
    args.work.mkdir(parents=True, exist_ok=True)
    check = DeviceCheck(args)

    def stop(signum: int, _frame: Any) -> None:
        check.interrupted = signal.Signals(signum).name
        raise SystemExit(128 + signum)  # unwinds to the `finally` below, which writes the summary

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        args.device = args.device or _device(args.python)
        print(f"gpu check: device {args.device}, out {args.out}, work {args.work}", flush=True)
        check.run_all()
    except SystemExit:
        raise
    except BaseException as exc:  # a defect outside any stage: still a summary, with the error
        check.interrupted = f"{type(exc).__name__}: {one_line(str(exc))}"
    finally:
        summary = check.write_summary()
        print("\n" + json.dumps(summary, indent=1, default=str))
        print(f"\ngpu check: {summary['passed']} passed, {summary['failed']} failed, {summary['not_judged']} not "
              f"judged; summary in {args.out / SUMMARY}; runs in {check.data}")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
