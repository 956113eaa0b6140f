"""Two Triton compiles side by side: the pass lists aligned, the first pass where the IR differs, its diff.

A compile is one `ir_kernels` row with its `ir_steps`; the two may come from two
runs or from one run (e.g. the same kernel at BLOCK 1024 and 2048). Steps are
aligned on their pass key (stage, kind, pass name, or the stage for a stage
file) by difflib over the two key sequences: a step whose key has no partner
in the other compile is "only A" / "only B". Aligned steps "differ" when their
IR bodies differ (bodies are compared as text: text ids are per run).
"""

from __future__ import annotations

import difflib
import hashlib
import zlib
from typing import Any

import polars as pl

from dashboard.analysis.compiler import Diff, compile_steps, diff_texts
from dashboard.store import Run

BOTH, ONLY_A, ONLY_B = "both", "only A", "only B"
SAME, DIFFERS = "same", "differs"
METADATA_FIELDS = ("num_warps", "num_ctas", "num_stages", "shared", "tmem_size")
_STEP_COLUMNS = ("step", "lines", "ops", "text_id", "digest")


def read_text(run: Run, text_id: int | None) -> str:
    """One IR body of the run, decompressed ("" for a binary stage file or an unknown id)."""
    if text_id is None:
        return ""
    found = run.scan("ir_text").filter(pl.col("text_id") == text_id).select("zlib").collect()
    return zlib.decompress(found["zlib"][0]).decode("utf-8", "replace") if found.height else ""


def text_digests(run: Run, text_ids: list[int]) -> dict[int, str]:
    """sha1 of each body (of the uncompressed text: the compression level may differ between runs)."""
    wanted = [t for t in set(text_ids) if t is not None]
    texts = run.scan("ir_text").filter(pl.col("text_id").is_in(wanted)).select("text_id", "zlib").collect()
    return {int(tid): hashlib.sha1(zlib.decompress(blob)).hexdigest()
            for tid, blob in zip(texts["text_id"], texts["zlib"], strict=True)}


def compile_options(kernels: pl.DataFrame) -> list[tuple[int, str]]:
    """(compile, kernel name) in compile order."""
    return [(int(c), k or "") for c, k in kernels.sort("compile").select("compile", "kernel").iter_rows()]


def default_compiles(kernels_a: pl.DataFrame, kernels_b: pl.DataFrame, same_run: bool) -> tuple[int, int] | None:
    """The first compile of a kernel name both sides hold (in one run: its first two compiles of one kernel);
    without a shared name each side's first compile (in one run: its first two). None when a side has none."""
    a, b = compile_options(kernels_a), compile_options(kernels_b)
    if not a or not b:
        return None
    if same_run:
        for index, (compile_a, name) in enumerate(a):
            later = [c for c, other in a[index + 1:] if other == name]
            if later:
                return compile_a, later[0]
        return (a[0][0], a[1][0]) if len(a) > 1 else (a[0][0], a[0][0])
    names_b = {name: c for c, name in reversed(b)}
    for compile_a, name in a:
        if name in names_b:
            return compile_a, names_b[name]
    return a[0][0], b[0][0]


def choose_compiles(kernels_a: pl.DataFrame, kernels_b: pl.DataFrame, same_run: bool, wanted_a: Any,
                    wanted_b: Any) -> tuple[int, int] | None:
    """The compiles the URL names where they exist, else default_compiles for the missing side."""
    chosen = default_compiles(kernels_a, kernels_b, same_run)
    if chosen is None:
        return None

    def pick(wanted: Any, kernels: pl.DataFrame, fallback: int) -> int:
        try:
            return int(wanted) if int(wanted) in kernels["compile"].to_list() else fallback
        except (TypeError, ValueError):
            return fallback

    return pick(wanted_a, kernels_a, chosen[0]), pick(wanted_b, kernels_b, chosen[1])


def pass_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["stage"], row["kind"], row["pass_name"] or row["stage"]


def _side(steps: pl.DataFrame, digests: dict[int, str]) -> list[dict[str, Any]]:
    rows = steps.select("step", "stage", "kind", "pass_name", "lines", "ops", "text_id").to_dicts()
    for row in rows:
        row["digest"] = digests.get(row["text_id"]) if row["text_id"] is not None else None
    return rows


def align_passes(steps_a: pl.DataFrame, steps_b: pl.DataFrame, digests_a: dict[int, str],
                 digests_b: dict[int, str]) -> pl.DataFrame:
    """One row per aligned position: stage, kind, pass_name, A's and B's step / lines / ops / text id,
    presence (both / only A / only B) and ir (same / differs / null when one side only)."""
    a, b = _side(steps_a, digests_a), _side(steps_b, digests_b)
    keys_a, keys_b = [pass_key(r) for r in a], [pass_key(r) for r in b]
    rows: list[dict[str, Any]] = []

    def add(row_a: dict[str, Any] | None, row_b: dict[str, Any] | None) -> None:
        shown = row_a or row_b
        assert shown is not None
        row = {"position": len(rows), "stage": shown["stage"], "kind": shown["kind"],
               "pass_name": shown["pass_name"] or shown["stage"],
               "presence": BOTH if row_a and row_b else (ONLY_A if row_a else ONLY_B),
               "ir": (SAME if row_a["digest"] == row_b["digest"] else DIFFERS) if row_a and row_b else None}
        for suffix, side in (("a", row_a), ("b", row_b)):
            row.update({f"{c}_{suffix}": (side or {}).get(c) for c in _STEP_COLUMNS if c != "digest"})
        rows.append(row)

    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(i2 - i1):
                add(a[i1 + offset], b[j1 + offset])
            continue
        for row_a in a[i1:i2]:
            add(row_a, None)
        for row_b in b[j1:j2]:
            add(None, row_b)
    schema = {"position": pl.Int64, "stage": pl.String, "kind": pl.String, "pass_name": pl.String,
              "presence": pl.String, "ir": pl.String,
              **{f"{c}_{s}": pl.Int64 for s in ("a", "b") for c in _STEP_COLUMNS if c != "digest"}}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def first_difference(aligned: pl.DataFrame) -> dict[str, Any] | None:
    """The first aligned pass both compiles ran whose IR differs: position, pass_name, stage, kind, step_a, step_b."""
    differing = aligned.filter(pl.col("ir") == DIFFERS)
    if differing.is_empty():
        return None
    row = differing.row(0, named=True)
    return {"position": row["position"], "pass_name": row["pass_name"], "stage": row["stage"], "kind": row["kind"],
            "step_a": row["step_a"], "step_b": row["step_b"]}


