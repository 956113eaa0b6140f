"""What travels to the GPU machine, and whether it fits: the working tree plus the downloaded wheels.

    python3 tools/gpu_check/carried.py [--limit-mib 60]

The device tool copies the tracked files and the untracked files git does not ignore, plus the ignored
paths named in its `carry` list (here: the wheels folder), 64 MiB in all; the check keeps 4 MiB of that
for safety. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WHEELS = REPO / "tools" / "gpu_check" / "wheels"
LIMIT_MIB = 60.0
MIB = 1024 * 1024


@dataclass(frozen=True)
class Carried:
    tree_bytes: int
    wheel_bytes: int | None  # None: no wheels folder (prepare.sh has not run)
    wheels: list[str]
    counted_by: str  # how the tree's files were listed

    @property
    def total_bytes(self) -> int:
        return self.tree_bytes + (self.wheel_bytes or 0)

    def describe(self, limit_mib: float = LIMIT_MIB) -> str:
        wheels = (f"wheels {self.wheel_bytes / MIB:.1f} MiB ({len(self.wheels)} files)" if self.wheel_bytes is not None
                  else "wheels: none (run tools/gpu_check/prepare.sh)")
        return (f"carried: tree {self.tree_bytes / MIB:.1f} MiB ({self.counted_by}) + {wheels} = "
                f"{self.total_bytes / MIB:.1f} MiB (limit {limit_mib:g} MiB)")


def tree_files(repo: Path = REPO) -> tuple[list[Path], str]:
    """The files the device tool copies: git's tracked and untracked-but-not-ignored files."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=repo, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        # No git (the copy on the device has no .git): every file but caches, an upper bound.
        files = [p for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts and "__pycache__" not in p.parts
                 and WHEELS not in p.parents]
        return files, "no git: every file counted"
    names = sorted({name for name in listed.decode("utf-8", "surrogateescape").split("\0") if name})
    return [repo / name for name in names], "git ls-files"


def carried(repo: Path = REPO, wheels: Path = WHEELS) -> Carried:
    files, counted_by = tree_files(repo)
    # A deleted-but-tracked file is listed yet absent: it does not travel.
    tree = sum(path.stat().st_size for path in files if path.is_file() and not path.is_symlink())
    found = sorted(wheels.glob("*.whl")) if wheels.is_dir() else []
    return Carried(tree, sum(p.stat().st_size for p in found) if wheels.is_dir() else None,
                   [p.name for p in found], counted_by)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-mib", type=float, default=LIMIT_MIB)
    args = parser.parse_args(argv)
    result = carried()
    print(result.describe(args.limit_mib))
    return 0 if result.total_bytes <= args.limit_mib * MIB else 1


if __name__ == "__main__":
    sys.exit(main())
