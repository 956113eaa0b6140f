"""Kernels renamed between two runs, matched by their demangled base name and template arguments.

A kernel found on one side only is often the same kernel under another full
name: its namespace moved, its parameter list changed, or a template argument
(a tile size, a dtype) changed. Matching, in two tiers, only between kernels
that `kernel_comparison` found on one side only:

1. same base name (function name without namespaces) and the same template
   arguments (namespaces dropped) -> "same base name and template arguments";
2. of those left, the same base name -> "same base name, template arguments differ".

A tier matches a base name only when exactly one unmatched kernel on each side
has it: two candidates on a side would be a guess. The match is kept with the
row (`renamed_from`, `match`) so the page and the CLI can show it.
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis.compare import ONLY_A, ONLY_B
from dashboard.analysis.kernel_names import split_kernel_name, template_arguments

RENAMED = "renamed"
SAME_SIGNATURE = "same base name and template arguments"
SAME_BASE = "same base name, template arguments differ"
_MATCH_SCHEMA = {"group_a": pl.String, "group_b": pl.String, "base": pl.String, "arguments_a": pl.String,
                 "arguments_b": pl.String, "match": pl.String}


def _signature(name: str) -> tuple[str, str]:
    return split_kernel_name(name)[0], ", ".join(template_arguments(name))


def _unique_pairs(a_names: list[str], b_names: list[str], key: dict[str, tuple[str, ...]]) -> list[tuple[str, str]]:
    """(a, b) for every key held by exactly one name on each side."""
    def by_key(names: list[str]) -> dict[tuple[str, ...], list[str]]:
        grouped: dict[tuple[str, ...], list[str]] = {}
        for name in names:
            grouped.setdefault(key[name], []).append(name)
        return grouped

    a_keys, b_keys = by_key(a_names), by_key(b_names)
    return [(a_keys[k][0], b_keys[k][0]) for k in a_keys
            if k in b_keys and len(a_keys[k]) == 1 and len(b_keys[k]) == 1]


def match_renamed(comparison: pl.DataFrame) -> pl.DataFrame:
    """Pairs (group_a, group_b) of one-sided kernels that are one kernel renamed, with how they matched.

    Loops over distinct one-sided names only (tens), never over launches.
    """
    only_a = comparison.filter(pl.col("presence") == ONLY_A).get_column("group").to_list()
    only_b = comparison.filter(pl.col("presence") == ONLY_B).get_column("group").to_list()
    signatures = {name: _signature(name) for name in only_a + only_b}
    rows = []
    for tier, key in ((SAME_SIGNATURE, {n: s for n, s in signatures.items()}),
                      (SAME_BASE, {n: (s[0],) for n, s in signatures.items()})):
        for a, b in _unique_pairs(only_a, only_b, key):
            rows.append({"group_a": a, "group_b": b, "base": signatures[a][0], "arguments_a": signatures[a][1],
                         "arguments_b": signatures[b][1], "match": tier})
        matched_a = {row["group_a"] for row in rows}
        matched_b = {row["group_b"] for row in rows}
        only_a = [n for n in only_a if n not in matched_a]
        only_b = [n for n in only_b if n not in matched_b]
    return pl.DataFrame(rows, schema=_MATCH_SCHEMA)


def merge_renamed(comparison: pl.DataFrame, matches: pl.DataFrame) -> pl.DataFrame:
    """`comparison` with each matched pair as ONE row (presence "renamed", B's name and key, A's figures).

    Adds `renamed_from` (A's full name) and `match` (the tier), null on other rows.
    Order: largest |B - A| first, as in kernel_comparison.
    """
    plain = comparison.with_columns(pl.lit(None, pl.String).alias("renamed_from"), pl.lit(None, pl.String)
                                    .alias("match"))
    if matches.height == 0:
        return plain
    a_side = comparison.join(matches.select("group_a", "group_b", "match"), left_on="group", right_on="group_a") \
        .select(pl.col("group_b"), pl.col("group").alias("renamed_from"), "match", "label", "count_a", "total_a_ns",
                "mean_a_ns").rename({"label": "label_a"})
    b_side = comparison.join(matches.select("group_b"), left_on="group", right_on="group_b").select(
        "group", "key", "label", "count_b", "total_b_ns", "mean_b_ns")
    pairs = b_side.join(a_side, left_on="group", right_on="group_b")
    total_a, total_b = pl.col("total_a_ns"), pl.col("total_b_ns")
    merged = pairs.select(
        "group", "key", pl.format("{} → {}", "label_a", "label").alias("label"), "count_a", "count_b",
        "total_a_ns", "total_b_ns", "mean_a_ns", "mean_b_ns", (total_b - total_a).alias("delta_ns"),
        pl.when(total_a > 0).then(total_b / total_a).alias("ratio"), pl.lit(RENAMED).alias("presence"),
        "renamed_from", "match",
    )
    paired = set(matches.get_column("group_a").to_list()) | set(matches.get_column("group_b").to_list())
    rest = plain.filter(~pl.col("group").is_in(list(paired)))
    return pl.concat([rest, merged.cast(rest.schema)]).sort(
        [pl.col("delta_ns").abs(), "group"], descending=[True, False])
