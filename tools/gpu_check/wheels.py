"""The device side's installs, with no network: the carried wheels the machine lacks, and libcupti's folder.

    python3 tools/gpu_check/wheels.py install tools/gpu_check/wheels /tmp/gpu-check/site-packages
    python3 tools/gpu_check/wheels.py cupti-lib     # prints the folder holding libcupti.so, if found

A wheel is installed only when its distribution is not importable already, so the machine's own packages
(numpy, pyarrow, cuda-bindings that torch brought) are never shadowed by ours. The target's name ends in
`site-packages` on purpose: the capture's stack recorder treats such folders as library code and skips
them, as it would an installed polars. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import platform
import re
import subprocess
import sys
import zipfile
from pathlib import Path


def distribution(wheel: Path) -> str:
    """The distribution a wheel installs, normalised (`cupti_python-13.0.1-...whl` -> `cupti-python`)."""
    return re.sub(r"[-_.]+", "-", wheel.name.split("-", 1)[0]).lower()


def installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


# The packages whose versions a summary reports.
REPORTED = ("torch", "triton", "polars", "msgspec", "pyarrow", "cupti-python", "nvidia-cuda-cupti", "cuda-bindings")


def installed_versions(names: tuple[str, ...] = REPORTED) -> dict[str, str | None]:
    """This Python's version and the installed version of each package (None: not installed)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def missing(folder: Path) -> list[Path]:
    return [wheel for wheel in sorted(folder.glob("*.whl")) if not installed(distribution(wheel))]


def install(folder: Path, target: Path) -> int:
    wanted = missing(folder)
    present = sorted({distribution(w) for w in folder.glob("*.whl")} - {distribution(w) for w in wanted})
    if present:
        print(f"wheels: already installed here, not carried ones: {', '.join(present)}")
    if not wanted:
        return 0
    print(f"wheels: installing {', '.join(w.name for w in wanted)} into {target}")
    if importlib.util.find_spec("pip") is None:
        # A venv made without pip (uv makes them so): these wheels are plain archives of packages.
        target.mkdir(parents=True, exist_ok=True)
        for wheel in wanted:
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(target)
        return 0
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
               "--no-cache-dir", "--upgrade", "--target", str(target), *map(str, wanted)]
    return subprocess.run(command, check=False).returncode


def cupti_library() -> Path | None:
    """The folder of a libcupti.so under this Python's paths (nvidia-cuda-cupti's wheel puts it there)."""
    for entry in map(Path, sys.path):
        nvidia = entry / "nvidia"
        if not nvidia.is_dir():
            continue
        for library in sorted(nvidia.glob("*/lib/libcupti.so*")):
            return library.parent
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    install_parser = commands.add_parser("install")
    install_parser.add_argument("folder", type=Path)
    install_parser.add_argument("target", type=Path)
    commands.add_parser("cupti-lib")
    args = parser.parse_args(argv)
    if args.command == "install":
        return install(args.folder, args.target)
    folder = cupti_library()
    if folder is None:
        return 1
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
