"""Run a Python script under live capture, like `python -m cProfile script.py`.

    dashboard capture [--name N] [--data DIR] -- train.py --epochs 1

The script runs as `__main__` with `sys.argv = [script, *args]` and its folder
first on `sys.path`. The run is written even when the script raises or exits
non-zero (the exception is reported on stderr and the command exits
non-zero); its id is printed on stdout. Without a usable CUPTI the command
prints one line, `CUPTI unavailable: <reason>`, and exits 3.

DDP: run the command once per rank with `--staging DIR` (each writes its
partial there), then `dashboard capture-merge DIR` writes one run with a rank
column.
"""

from __future__ import annotations

import runpy
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import click

from dashboard.capture import run_output
from dashboard.capture.cupti_backend import CaptureBackend
from dashboard.capture.session import CaptureError, CaptureSession, CaptureUnavailable
from dashboard.capture.stacks import StackLimits

EXIT_SCRIPT_FAILED = 1
EXIT_CAPTURE_UNAVAILABLE = 3


def stacks_by_default() -> bool:
    """Python stacks are on by default only where they are cheap: Python 3.12+ (sys.monitoring switches
    library code off after its first call). On 3.11 every Python call and return goes through
    sys.setprofile, ~20-30 % of a launch-bound step, so there they are asked for with --stacks."""
    return sys.version_info >= (3, 12)


def command_defaults() -> dict[str, Any]:
    """The CaptureSession settings `dashboard capture` runs a script with when given no option."""
    return {"layers": None, "flops": True, "flop_steps": 2, "stacks": stacks_by_default()}


LAYER_CHOICES = {"forward": "forward", "full": "full", "off": False}


class ScriptFailed(Exception):
    """The captured script raised or exited non-zero; its run was written all the same."""

    def __init__(self, run_id: str, exit_code: int, error: BaseException | None, script: Path) -> None:
        self.run_id = run_id
        self.exit_code = exit_code
        self.error = error
        self.script = script
        what = f"{type(error).__name__}: {error}" if error is not None else f"exit status {exit_code}"
        super().__init__(f"{script} failed ({what}); the capture was written as {run_id}")

    def script_traceback(self) -> str:
        """The traceback from the script's own frames on (not the capture machinery's)."""
        error = self.error
        if error is None:
            return ""
        tb: TracebackType | None = error.__traceback__
        script = str(self.script)
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        return "".join(traceback.format_exception(type(error), error, tb or error.__traceback__))


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints it and exits 1
    return 1


