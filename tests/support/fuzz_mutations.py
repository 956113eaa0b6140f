"""Mutations of the fuzz seeds: deterministic cases `(format, index, master seed) -> files`.

A case is one seed changed by one mutation, chosen by a `random.Random` seeded with the case's
identity, so any case can be rebuilt from its id alone (`case_id` in reports). Byte mutations
work on the decompressed content (a gzip seed is recompressed, except `raw_*`, which hit the
compressed bytes); SQLite seeds are mutated through SQL (values, rows, tables), plus raw bit
flips and truncation of the database file.
"""

from __future__ import annotations

import random
import re
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support.fuzz_seeds import PACKED, SQLITE, Seed, stored_bytes

# Values that have broken parsers: float overflow in ns, i64 edges, past u64, a 32-digit int, NaN.
EXTREMES = ("1e30", "-1e30", "1e308", "-9223372036854775808", "9223372036854775807", "18446744073709551616",
            "12345678901234567890123456789012", "NaN", "Infinity", "-1", "0", "-0", "0.000001", "2147483648")
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_INTERESTING = (b"{", b"}", b"[", b"]", b'"', b"\\", b"\x00", b"\n", b",", b":", b"<", b">", b"-", b"->",
                b"/*", b"=", b";", b"digraph {", b"\r\n", b"\t", b"null", b"true")
_NON_UTF8 = (b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28", b"\x80", b"\xc0\xaf")
_DEEP = {"json": (b"[", b"]"), "dot": (b"subgraph { ", b"} "), "text": (b"(", b")")}


@dataclass(frozen=True)
class Case:
    """One fuzz input: files (relative path -> bytes) to ingest together, and how it was made."""

    case_id: str
    format: str
    seed: str
    mutation: str
    files: dict[str, bytes]

    def write(self, folder: Path) -> list[Path]:
        """Write the files under `folder`; returns the paths to ingest (one per file)."""
        paths = []
        for relpath, data in self.files.items():
            path = folder / relpath
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            paths.append(path)
        return paths


# --- byte mutations: (content, rng, flavour) -> content ----------------------------------------------


def _position(data: bytes, rng: random.Random) -> int:
    return rng.randrange(len(data) + 1)


def bit_flip(data: bytes, rng: random.Random, flavour: str) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 8))):
        at = rng.randrange(len(out))
        out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


def truncate(data: bytes, rng: random.Random, flavour: str) -> bytes:
    return data[: _position(data, rng)]


def insert_bytes(data: bytes, rng: random.Random, flavour: str) -> bytes:
    at = _position(data, rng)
    if rng.random() < 0.5:
        piece = rng.choice(_INTERESTING) * rng.choice((1, 2, 5))
    else:
        piece = rng.randbytes(rng.randint(1, 64))
    return data[:at] + piece + data[at:]


def delete_bytes(data: bytes, rng: random.Random, flavour: str) -> bytes:
    at = _position(data, rng)
    return data[:at] + data[at + rng.choice((1, 2, 7, 64, 256, 4096)):]


def duplicate_chunk(data: bytes, rng: random.Random, flavour: str) -> bytes:
    start = _position(data, rng)
    chunk = data[start:start + rng.choice((1, 16, 256, 4096))]
    at = _position(data, rng)
    return data[:at] + chunk * rng.choice((1, 2, 10)) + data[at:]


def pump(data: bytes, rng: random.Random, flavour: str) -> bytes:
    """Repeat a short slice many times in place: what exposes backtracking (`a [xxxx...`)."""
    start = _position(data, rng)
    piece = data[start:start + rng.randint(1, 6)] or b"x"
    return data[:start] + piece * rng.choice((34, 300, 3000, 30000)) + data[start:]


def extreme_number(data: bytes, rng: random.Random, flavour: str) -> bytes:
    numbers = list(_NUMBER.finditer(data[:4_000_000]))
    if not numbers:
        return insert_bytes(data, rng, flavour)
    chosen = rng.sample(numbers, min(len(numbers), rng.choice((1, 1, 3))))
    out = data
    for match in sorted(chosen, key=lambda m: m.start(), reverse=True):
        out = out[:match.start()] + rng.choice(EXTREMES).encode() + out[match.end():]
    return out


def deep_nesting(data: bytes, rng: random.Random, flavour: str) -> bytes:
    opening, closing = _DEEP[flavour]
    depth = rng.choice((200, 1000, 100_000))
    at = _position(data, rng)
    return data[:at] + opening * depth + (closing * depth if rng.random() < 0.5 else b"") + data[at:]


def non_utf8(data: bytes, rng: random.Random, flavour: str) -> bytes:
    out = data
    for _ in range(rng.choice((1, 3, 20))):
        at = _position(out, rng)
        out = out[:at] + rng.choice(_NON_UTF8) + out[at:]
    return out


