"""Finding the planner's graph blocks in files and logs, and grouping them per kernel compile.

A dump file holds exactly the log text of one block (header and footer lines
around the `digraph`), a debug log holds many blocks among IR dumps and other
planner output. Either way the block is cut from the exact `digraph <Name> {`
line to the first following line that is just `}`, and only that is parsed.

Grouping follows the emitter: one `doMemoryPlanner` run dumps SMEM liveness
(only under SMEM allocator 0), then the combined graph, then TMEM liveness, all
numbered by one process-wide counter. So a new group starts when a kind repeats
within the current group, or when an SMEM graph arrives after anything else.
That also keeps the upstream user doc's order (smem, tmem, combined) together.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dashboard.collectors.dot.graph import DotSyntaxError

_BLOCK_START = re.compile(r"^digraph (SmemBufferLiveness|TmemBufferLiveness|CombinedGraph) \{[ \t]*$", re.M)
_BLOCK_END = re.compile(r"^\}[ \t]*$", re.M)
_KIND_OF = {"SmemBufferLiveness": "smem", "CombinedGraph": "combined", "TmemBufferLiveness": "tmem"}
# The path runs to the end of its line (trailing blanks are stripped in code): a lazy `.*?` followed by
# `\s*$` retried the blanks from every position, quadratic in a long line of spaces.
_DUMPED = re.compile(r"^Dumped (SMEM liveness|combined graph|TMEM liveness) to: (?P<path>\S[^\n]*+)", re.M)
_DUMPED_KIND = {"SMEM liveness": "smem", "combined graph": "combined", "TMEM liveness": "tmem"}
_DUMP_NAME = re.compile(r"^(?P<kind>smem_liveness|combined_graph|tmem_liveness)_(?P<counter>\d+)\.dot$")
_NAME_KIND = {"smem_liveness": "smem", "combined_graph": "combined", "tmem_liveness": "tmem"}
# Blanks within the line only: `^\s*` crossed newlines, rescanning a run of blank lines from each of them.
_KERNEL = re.compile(r"^[^\S\n]*+tt\.func\b[^@\n]*+@(?P<name>[\w.$]++)", re.M)


@dataclass
class Block:
    """One planner graph's text, where it came from, and its place in the dump order."""

    kind: str  # smem / combined / tmem
    text: str  # from the `digraph` line through the closing `}`
    source: Path
    line: int  # 1-based line of the `digraph` line in the source
    end_offset: int  # character offset just past the block in the source text
    start_offset: int
    counter: int | None = None  # the dump counter N of `<kind>_<N>.dot`, when known
    dumped_to: str | None = None  # the `Dumped ... to:` path a log prints after the block
    kernel: str | None = None  # the `tt.func @name` dumped before the block, if the log has one


@dataclass
class Group:
    """The graphs of one kernel compile."""

    name: str
    blocks: list[Block] = field(default_factory=list)
    from_log: bool = False


def normalise_text(data: bytes) -> str:
    """Decoded text with Windows line ends folded, so `^}$` matches however the log was saved."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n")


def find_blocks(text: str, source: Path) -> tuple[list[Block], list[str]]:
    """Every planner block in `text`, in order, plus problems with truncated ones.

    A block without its closing `}` line (a crash or a cut log) raises
    DotSyntaxError when it is the only block; among others it is reported and
    left out, because the other blocks are still whole.
    """
    starts = list(_BLOCK_START.finditer(text))
    blocks: list[Block] = []
    problems: list[str] = []
    line, last = 1, 0
    for position, start in enumerate(starts):
        line += text.count("\n", last, start.start())
        last = start.start()
        limit = starts[position + 1].start() if position + 1 < len(starts) else len(text)
        end = _BLOCK_END.search(text, start.end(), limit)
        if end is None:
            message = (f"the `{start.group(0).strip()}` block has no closing `}}` line "
                       "(truncated file or interrupted dump)")
            if len(starts) == 1:
                raise DotSyntaxError(line, message)
            problems.append(f"line {line}: {message}; left out")
            continue
        block = Block(_KIND_OF[start.group(1)], text[start.start():end.end()], source, line, end.end(),
                      start.start())
        dumped = _DUMPED.search(text, end.end(), limit)
        if dumped is not None and _DUMPED_KIND[dumped.group(1)] == block.kind:
            block.dumped_to = dumped["path"].rstrip()
            block.counter = _counter_of(Path(block.dumped_to).name)
        blocks.append(block)
    return blocks, problems


def dump_file_counter(path: Path) -> tuple[str, int] | None:
    """(kind, N) for a file named like the planner's `<kind>_<N>.dot` (optionally gzipped)."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    match = _DUMP_NAME.match(name)
    return (_NAME_KIND[match["kind"]], int(match["counter"])) if match else None