def choose_position(aligned: pl.DataFrame, wanted: Any) -> int | None:
    """The aligned position the URL names when both sides ran it, else the first difference, else the first
    position both ran; None when no pass is aligned."""
    both = aligned.filter(pl.col("presence") == BOTH)
    if both.is_empty():
        return None
    try:
        if int(wanted) in both["position"].to_list():
            return int(wanted)
    except (TypeError, ValueError):
        pass
    first = first_difference(aligned)
    return first["position"] if first else int(both["position"][0])


def metadata_deltas(kernel_a: dict[str, Any], kernel_b: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{field: {a, b, delta (B − A, null when a side does not say)}} for warps, CTAs, stages, shared bytes,
    TMEM columns; target and kernel name as {a, b}."""
    out: dict[str, dict[str, Any]] = {}
    for field in METADATA_FIELDS:
        value_a, value_b = kernel_a.get(field), kernel_b.get(field)
        out[field] = {"a": value_a, "b": value_b,
                      "delta": value_b - value_a if value_a is not None and value_b is not None else None}
    for field in ("kernel", "target"):
        out[field] = {"a": kernel_a.get(field), "b": kernel_b.get(field)}
    return out


class CompilerComparison:
    """Everything the compare page and CLI say about two compiles, computed once."""

    def __init__(self, run_a: Run, run_b: Run, compile_a: int, compile_b: int, wanted_position: Any = None) -> None:
        kernels_a, kernels_b = run_a.frame("ir_kernels"), run_b.frame("ir_kernels")
        self.compile_a, self.compile_b = compile_a, compile_b
        self.kernel_a = kernels_a.filter(pl.col("compile") == compile_a).row(0, named=True)
        self.kernel_b = kernels_b.filter(pl.col("compile") == compile_b).row(0, named=True)
        steps_a = compile_steps(run_a.frame("ir_steps"), compile_a)
        steps_b = compile_steps(run_b.frame("ir_steps"), compile_b)
        self.steps_a, self.steps_b = steps_a.height, steps_b.height
        self.aligned = align_passes(steps_a, steps_b, text_digests(run_a, steps_a["text_id"].to_list()),
                                    text_digests(run_b, steps_b["text_id"].to_list()))
        self.first = first_difference(self.aligned)
        self.position = choose_position(self.aligned, wanted_position)
        self.metadata = metadata_deltas(self.kernel_a, self.kernel_b)
        self.diff: Diff | None = None
        if self.position is not None:
            row = self.aligned.row(self.position, named=True)
            left = f"A #{compile_a} step {row['step_a']} ({row['pass_name']})"
            right = f"B #{compile_b} step {row['step_b']} ({row['pass_name']})"
            self.diff = diff_texts(read_text(run_a, row["text_id_a"]), read_text(run_b, row["text_id_b"]),
                                   left, right)

    def names(self, presence: str) -> list[str]:
        return self.aligned.filter(pl.col("presence") == presence)["pass_name"].to_list()

    def summary(self) -> dict[str, Any]:
        """The JSON form (compare --json)."""
        chosen = None if self.position is None else self.aligned.row(self.position, named=True)
        return {
            "compile_a": self.compile_a, "compile_b": self.compile_b,
            "kernel_a": self.kernel_a.get("kernel"), "kernel_b": self.kernel_b.get("kernel"),
            "steps_a": self.steps_a, "steps_b": self.steps_b,
            "aligned": self.aligned.height, "differing": self.aligned.filter(pl.col("ir") == DIFFERS).height,
            "only_a": self.names(ONLY_A), "only_b": self.names(ONLY_B),
            "first_difference": self.first, "metadata": self.metadata,
            "diff": None if chosen is None or self.diff is None else {
                "position": chosen["position"], "pass_name": chosen["pass_name"],
                "lines_a": chosen["lines_a"], "lines_b": chosen["lines_b"],
                "ops_a": chosen["ops_a"], "ops_b": chosen["ops_b"],
                "removed": self.diff.removed, "added": self.diff.added},
        }


def compare_compiles(run_a: Run, run_b: Run, wanted_a: Any = None, wanted_b: Any = None,
                     wanted_position: Any = None) -> CompilerComparison | None:
    """The comparison of the chosen compiles of two runs (or of one run), None when a side has no compile."""
    kernels_a, kernels_b = run_a.frame("ir_kernels"), run_b.frame("ir_kernels")
    chosen = choose_compiles(kernels_a, kernels_b, run_a.id == run_b.id, wanted_a, wanted_b)
    if chosen is None:
        return None
    return CompilerComparison(run_a, run_b, *chosen, wanted_position)
