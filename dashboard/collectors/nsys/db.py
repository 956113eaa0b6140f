"""Opening an Nsight Systems SQLite export safely and reading its tables by column name.

Columns move between export schema versions (and third-party tools add
some), so every query picks columns by name from `PRAGMA table_info`, never
by position, and an absent optional column reads as NULL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from dashboard.collectors.base import IngestError, is_gzip, read_source_bytes
from dashboard.collectors.failures import sqlite_problem

# SQLite straight into Arrow columns (ADBC's driver): no Python object per value. Its low-level API hands
# polars an Arrow C stream, so neither pyarrow (~0.2-0.3 s to import) nor a copy is involved; loaded on the
# first export read. None when not installed: the row-by-row reader below does the same, ~2-3x slower.
_NOT_LOADED: Any = object()
adbc_sqlite: Any = _NOT_LOADED


def _adbc_sqlite() -> Any:
    global adbc_sqlite
    if adbc_sqlite is _NOT_LOADED:
        try:
            import adbc_driver_sqlite as module
        except ImportError:
            module = None
        adbc_sqlite = module
    return adbc_sqlite


SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_BYTES = 100
_CHUNK_ROWS = 200_000
_BATCH_ROWS = 65_536
# A damaged schema can make SQLite's own error text undecodable.
SQLITE_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)


def _decode(raw: bytes) -> str:
    # Real exports hold non-UTF-8 bytes in some TEXT cells; replace, never fail.
    return raw.decode("utf-8", errors="replace")


def check_header(path: Path, head: bytes, size: int) -> None:
    """Reject a file that is not SQLite or is shorter than its own header says."""
    if not head.startswith(SQLITE_MAGIC):
        raise IngestError(path, "not an SQLite database (the 'SQLite format 3' header is missing)")
    if len(head) < _HEADER_BYTES:
        raise IngestError(path, f"truncated SQLite file: {size} bytes, shorter than the 100-byte header")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    # The in-header page count is trustworthy only when its version stamp
    # matches the change counter (SQLite file format, section 1.3.7).
    if pages and head[92:96] == head[24:28] and size < pages * page_size:
        raise IngestError(
            path,
            f"truncated SQLite file: its header promises {pages * page_size:,} bytes "
            f"({pages:,} pages of {page_size:,}) but the file has {size:,}",
        )


def connect(path: Path) -> sqlite3.Connection:
    """Open read-only (gzip is decompressed into memory); raise IngestError when unusable."""
    try:
        if is_gzip(path):
            data = read_source_bytes(path)
            check_header(path, data[:_HEADER_BYTES], len(data))
            conn = sqlite3.connect(":memory:")
            conn.deserialize(data)
        else:
            with open(path, "rb") as handle:
                check_header(path, handle.read(_HEADER_BYTES), path.stat().st_size)
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        conn.text_factory = _decode
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except SQLITE_ERRORS as exc:
        raise IngestError(path, f"corrupt SQLite database: {sqlite_problem(exc)}") from None
    return conn


def _text(cells: pl.Series) -> pl.Series:
    """TEXT cells read as bytes, as strings: those that are not UTF-8 get U+FFFD for their bad bytes, as
    `_decode` does in the row reader. Only a column holding such a cell pays for the repair, once per
    distinct value (names repeat), never once per row; one bad cell used to send its whole table to the
    row reader (3x slower)."""
    if cells.dtype != pl.Binary:  # a column of NULLs (or of numbers) comes typed otherwise
        return cells.cast(pl.String, strict=True)
    try:
        return cells.cast(pl.String, strict=True)
    except pl.exceptions.ComputeError:  # "invalid utf8"
        distinct = cells.drop_nulls().unique()
        decoded = pl.Series([_decode(raw) for raw in distinct.to_list()], dtype=pl.String)
        return cells.replace_strict(distinct, decoded, return_dtype=pl.String)


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Export:
    """One open export: its tables, their columns, and typed queries."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = connect(path)
        try:
            self.tables = table_names(self.conn)
        except SQLITE_ERRORS as exc:
            raise IngestError(path, f"corrupt SQLite database: {sqlite_problem(exc)}") from None
        self._columns: dict[str, dict[str, str]] = {}
        self._strings: tuple[pl.Series, pl.Series] | None = None
        self._shared_strings: Callable[[], tuple[pl.Series, pl.Series]] | None = None
        self._arrow_conn: Any = None

    def close(self) -> None:
        self.conn.close()
        for handle in reversed(self._arrow_conn or ()):  # connection, then database
            handle.close()

    def _arrow_frame(self, table: str, fields: dict[str, tuple[str, pl.DataType]], where: str) -> pl.DataFrame | None:
        """The query read into Arrow by ADBC's SQLite driver, cast to the fields' types; None when it cannot
        be (driver absent, a gzip export held in memory, a value of another type): the caller then reads
        row by row, which also words any problem precisely."""
        driver = _adbc_sqlite()
        if driver is None or is_gzip(self.path):
            return None
        # The driver passes TEXT bytes through unchecked and polars takes them as they are: text is read
        # as bytes and made strings by `_text` (see there for the non-UTF-8 cells real exports hold).
        select = ", ".join(f"CAST({expr} AS BLOB) AS {_quote(alias)}" if dtype == pl.String
                           else f"{expr} AS {_quote(alias)}" for alias, (expr, dtype) in fields.items())
        sql = f"SELECT {select} FROM {_quote(table)} t" + (f" WHERE {where}" if where else "")
        try:
            from adbc_driver_manager import AdbcConnection, AdbcStatement

            if self._arrow_conn is None:
                database = driver.connect(f"{self.path.resolve().as_uri()}?mode=ro")
                self._arrow_conn = (database, AdbcConnection(database))
            with AdbcStatement(self._arrow_conn[1]) as statement:
                # Big batches: the driver's default of 1,024 rows leaves polars a concatenation of many
                # small pieces (~12 % of a 56,000-kernel read).
                statement.set_options(**{"adbc.sqlite.query.batch_rows": str(_BATCH_ROWS)})
                statement.set_sql_query(sql)
                stream, _ = statement.execute_query()
                frame = pl.DataFrame(stream)  # the Arrow C stream interface: no pyarrow
            return frame.select(_text(frame.get_column(name)) if dtype == pl.String
                                else pl.col(name).cast(dtype, strict=True) for name, (_, dtype) in fields.items())
        except (Exception, pl.exceptions.PanicException):  # any refusal: the row reader decides
            return None

    def has(self, table: str) -> bool:
        return table in self.tables

    def columns(self, table: str) -> dict[str, str]:
        """Column name -> declared type (upper case) of a table; empty when absent."""
        if table not in self._columns:
            rows = self.conn.execute(f"PRAGMA table_info({_quote(table)})").fetchall() if self.has(table) else []
            self._columns[table] = {row[1]: str(row[2] or "").upper() for row in rows}
        return self._columns[table]

    def column(self, table: str, *candidates: str) -> str | None:
        """The first candidate column the table has, quoted, or None."""
        present = self.columns(table)
        return next((f"t.{_quote(c)}" for c in candidates if c in present), None)

    def col(self, table: str, *candidates: str) -> str:
        """Like `column`, but NULL when absent (an optional field)."""
        return self.column(table, *candidates) or "NULL"

    def required(self, table: str, *candidates: str) -> str:
        """Like `column`, but a table without any candidate is an error (absent tables read empty)."""
        found = self.column(table, *candidates)
        if found is None and self.has(table):
            raise IngestError(
                self.path,
                f"table {table} has none of the columns {', '.join(candidates)} "
                f"(it has {', '.join(self.columns(table)) or 'no columns'})",
            )
        return found or "NULL"

    def string(self, table: str, alias: str, *candidates: str) -> dict[str, tuple[str, pl.DataType]]:
        """Fields for a name held in one of several columns: StringIds references or inline text.

        References are fetched as integers and resolved once per distinct id by
        `resolve`, which is far cheaper than a lookup per row in SQL.
        """
        fields: dict[str, tuple[str, pl.DataType]] = {}
        for name in candidates:
            declared = self.columns(table).get(name)
            if declared is None:
                continue
            if "INT" in declared and self.has("StringIds"):
                fields[f"{alias}__id__{name}"] = (f"t.{_quote(name)}", pl.Int64)
            else:
                fields[f"{alias}__text__{name}"] = (f"CAST(t.{_quote(name)} AS TEXT)", pl.String)
        return fields or {f"{alias}__text__": ("NULL", pl.String)}

    def string_ids(self) -> tuple[pl.Series, pl.Series]:
        if self._strings is None and self._shared_strings is not None:
            self._strings = self._shared_strings()
        if self._strings is None:
            fields = {"id": ("t.id", pl.Int64), "value": ("CAST(t.value AS TEXT)", pl.String)}
            strings = self._arrow_frame("StringIds", fields, "") if self.has("StringIds") else None
            if strings is None:  # no driver, or cells that are not UTF-8 (replaced here, as everywhere)
                rows = self.pairs("SELECT id, CAST(value AS TEXT) FROM StringIds") if self.has("StringIds") else []
                strings = pl.DataFrame(rows, schema={"id": pl.Int64, "value": pl.String}, orient="row")
            strings = strings.drop_nulls("id").unique("id", keep="first", maintain_order=True)
            self._strings = (strings["id"], strings["value"])
        return self._strings

    def share_strings(self, strings: Callable[[], tuple[pl.Series, pl.Series]]) -> None:
        """Take the `string_ids` of the same export from `strings` (called when first needed: another
        connection may still be reading them) rather than reading them again."""
        self._shared_strings = strings

    def resolve(self, frame: pl.DataFrame, alias: str,
                transform: Callable[[pl.Expr], pl.Expr] | None = None) -> pl.DataFrame:
        """Replace the `string` fields of `alias` by one column: the first non-null name.

        `transform` (a string expression) is applied to the names: once per string-table entry for
        referenced names (a few thousand strings against millions of rows), per row for inline text.
        """
        parts = [c for c in frame.columns if c.startswith(f"{alias}__")]
        ids, values = self.string_ids()
        if transform is not None:
            values = values.to_frame().select(transform(pl.col(values.name))).to_series()
        names = [
            pl.col(c).replace_strict(ids, values, default=None, return_dtype=pl.String) if "__id__" in c
            else pl.col(c) if transform is None else transform(pl.col(c))
            for c in parts
        ]
        return frame.with_columns(pl.coalesce(names).alias(alias)).drop(parts)

    def pid(self, table: str, column: str) -> str:
        """The process id packed in a globalPid / globalTid column (0 when absent)."""
        found = self.column(table, column)
        return f"(({found} >> 24) & 16777215)" if found else "0"

    def tid(self, table: str, column: str = "globalTid") -> str:
        found = self.column(table, column)
        return f"({found} & 16777215)" if found else "NULL"

    def frame(self, table: str, fields: dict[str, tuple[str, pl.DataType]], where: str = "") -> pl.DataFrame:
        """Run `SELECT <expr> AS <alias>, ... FROM table t [WHERE ...]` into a typed frame."""
        schema = {alias: dtype for alias, (_, dtype) in fields.items()}
        if not self.has(table):
            return pl.DataFrame(schema=schema)
        select = ", ".join(f"{expr} AS {_quote(alias)}" for alias, (expr, _) in fields.items())
        sql = f"SELECT {select} FROM {_quote(table)} t" + (f" WHERE {where}" if where else "")
        arrow = self._arrow_frame(table, fields, where)
        if arrow is not None:
            return arrow
        chunks = []
        try:
            cursor = self.conn.execute(sql)
            # Chunks bound the memory held as Python tuples on million-row tables.
            while rows := cursor.fetchmany(_CHUNK_ROWS):
                chunks.append(pl.DataFrame(rows, schema=schema, orient="row"))
        except SQLITE_ERRORS as exc:
            raise IngestError(self.path, f"corrupt SQLite database while reading {table}: {sqlite_problem(exc)}") \
                from None
        except (pl.exceptions.PolarsError, TypeError, ValueError, OverflowError):
            raise IngestError(self.path, self._wrong_type(table, fields, where)) from None
        return pl.concat(chunks) if chunks else pl.DataFrame(schema=schema)

    def _wrong_type(self, table: str, fields: dict[str, tuple[str, pl.DataType]], where: str) -> str:
        """Which column holds a value of the wrong type (text in a number column), and where."""
        for alias, (expr, dtype) in fields.items():
            if expr == "NULL" or not dtype.is_integer():
                continue
            condition = f"typeof({expr}) NOT IN ('integer', 'null')" + (f" AND ({where})" if where else "")
            try:
                found = self.conn.execute(
                    f"SELECT count(*), min(t.rowid) FROM {_quote(table)} t WHERE {condition}").fetchone()
                if not found or not found[0]:
                    continue
                kind, value = self.conn.execute(
                    f"SELECT typeof({expr}), CAST({expr} AS TEXT) FROM {_quote(table)} t WHERE t.rowid = ?",
                    (found[1],)).fetchone()
            except SQLITE_ERRORS:
                continue
            column = expr[len('t."'):-1] if expr.startswith('t."') and expr.endswith('"') else alias
            shown = (value[:40] + "…") if isinstance(value, str) and len(value) > 40 else value
            what = {"text": "text", "real": "a fractional or too large number", "blob": "binary data"}.get(kind, kind)
            rows = f"{found[0]:,} row{'s' if found[0] != 1 else ''}"
            return (f"{what} where an integer is expected (where: table {table}, column {column}, {rows}, "
                    f"first at rowid {found[1]}: {shown!r})")
        return f"values of an unexpected type or size (where: table {table})"

    def pairs(self, sql: str) -> list[tuple]:
        """A small metadata query; a failure here is a corrupt file."""
        try:
            return self.conn.execute(sql).fetchall()
        except SQLITE_ERRORS as exc:
            raise IngestError(self.path, f"corrupt SQLite database: {sqlite_problem(exc)}") from None