def _counter_of(name: str) -> int | None:
    match = _DUMP_NAME.match(name)
    return int(match["counter"]) if match else None


def split_by_compile(blocks: Sequence[Block]) -> list[list[Block]]:
    """Cut a dump-ordered sequence of blocks into one list per `doMemoryPlanner` run."""
    groups: list[list[Block]] = []
    current: list[Block] = []
    for block in blocks:
        kinds = {b.kind for b in current}
        if current and (block.kind in kinds or block.kind == "smem"):
            groups.append(current)
            current = []
        current.append(block)
    if current:
        groups.append(current)
    return groups


def attach_kernel_names(text: str, groups: list[list[Block]]) -> None:
    """Name each log group after the `tt.func @name` dumped between the previous group and it."""
    previous_end = 0
    for blocks in groups:
        names = [m["name"] for m in _KERNEL.finditer(text, previous_end, blocks[0].start_offset)]
        if names:
            for block in blocks:
                block.kernel = names[-1]
        previous_end = blocks[-1].end_offset


def unique_labels(paths: Sequence[Path]) -> dict[Path, str]:
    """A short readable label per path (its name), lengthened with parents only where names clash."""
    labels: dict[Path, str] = {}
    depth = 1
    pending = list(dict.fromkeys(paths))
    while pending:
        candidates = {p: "/".join(p.parts[-depth:]) or str(p) for p in pending}
        counts: dict[str, int] = {}
        for label in candidates.values():
            counts[label] = counts.get(label, 0) + 1
        still = []
        for path, label in candidates.items():
            if counts[label] == 1 or depth >= len(path.parts):
                labels[path] = label
            else:
                still.append(path)
        pending = still
        depth += 1
    return labels


def group_dump_files(blocks: Sequence[Block]) -> list[Group]:
    """Group single-block dump files per folder, in counter order."""
    by_folder: dict[Path, list[Block]] = {}
    for block in blocks:
        by_folder.setdefault(block.source.parent, []).append(block)
    labels = unique_labels(list(by_folder))
    groups = []
    for folder, members in by_folder.items():
        # Files without a counter in their name (renamed) follow, by name.
        members.sort(key=lambda b: (b.counter is None, b.counter or 0, b.source.name))
        for number, run in enumerate(split_by_compile(members), start=1):
            groups.append(Group(f"{labels[folder]}#{number}", run))
    return groups


def group_log_blocks(text: str, blocks: Sequence[Block], label: str) -> list[Group]:
    """Group the blocks of one debug log in the order they were printed."""
    runs = split_by_compile(blocks)
    attach_kernel_names(text, runs)
    groups = []
    for number, run in enumerate(runs, start=1):
        kernel = run[0].kernel
        name = f"{label}#{number}" + (f" {kernel}" if kernel else "")
        groups.append(Group(name, run, from_log=True))
    return groups


def drop_repeated_log_groups(groups: list[Group]) -> tuple[list[Group], list[str]]:
    """A log group whose graphs equal a dump-file group's (same process) is the same compile twice."""
    files = {frozenset(b.text for b in g.blocks): g.name for g in groups if not g.from_log}
    kept, notes = [], []
    for group in groups:
        twin = files.get(frozenset(b.text for b in group.blocks)) if group.from_log else None
        if twin is not None:
            notes.append(f"{group.name}: the same graphs as the dump files of {twin}; counted once")
            continue
        kept.append(group)
    return kept, notes
