"""The compiler page's logic: which compile and step, what to compare, diffs, source mapping.

Pure functions over the `ir_*` tables and IR text; no Dash. Steps are the
rows of one compile's `ir_steps` in order; a comparison names a step of the
same compile or of another compile (`<compile>:<step>`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import polars as pl

MAX_DIFF_LINES = 20_000  # larger texts are compared by their first lines only (said on the page)
FOLD_CONTEXT = 3  # unchanged lines kept around each change in the folded side-by-side view

STAGE_ORDER = ("source", "ttir", "ttgir", "llvm-mlir", "llir", "mir", "ptx", "amdgcn", "sass", "cubin", "hsaco")


def compile_label(row: dict[str, Any]) -> str:
    """`#2 matmul_kernel · cuda:90 · 8 warps · 3 stages · 81 steps`."""
    parts = [f"#{row['compile']} {row.get('kernel') or '(unnamed kernel)'}"]
    if row.get("target"):
        parts.append(row["target"])
    if row.get("num_warps") is not None:
        parts.append(f"{row['num_warps']} warps")
    if row.get("num_stages") is not None:
        parts.append(f"{row['num_stages']} stages")
    parts.append(f"{row.get('steps') or 0} steps")
    return " · ".join(parts)


def choose_compile(kernels: pl.DataFrame, wanted: Any) -> int | None:
    """The compile the URL names when it exists, else the first with the most steps."""
    if kernels.is_empty():
        return None
    compiles = kernels["compile"].to_list()
    try:
        if int(wanted) in compiles:
            return int(wanted)
    except (TypeError, ValueError):
        pass
    return int(kernels.sort(["steps", "compile"], descending=[True, False])["compile"][0])


def compile_steps(steps: pl.DataFrame, compile_index: int) -> pl.DataFrame:
    return steps.filter(pl.col("compile") == compile_index).sort("step")


def choose_step(steps_of_compile: pl.DataFrame, wanted: Any) -> int:
    """The step the URL names when it exists, else the first step."""
    if steps_of_compile.is_empty():
        return 0
    try:
        if 0 <= int(wanted) < steps_of_compile.height:
            return int(wanted)
    except (TypeError, ValueError):
        pass
    return 0


def step_label(row: dict[str, Any]) -> str:
    what = row.get("pass_name") or f"{row['stage']} file"
    kind = {"before": "before", "after": "after", "failed": "FAILED after", "internal": "pipeliner:",
            "file": "stage"}.get(row["kind"], row["kind"])
    mark = " ✱" if row.get("changed") and row["kind"] != "file" else ""
    # A function-anchored pass ran on one function (an inlined helper, the kernel): name it.
    on = f" on @{row['symbol']}" if row.get("anchor") == "function" and row.get("symbol") else ""
    return f"{row['step']} · {row['stage']} · {kind} {what}{on}{mark}"


@dataclass(frozen=True)
class Compared:
    compile: int
    step: int


def parse_compare(value: Any, compile_index: int, step: int) -> Compared | None:
    """`""`/None: the previous step; `"12"`: step 12 of this compile; `"3:12"`: step 12 of compile 3."""
    text = str(value).strip() if value not in (None, "") else ""
    try:
        if not text:
            return Compared(compile_index, step - 1) if step > 0 else None
        if ":" in text:
            other, other_step = text.split(":", 1)
            return Compared(int(other), int(other_step))
        return Compared(compile_index, int(text))
    except ValueError:
        return None


def same_pass_step(steps: pl.DataFrame, compile_index: int, step: int, other_compile: int) -> int | None:
    """The step of `other_compile` running the same pass as `step` (its k-th occurrence) in the same stage."""
    mine = compile_steps(steps, compile_index)
    if not 0 <= step < mine.height:
        return None
    row = mine.row(step, named=True)
    key = (pl.col("pass_name").eq_missing(row["pass_name"])) & (pl.col("stage") == row["stage"]) \
        & (pl.col("kind") == row["kind"])
    occurrence = mine.head(step + 1).filter(key).height - 1
    theirs = compile_steps(steps, other_compile).filter(key)
    if theirs.is_empty():
        return None
    return int(theirs["step"][min(occurrence, theirs.height - 1)])


def compare_options(steps: pl.DataFrame, kernels: pl.DataFrame, compile_index: int,
                    step: int) -> list[dict[str, str]]:
    """Previous step, any step of this compile, the same pass in every other compile."""
    options = [{"label": "previous step", "value": ""}]
    for row in kernels.filter(pl.col("compile") != compile_index).sort("compile").iter_rows(named=True):
        other = same_pass_step(steps, compile_index, step, row["compile"])
        if other is not None:
            options.append({"label": f"same pass in {compile_label(row)} (step {other})",
                            "value": f"{row['compile']}:{other}"})
    for row in compile_steps(steps, compile_index).iter_rows(named=True):
        options.append({"label": f"step {step_label(row)}", "value": str(row["step"])})
    return options


@dataclass(frozen=True)
class SideRow:
    tag: str  # equal / replace / delete / insert / fold
    left_number: int | None
    left: str
    right_number: int | None
    right: str


@dataclass(frozen=True)
class Diff:
    """One comparison of two texts, computed once: counts, unified lines, aligned rows."""

    removed: int
    added: int
    unified: list[str]
    side: list[SideRow]


def diff_texts(before: str, after: str, before_name: str, after_name: str) -> Diff:
    """Both views of one diff from a single SequenceMatcher run (changed-only: 3 lines of context)."""
    a, b = before.splitlines()[:MAX_DIFF_LINES], after.splitlines()[:MAX_DIFF_LINES]
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    removed = sum(i2 - i1 for tag, i1, i2, _, _ in opcodes if tag != "equal")
    added = sum(j2 - j1 for tag, _, _, j1, j2 in opcodes if tag != "equal")
    return Diff(removed, added, _unified(a, b, opcodes, before_name, after_name), _side(a, b, opcodes))


def _unified(a: list[str], b: list[str], opcodes: list[tuple[str, int, int, int, int]], before_name: str,
             after_name: str) -> list[str]:
    if all(tag == "equal" for tag, *_ in opcodes):
        return []
    lines = [f"--- {before_name}", f"+++ {after_name}"]
    for group in _groups(opcodes):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines.append(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@")
        for tag, g1, g2, h1, h2 in group:
            if tag == "equal":
                lines.extend(" " + line for line in a[g1:g2])
                continue
            lines.extend("-" + line for line in a[g1:g2])
            lines.extend("+" + line for line in b[h1:h2])
    return lines


def _groups(opcodes: list[tuple[str, int, int, int, int]]) -> list[list[tuple[str, int, int, int, int]]]:
    # difflib.SequenceMatcher.get_grouped_opcodes, on opcodes already computed.
    matcher = difflib.SequenceMatcher(None, "", "")
    matcher.opcodes = list(opcodes)  # type: ignore[attr-defined]
    return list(matcher.get_grouped_opcodes(FOLD_CONTEXT))


def _side(a: list[str], b: list[str], opcodes: list[tuple[str, int, int, int, int]]) -> list[SideRow]:
    """Aligned rows of the two texts; runs of unchanged lines folded to one `fold` row."""
    rows: list[SideRow] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            head = FOLD_CONTEXT if i1 > 0 else 0
            tail = FOLD_CONTEXT if i2 < len(a) else 0
            length = i2 - i1
            if length <= head + tail + 1:
                keep: list[int | None] = list(range(length))
            else:
                keep = [*range(head), None, *range(length - tail, length)]
            for k in keep:
                if k is None:
                    rows.append(SideRow("fold", None, f"⋯ {length - head - tail} unchanged lines", None, ""))
                else:
                    rows.append(SideRow("equal", i1 + k + 1, a[i1 + k], j1 + k + 1, b[j1 + k]))
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            left = i1 + k if i1 + k < i2 else None
            right = j1 + k if j1 + k < j2 else None
            rows.append(SideRow(tag, None if left is None else left + 1, "" if left is None else a[left],
                                None if right is None else right + 1, "" if right is None else b[right]))
    return rows


def stage_snapshots(steps_of_compile: pl.DataFrame) -> pl.DataFrame:
    """One row per stage in pipeline order: its last snapshot (the IR the next stage starts from)."""
    rows = steps_of_compile.filter(pl.col("text_id").is_not_null() & (pl.col("kind") != "internal"))
    last = rows.group_by("stage").agg(pl.col("step").last(), pl.col("text_id").last())
    order = {stage: i for i, stage in enumerate(STAGE_ORDER)}
    return last.with_columns(pl.col("stage").replace_strict(order, default=len(order)).alias("_order")) \
        .sort("_order", "step").drop("_order")


def ir_lines_for(locs: pl.DataFrame, file: str | None, line: int) -> list[int]:
    """IR lines of one text mapped to a Python line (file matched by path or by name)."""
    if locs.is_empty():
        return []
    match = locs.filter(pl.col("line") == line)
    if file:
        name = file.rsplit("/", 1)[-1]
        match = match.filter((pl.col("file") == file) | pl.col("file").str.ends_with("/" + name)
                             | (pl.col("file") == name))
    return sorted(set(match["ir_line"].to_list()))


def python_line_for(locs: pl.DataFrame, ir_line: int, kernel_file: str | None) -> tuple[str, int] | None:
    """The Python (file, line) of one IR line: the kernel's own file first (a call site), else any."""
    match = locs.filter(pl.col("ir_line") == ir_line)
    if match.is_empty():
        return None
    if kernel_file:
        own = match.filter(pl.col("file") == kernel_file)
        if not own.is_empty():
            match = own
    row = match.row(0, named=True)
    return row["file"], int(row["line"])
