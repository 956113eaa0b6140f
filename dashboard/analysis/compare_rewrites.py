"""Two tinygrad runs' graph rewrites side by side, as two Triton compiles are (`compare_compiler`).

Contexts (a kernel's codegen, a schedule, a JIT capture...) are aligned by name: difflib over the two
sequences of names, so a kernel only one run compiled is "only A" / "only B" and the rest pair up in
order. Within an aligned pair the steps are aligned by name the same way, and the first step that
differs is the first whose input graph differs (compared by a digest of the whole graph: op, dtype,
argument, tag and sources, recursively, so two runs' trace numbers need not agree), whose number of
matches differs, or which only one side ran. A kernel context also carries the time its kernel took
in each run's profile (all launches of that kernel name), and B − A.
"""

from __future__ import annotations

import difflib
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from dashboard.analysis.uop_graph import UOpColumns

BOTH, ONLY_A, ONLY_B = "both", "only A", "only B"
# Aligned pairs whose steps are compared within one call (the rest say "not compared"): the largest runs
# hold ~200 contexts of ~60 steps over a million UOps.
DEFAULT_BUDGET_S = 10.0


class GraphDigests:
    """A digest per trace number of one run's UOp table: equal digests, equal graphs (whatever the numbering)."""

    def __init__(self, table: UOpColumns) -> None:
        self.table = table
        self.memo: dict[int, bytes] = {}

    def of(self, trace: int | None) -> bytes | None:
        if trace is None:
            return None
        memo, table = self.memo, self.table
        stack = [trace]
        while stack:
            current = stack[-1]
            if current in memo:
                stack.pop()
                continue
            row = table.row(current)
            if row is None:
                memo[current] = b"missing"
                stack.pop()
                continue
            op, dtype, sources, arg, tag = table.fields(row)
            sources = tuple(s for s in sources if s < current)  # a damaged forward reference: left out
            pending = [s for s in sources if s not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            parts = [op.encode(), dtype.encode(), (arg or "\0").encode(), (tag or "\0").encode(),
                     *(memo[s] for s in sources)]
            memo[current] = hashlib.blake2b(b"\x1f".join(parts), digest_size=12).digest()
        return memo[trace]


@dataclass(frozen=True)
class Side:
    """What one run gives the comparison (one rank)."""

    contexts: pl.DataFrame  # rewrite_contexts rows: context, name, codegen, kernel, steps, matches
    steps: pl.DataFrame  # rewrite_steps rows: context, step, name, matches, sink
    kernels: pl.DataFrame  # kernels rows: name, start_ns, end_ns (empty without a profile)
    digest: Callable[[int | None], bytes | None]


@dataclass
class RewriteComparison:
    aligned: pl.DataFrame  # one row per aligned position (see compare_rewrites)
    first: dict[str, Any] | None  # the first aligned context whose steps differ, and how
    compared: int = 0  # aligned pairs whose steps were compared
    not_compared: int = 0  # pairs left for lack of time
    counts: dict[str, int] = field(default_factory=dict)

    def summary(self, rows: int | None = None) -> dict[str, Any]:
        """JSON-ready: counts, the first difference, the aligned rows (all, or the first `rows`)."""
        shown = self.aligned if rows is None else self.aligned.head(rows)
        return {"counts": self.counts, "first_difference": self.first, "compared": self.compared,
                "not_compared": self.not_compared, "contexts": shown.to_dicts()}


def _align(names_a: list[str], names_b: list[str]) -> list[tuple[int | None, int | None]]:
    pairs: list[tuple[int | None, int | None]] = []
    matcher = difflib.SequenceMatcher(None, names_a, names_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += [(i1 + k, j1 + k) for k in range(i2 - i1)]
        else:
            pairs += [(i, None) for i in range(i1, i2)] + [(None, j) for j in range(j1, j2)]
    return pairs


def first_step_difference(steps_a: list[dict[str, Any]], steps_b: list[dict[str, Any]],
                          digest_a: Callable[[int | None], bytes | None],
                          digest_b: Callable[[int | None], bytes | None]) -> dict[str, Any] | None:
    """The first step (in order) whose input graph or match count differs, or that one side lacks."""
    for index_a, index_b in _align([s["name"] or "" for s in steps_a], [s["name"] or "" for s in steps_b]):
        a = steps_a[index_a] if index_a is not None else None
        b = steps_b[index_b] if index_b is not None else None
        if a is None or b is None:
            reason = ONLY_A if b is None else ONLY_B
        elif digest_a(a["sink"]) != digest_b(b["sink"]):
            reason = "input graph differs"
        elif a["matches"] != b["matches"]:
            reason = f"matches differ ({a['matches']:,} against {b['matches']:,})"
        else:
            continue
        return {"step_name": (a or b or {}).get("name"), "step_a": a["step"] if a else None,
                "step_b": b["step"] if b else None, "reason": reason}
    return None


def _kernel_ns(kernels: pl.DataFrame) -> dict[str, int]:
    if kernels.is_empty():
        return {}
    summed = kernels.group_by("name").agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("ns"))
    return dict(zip(summed["name"].to_list(), summed["ns"].to_list(), strict=True))


_SCHEMA = {"position": pl.Int64, "name": pl.String, "codegen": pl.Boolean, "presence": pl.String,
           "context_a": pl.Int64, "context_b": pl.Int64, "steps_a": pl.Int64, "steps_b": pl.Int64,
           "matches_a": pl.Int64, "matches_b": pl.Int64, "kernel_ns_a": pl.Int64, "kernel_ns_b": pl.Int64,
           "kernel_delta_ns": pl.Int64, "differs": pl.Boolean, "first_step": pl.String, "first_step_a": pl.Int64,
           "first_step_b": pl.Int64, "reason": pl.String}


def compare_rewrites(a: Side, b: Side, budget_s: float = DEFAULT_BUDGET_S) -> RewriteComparison:
    """The aligned contexts: position, name, codegen, presence, context / steps / matches / kernel time of
    each side, kernel_delta_ns (B − A), and for pairs: differs, first_step (its name), first_step_a / _b,
    reason (null where the pair was not compared within `budget_s`)."""
    rows_a, rows_b = a.contexts.sort("context").to_dicts(), b.contexts.sort("context").to_dicts()
    steps_a = {c: g.sort("step").to_dicts() for (c,), g in a.steps.group_by("context")}
    steps_b = {c: g.sort("step").to_dicts() for (c,), g in b.steps.group_by("context")}
    time_a, time_b = _kernel_ns(a.kernels), _kernel_ns(b.kernels)
    deadline = time.monotonic() + budget_s
    out: list[dict[str, Any]] = []
    result = RewriteComparison(pl.DataFrame(schema=_SCHEMA), None)
    for index_a, index_b in _align([r["name"] or "" for r in rows_a], [r["name"] or "" for r in rows_b]):
        ra = rows_a[index_a] if index_a is not None else None
        rb = rows_b[index_b] if index_b is not None else None
        shown = ra or rb or {}
        kernel = shown.get("kernel")
        ns_a = time_a.get(kernel) if kernel and ra else None
        ns_b = time_b.get(kernel) if kernel and rb else None
        row: dict[str, Any] = {
            "position": len(out), "name": shown.get("name"), "codegen": bool(shown.get("codegen")),
            "presence": BOTH if ra and rb else (ONLY_A if ra else ONLY_B),
            "context_a": ra["context"] if ra else None, "context_b": rb["context"] if rb else None,
            "steps_a": ra["steps"] if ra else None, "steps_b": rb["steps"] if rb else None,
            "matches_a": ra["matches"] if ra else None, "matches_b": rb["matches"] if rb else None,
            "kernel_ns_a": ns_a, "kernel_ns_b": ns_b,
            "kernel_delta_ns": ns_b - ns_a if ns_a is not None and ns_b is not None else None,
            "differs": None, "first_step": None, "first_step_a": None, "first_step_b": None, "reason": None}
        if ra and rb:
            if time.monotonic() > deadline:
                result.not_compared += 1
            else:
                found = first_step_difference(steps_a.get(ra["context"], []), steps_b.get(rb["context"], []),
                                              a.digest, b.digest)
                result.compared += 1
                row["differs"] = found is not None
                if found is not None:
                    row.update(first_step=found["step_name"], first_step_a=found["step_a"],
                               first_step_b=found["step_b"], reason=found["reason"])
                    if result.first is None:
                        result.first = {"position": row["position"], "name": row["name"],
                                        "context_a": row["context_a"], "context_b": row["context_b"], **found}
        out.append(row)
    result.aligned = pl.DataFrame(out, schema=_SCHEMA)
    presence = result.aligned["presence"].to_list()
    result.counts = {"contexts_a": len(rows_a), "contexts_b": len(rows_b), "both": presence.count(BOTH),
                     "only_a": presence.count(ONLY_A), "only_b": presence.count(ONLY_B),
                     "differing": int(result.aligned["differs"].fill_null(False).sum())}
    return result
