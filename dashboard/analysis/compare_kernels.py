"""Kernels renamed between two runs, matched by their short name and launch signature.

A kernel found on one side only is often the same kernel under another full name: PyTorch wrapped its
functor in another template between versions (`threshold_kernel_impl<float>(...)::{lambda}` became
`BinaryFunctor<float, float, float, threshold_kernel_impl<float>(...)::{lambda}>`), its namespace moved,
its parameter list changed. Two one-sided kernels are one kernel renamed when they have the same short
name (`kernel_names`: the function without namespaces, a generic launcher's operation unwrapped) and,
to choose among several of that short name, the same launch signature. In tiers, each over the kernels
the earlier tiers left unmatched, only between kernels `kernel_comparison` found on one side only:

1. same short name and launch: grid, block and registers;
2. same short name and template arguments (namespaces dropped);
3. same short name, block and registers (the grid follows the input's size);
4. same short name and registers (the block size is a library's choice: PyTorch's elementwise kernels
   went from 64 to 128 threads);
5. same short name;
6. same function name (template arguments and operation differ).

A tier matches a key only when exactly one unmatched kernel on each side has it: two candidates on a
side would be a guess. The match is kept with the row (`renamed_from`, `match`) so the page, its table and
the CLI can show the pairing.
"""

from __future__ import annotations

import polars as pl

from dashboard.analysis.compare import ONLY_A, ONLY_B
from dashboard.analysis.kernel_names import parse_kernel_name

RENAMED = "renamed"
SAME_LAUNCH = "same short name and launch (grid, block, registers)"
SAME_SIGNATURE = "same short name and template arguments"
SAME_SHAPE = "same short name, block and registers"
SAME_REGISTERS = "same short name and registers"
SAME_SHORT = "same short name"
SAME_BASE = "same function name, template arguments differ"
_MATCH_SCHEMA = {"group_a": pl.String, "group_b": pl.String, "short_name": pl.String, "base": pl.String,
                 "arguments_a": pl.String, "arguments_b": pl.String, "launch_a": pl.String, "launch_b": pl.String,
                 "match": pl.String}


def _unique_pairs(a_names: list[str], b_names: list[str], key: dict[str, tuple]) -> list[tuple[str, str]]:
    """(a, b) for every key held by exactly one name on each side; names without a key take no part."""
    def by_key(names: list[str]) -> dict[tuple, list[str]]:
        grouped: dict[tuple, list[str]] = {}
        for name in names:
            if key.get(name) is not None:
                grouped.setdefault(key[name], []).append(name)
        return grouped

    a_keys, b_keys = by_key(a_names), by_key(b_names)
    return [(a_keys[k][0], b_keys[k][0]) for k in a_keys
            if k in b_keys and len(a_keys[k]) == 1 and len(b_keys[k]) == 1]


def _launch_text(grid: str | None, block: str | None, registers: int | None) -> str | None:
    if grid is None and block is None:
        return None
    return f"grid {grid or '?'} · block {block or '?'} · {'?' if registers is None else registers} registers"