def garbage(data: bytes, rng: random.Random, flavour: str) -> bytes:
    """Random bytes over a region (the head is kept sometimes, so the format is still recognised)."""
    keep = rng.choice((0, 64, 1024, len(data) // 2))
    return data[:keep] + rng.randbytes(rng.choice((16, 1024, 65536)))


def empty(data: bytes, rng: random.Random, flavour: str) -> bytes:
    return b""


BYTE_MUTATIONS: dict[str, Callable[[bytes, random.Random, str], bytes]] = {
    "bit_flip": bit_flip, "truncate": truncate, "insert": insert_bytes, "delete": delete_bytes,
    "duplicate": duplicate_chunk, "pump": pump, "extreme_number": extreme_number, "deep_nesting": deep_nesting,
    "non_utf8": non_utf8, "garbage": garbage, "empty": empty,
}


# --- SQLite mutations: through SQL on a copy of the database -----------------------------------------

_SQL_EXTREMES: tuple[object, ...] = (1e30, -1e30, -(2**63), 2**63 - 1, 1.8446744073709552e19, float("nan"),
                                     float("inf"), -1, 0, "text in a number column", None, b"\x00\xff")


def _tables(connection: sqlite3.Connection) -> list[str]:
    return [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]


def _columns(connection: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')]


def _sql_mutation(connection: sqlite3.Connection, rng: random.Random, kind: str) -> None:
    tables = [t for t in _tables(connection) if connection.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]]
    table = rng.choice(tables)
    columns = _columns(connection, table)
    column = rng.choice(columns)
    rowid = rng.choice([r[0] for r in connection.execute(f'SELECT rowid FROM "{table}"')])
    if kind == "sql_value":
        value = rng.choice(_SQL_EXTREMES)
        where = "" if rng.random() < 0.2 else f" WHERE rowid = {rowid}"
        connection.execute(f'UPDATE "{table}" SET "{column}" = ?{where}', (value,))
    elif kind == "sql_end_before_start" and {"start", "end"} <= set(columns):
        connection.execute(f'UPDATE "{table}" SET "end" = "start" - ? WHERE rowid = ?', (rng.choice((1, 10**9)), rowid))
    elif kind == "sql_delete_rows":
        connection.execute(f'DELETE FROM "{table}" WHERE rowid % ? = 0', (rng.choice((1, 2, 3)),))
    elif kind == "sql_duplicate_rows":
        connection.execute(f'INSERT INTO "{table}" SELECT * FROM "{table}"')
    elif kind == "sql_drop_column" and len(columns) > 1:
        connection.execute(f'ALTER TABLE "{table}" DROP COLUMN "{column}"')
    else:  # sql_drop_table, or a kind the chosen table cannot take
        connection.execute(f'DROP TABLE "{table}"')


SQL_MUTATIONS = ("sql_value", "sql_value", "sql_value", "sql_end_before_start", "sql_delete_rows",
                 "sql_duplicate_rows", "sql_drop_column", "sql_drop_table")


def mutate_sqlite(data: bytes, rng: random.Random, kind: str) -> bytes:
    if kind in BYTE_MUTATIONS:
        return BYTE_MUTATIONS[kind](data, rng, "text")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "db.sqlite"
        path.write_bytes(data)
        connection = sqlite3.connect(path)
        try:
            for _ in range(rng.choice((1, 1, 2))):
                try:
                    _sql_mutation(connection, rng, kind)
                except sqlite3.DatabaseError:
                    continue  # a key column that cannot be dropped or duplicated: the other mutations count
            connection.commit()
        finally:
            connection.close()
        return path.read_bytes()


# --- cases -------------------------------------------------------------------------------------------


def mutations_for(seed: Seed) -> tuple[str, ...]:
    """The mutation names that apply to a seed (SQLite: SQL plus raw file damage)."""
    if seed.storage == SQLITE:
        return (*SQL_MUTATIONS, "bit_flip", "truncate", "garbage")
    names = tuple(BYTE_MUTATIONS)
    return (*names, "raw_bit_flip", "raw_truncate") if seed.storage in PACKED else names


_JSON_FORMATS = ("kineto_devices", "tritonparse_raw", "tritonparse_mapped", "archive_tgz", "archive_zip")


def _flavour(format_name: str) -> str:
    return "dot" if format_name.startswith("dot") else "json" if "json" in format_name or "gz" in format_name \
        or format_name in _JSON_FORMATS else "text"


def mutate(seed: Seed, mutation: str, rng: random.Random) -> bytes:
    """The stored bytes of `seed` after one mutation."""
    if seed.storage == SQLITE:
        return mutate_sqlite(seed.data, rng, mutation)
    if mutation.startswith("raw_"):
        return BYTE_MUTATIONS[mutation[4:]](stored_bytes(seed, seed.data), rng, "text")
    return stored_bytes(seed, BYTE_MUTATIONS[mutation](seed.data, rng, _flavour(seed.format)))


def make_case(seeds: list[Seed], index: int, master_seed: int = 0, mutation: str | None = None) -> Case:
    """Case number `index` of a format (all its seeds share the numbering), deterministically.

    `mutation` pins the mutation class (the CI suite runs every class); otherwise it is drawn.
    """
    rng = random.Random(f"{master_seed}:{seeds[0].format}:{mutation}:{index}")
    seed = rng.choice(seeds)
    # The id rebuilds the case: `format/mutation/master/index` when pinned, `format/master/index` when drawn.
    case_id = f"{seed.format}/{master_seed}/{index}" if mutation is None else \
        f"{seed.format}/{mutation}/{master_seed}/{index}"
    mutation = mutation if mutation is not None else rng.choice(mutations_for(seed))
    files = {seed.relpath: mutate(seed, mutation, rng)}
    return Case(case_id, seed.format, seed.name, mutation, files)


def parse_case_id(case_id: str) -> tuple[str, str | None, int, int]:
    """(format, pinned mutation or None, master seed, index) of an id made by `make_case`."""
    parts = case_id.split("/")
    if len(parts) == 3:
        return parts[0], None, int(parts[1]), int(parts[2])
    format_name, mutation, master, index = parts
    return format_name, mutation, int(master), int(index)
