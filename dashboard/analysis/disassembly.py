"""A compiled program's disassembly: `objdump -d` of its object file, as tinygrad's VIZ shows it for CPU
programs (`helpers.cpu_objdump`). Where objdump is not installed, or the bytes are not an object file it
reads (a GPU binary), the answer says so instead of a listing.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

TIMEOUT_S = 20.0
MAX_CHARS = 2_000_000  # a listing past this is cut (with a note): one kernel's is a few kB


@dataclass(frozen=True)
class Disassembly:
    text: str | None  # the listing; None when there is none
    note: str  # how it was made, or why there is none


def disassemble(binary: bytes | None) -> Disassembly:
    if not binary:
        return Disassembly(None, "this program has no compiled binary in the file")
    objdump = shutil.which("objdump")
    if objdump is None:
        return Disassembly(None, "objdump is not installed on the server (binutils): no disassembly")
    with tempfile.TemporaryDirectory(prefix="dashboard-objdump-") as folder:
        path = Path(folder) / "program.o"
        path.write_bytes(binary)
        try:
            done = subprocess.run([objdump, "-d", str(path)], capture_output=True, text=True, timeout=TIMEOUT_S,
                                  errors="replace")
        except subprocess.TimeoutExpired:
            return Disassembly(None, f"objdump took longer than {TIMEOUT_S:.0f} s")
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no output"])[-1].replace(str(path), "the binary")
        return Disassembly(None, f"objdump cannot read this binary ({len(binary):,} bytes): {reason}")
    text = done.stdout.replace(str(path), "program.o")
    if len(text) > MAX_CHARS:
        return Disassembly(text[:MAX_CHARS], f"objdump -d, cut at {MAX_CHARS:,} characters")
    return Disassembly(text, f"objdump -d · {len(binary):,} bytes")