def match_renamed(comparison: pl.DataFrame) -> pl.DataFrame:
    """Pairs (group_a, group_b) of one-sided kernels that are one kernel renamed, with how they matched.

    `comparison` is a `kernel_comparison` (its launch columns, when present, feed tiers 1, 3 and 4).
    Loops over distinct one-sided names only (tens), never over launches.
    """
    one_sided = comparison.filter(pl.col("presence").is_in([ONLY_A, ONLY_B]))
    launch: dict[str, tuple[str | None, str | None, int | None]] = {}
    for row in one_sided.iter_rows(named=True):
        side = "a" if row["presence"] == ONLY_A else "b"
        launch[row["group"]] = (row.get(f"grid_{side}"), row.get(f"block_{side}"), row.get(f"registers_{side}"))
    only_a = one_sided.filter(pl.col("presence") == ONLY_A).get_column("group").to_list()
    only_b = one_sided.filter(pl.col("presence") == ONLY_B).get_column("group").to_list()
    parsed = {name: parse_kernel_name(name) for name in only_a + only_b}

    def keyed(part: slice | None) -> dict[str, tuple | None]:
        """short name + a part of the launch; None for a name whose launch part is unknown."""
        keys: dict[str, tuple | None] = {}
        for name in parsed:
            shape = launch[name][part] if part is not None else ()
            keys[name] = None if any(value is None for value in shape) else (parsed[name].short, *shape)
        return keys

    tiers = [
        (SAME_LAUNCH, keyed(slice(0, 3))),
        (SAME_SIGNATURE, {n: (p.short, p.arguments) if p.arguments else None for n, p in parsed.items()}),
        (SAME_SHAPE, keyed(slice(1, 3))),
        (SAME_REGISTERS, keyed(slice(2, 3))),
        (SAME_SHORT, keyed(None)),
        (SAME_BASE, {n: (p.base,) for n, p in parsed.items()}),
    ]
    rows = []
    for tier, key in tiers:
        for a, b in _unique_pairs(only_a, only_b, key):
            rows.append({"group_a": a, "group_b": b, "short_name": parsed[a].short, "base": parsed[a].base,
                         "arguments_a": ", ".join(parsed[a].arguments), "arguments_b": ", ".join(parsed[b].arguments),
                         "launch_a": _launch_text(*launch[a]), "launch_b": _launch_text(*launch[b]), "match": tier})
        matched_a = {row["group_a"] for row in rows}
        matched_b = {row["group_b"] for row in rows}
        only_a = [n for n in only_a if n not in matched_a]
        only_b = [n for n in only_b if n not in matched_b]
    return pl.DataFrame(rows, schema=_MATCH_SCHEMA)


def merge_renamed(comparison: pl.DataFrame, matches: pl.DataFrame) -> pl.DataFrame:
    """`comparison` with each matched pair as ONE row (presence "renamed", B's name and key, A's figures).

    Adds `renamed_from` (A's full name) and `match` (the tier), null on other rows. The pair's label is
    its short name and "(renamed)" when both sides share it (every tier but the last), else
    "A's label → B's label".
    Order: largest |B - A| first, as in kernel_comparison.
    """
    plain = comparison.with_columns(pl.lit(None, pl.String).alias("renamed_from"), pl.lit(None, pl.String)
                                    .alias("match"))
    if matches.height == 0:
        return plain
    launch_a = [c for c in ("grid_a", "block_a", "registers_a") if c in comparison.columns]
    launch_b = [c for c in ("grid_b", "block_b", "registers_b") if c in comparison.columns]
    a_side = comparison.join(matches.select("group_a", "group_b", "match", "short_name"), left_on="group",
                             right_on="group_a") \
        .select(pl.col("group_b"), pl.col("group").alias("renamed_from"), "match", "short_name", "label", "count_a",
                "total_a_ns", "mean_a_ns", *launch_a).rename({"label": "label_a"})
    b_side = comparison.join(matches.select("group_b"), left_on="group", right_on="group_b").select(
        "group", "key", "label", "count_b", "total_b_ns", "mean_b_ns", *launch_b)
    pairs = b_side.join(a_side, left_on="group", right_on="group_b")
    total_a, total_b = pl.col("total_a_ns"), pl.col("total_b_ns")
    merged = pairs.select(
        "group", "key",
        pl.when(pl.col("match") != SAME_BASE).then(pl.format("{} (renamed)", "short_name"))
        .otherwise(pl.format("{} → {}", "label_a", "label")).alias("label"),
        "count_a", "count_b", "total_a_ns", "total_b_ns", "mean_a_ns", "mean_b_ns",
        (total_b - total_a).alias("delta_ns"), pl.when(total_a > 0).then(total_b / total_a).alias("ratio"),
        pl.lit(RENAMED).alias("presence"), *launch_a, *launch_b, "renamed_from", "match",
    )
    paired = set(matches.get_column("group_a").to_list()) | set(matches.get_column("group_b").to_list())
    rest = plain.filter(~pl.col("group").is_in(list(paired)))
    return pl.concat([rest, merged.select(rest.columns).cast(rest.schema)]).sort(
        [pl.col("delta_ns").abs(), "group"], descending=[True, False])