def _run_as_main(script: Path, args: Sequence[str]) -> tuple[int, BaseException | None]:
    """Run `script` as `python script args` would; returns (exit status, exception)."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.parent.resolve()))
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc)
        return code, (exc if code else None)
    except KeyboardInterrupt as exc:
        return 130, exc
    except BaseException as exc:
        return 1, exc
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
    return 0, None


def capture_script(
    script: Path | str,
    args: Sequence[str] = (),
    name: str | None = None,
    data_dir: Path | str = "data",
    backend: CaptureBackend | None = None,
    *,
    stacks: bool | StackLimits | None = None,
    layers: bool | str | None = None,
    flops: bool = True,
    flop_steps: int | None = 2,
    staging: Path | str | None = None,
) -> str:
    """Capture one run of a script; returns the run id (or, with `staging`, the rank partial's path).

    Raises CaptureUnavailable / CaptureError before the script runs when
    capture cannot start, and ScriptFailed (carrying the run id) after the run
    was written when the script raised or exited non-zero.
    """
    script_path = Path(script)
    if stacks is None:
        stacks = stacks_by_default()
    if not script_path.is_file():
        raise FileNotFoundError(f"{script_path}: no such script")
    session = CaptureSession(
        name or script_path.stem, backend=backend, layers=layers, flops=flops, flop_steps=flop_steps, stacks=stacks
    )
    session.start()
    try:
        exit_code, error = _run_as_main(script_path, list(args))
    finally:
        session.stop()
    failed = exit_code != 0
    metadata = {
        "script": {
            "path": str(script_path.resolve()),
            "argv": [str(script_path), *args],
            "exit_code": exit_code,
            "error": f"{type(error).__name__}: {error}" if error is not None else None,
        }
    }
    warnings = [f"the script failed: {metadata['script']['error'] or f'exit status {exit_code}'}"] if failed else []
    if staging is not None:
        session.warnings.extend(warnings)
        ident = str(run_output.write_partial(session, Path(staging), metadata=metadata))
    else:
        ident = run_output.write_run(session, data_dir, name or script_path.stem, metadata=metadata,
                                     extra_warnings=warnings)
    if failed:
        raise ScriptFailed(ident, exit_code, error, script_path)
    return ident


def _fake_backend() -> CaptureBackend:
    from dashboard.capture.cupti_fake import FakeCuptiBackend

    return FakeCuptiBackend()


@click.command(
    "capture",
    context_settings={"allow_interspersed_args": False},
    options_metavar="[--name N] [--data DIR] [OPTIONS] --",
)
@click.option("--name", "-n", metavar="N", help="Run name (default: the script's name).")
@click.option(
    "--data",
    "data_dir",
    metavar="DIR",
    envvar="DASHBOARD_DATA",
    default="data",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Data folder the run is written to (env DASHBOARD_DATA).",
)
@click.option(
    "--stacks/--no-stacks",
    default=None,
    help="Record Python call stacks (default: on with Python 3.12+, where they cost ~nothing; off on 3.11).",
)
@click.option(
    "--layers",
    type=click.Choice(sorted(LAYER_CHOICES)),
    default=None,
    help="torch module hooks: forward = a range per module call forward, one per model call backward (the "
    "default when torch is installed); full = a backward range per module call too (costs more, see README); off.",
)
@click.option("--no-layers", "no_layers", is_flag=True, help="Same as --layers off.")
@click.option("--flops/--no-flops", default=True, show_default=True, help="Count FLOPs per layer and pass.")
@click.option(
    "--flop-steps",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Steps whose FLOPs are counted (later ones reuse them by input shapes); 0 = every step.",
)
@click.option(
    "--staging",
    type=click.Path(file_okay=False, path_type=Path),
    help="DDP: write this rank's capture into DIR; merge later with capture-merge.",
)
@click.option("--fake-gpu", is_flag=True, hidden=True, help="Simulated CUPTI (tests and demos).")
@click.argument("script", metavar="SCRIPT.py", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("script_args", metavar="[ARGS]...", nargs=-1, type=click.UNPROCESSED)
def capture_command(
    name: str | None,
    data_dir: Path,
    stacks: bool | None,
    layers: str | None,
    no_layers: bool,
    flops: bool,
    flop_steps: int,
    staging: Path | None,
    fake_gpu: bool,
    script: Path,
    script_args: tuple[str, ...],
) -> None:
    """Run SCRIPT.py under live CUPTI capture and write the run (its id goes to stdout)."""
    try:
        ident = capture_script(
            script,
            script_args,
            name=name,
            data_dir=data_dir,
            backend=_fake_backend() if fake_gpu else None,
            stacks=stacks,
            layers=False if no_layers else (LAYER_CHOICES[layers] if layers is not None else None),
            flops=flops,
            flop_steps=flop_steps or None,
            staging=staging,
        )
    except (CaptureUnavailable, CaptureError) as exc:
        click.echo(str(exc), err=True)
        raise SystemExit(EXIT_CAPTURE_UNAVAILABLE) from None
    except ScriptFailed as failure:
        click.echo(failure.script_traceback(), err=True, nl=False)
        click.echo(f"capture: {failure}", err=True)
        click.echo(failure.run_id)
        raise SystemExit(failure.exit_code or EXIT_SCRIPT_FAILED) from None
    click.echo(ident)


@click.command("capture-merge")
@click.argument("staging", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--name", "-n", default="capture", show_default=True, help="Run name.")
@click.option(
    "--data",
    "data_dir",
    envvar="DASHBOARD_DATA",
    default="data",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
)
def merge_command(staging: Path, name: str, data_dir: Path) -> None:
    """Merge the per-rank captures in STAGING into one run (its id goes to stdout)."""
    from dashboard.capture.rank_merge import write_merged_run
    from dashboard.collectors.base import IngestError

    try:
        run_id = write_merged_run(staging, data_dir, name)
    except IngestError as exc:
        click.echo(f"capture-merge: {exc}", err=True)
        raise SystemExit(1) from None
    click.echo(run_id)


if __name__ == "__main__":
    capture_command(prog_name="dashboard capture")
