"""The rank a file's name declares, by explicit patterns only (one rule for every collector).

Two patterns, case-insensitive (README, "Ranks from file names"):

1. `rank` followed by its number, with `-`, `_` or nothing between, the word `rank` not glued to a
   letter before it: `job_rank-3.json`, `rank_3.pickle`, `w_rank3of8.json`, `trace.rank12.sqlite`.
2. A numeric field ending the name's first dotted part, set off by `_` or `-`: `profile_3.nsys-rep`,
   `trace-12.sqlite`, `snapshot_0.pickle` (what `nsys -o profile_%q{RANK}` and most launch scripts
   write). Not in the PyTorch profiler handler's own names, `<host>_<pid>.<time ns>.pt.trace.json`,
   where that field is a process id.

Never a bare trailing digit of a user's own word: `foo_report1.sqlite`, `saxpy_perlmutter6.sqlite`,
`report3.sqlite` declare no rank; the trace's own rank fields decide, else rank 0.
"""

from __future__ import annotations

import re
from pathlib import Path

MAX_RANK_DIGITS = 6  # a trailing field longer than this is an id or a time, not a rank
_RANK_WORD = re.compile(r"(?:^|[^a-z])rank[-_]?(\d+)", re.IGNORECASE)
_TRAILING_FIELD = re.compile(rf"[_-](\d{{1,{MAX_RANK_DIGITS}}})$")
# torch.profiler.tensorboard_trace_handler: f"{socket.gethostname()}_{os.getpid()}.{time.time_ns()}.pt.trace.json"
_PROFILER_HANDLER = re.compile(r"^.+_\d+\.\d{10,}\.pt\.trace\.json(?:\.gz)?$", re.IGNORECASE)


def rank_from_name(path: Path | str) -> int | None:
    """The rank the file name declares by pattern 1 or 2 above, else None."""
    name = Path(path).name
    match = _RANK_WORD.search(name)
    if match:
        return int(match.group(1))
    if _PROFILER_HANDLER.match(name):
        return None
    first_part = name.split(".", 1)[0]
    match = _TRAILING_FIELD.search(first_part)
    return int(match.group(1)) if match else None
