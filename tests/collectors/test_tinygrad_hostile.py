"""Pickles that would run code, or make the reader hang or crash, under tinygrad's VIZ file names.

Each must end in one IngestError line naming the file, fast, with no side effect (a marker file
the payload would create stays absent) and the process alive; a huge memo index must cost nothing.
"""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

import pytest

from dashboard.collectors import registry
from dashboard.collectors.base import IngestError
from dashboard.demo.tinygrad_generated import demo_pair
from dashboard.demo.tinygrad_pickles import dumps


def _ingest_error(path: Path) -> str:
    started = time.perf_counter()
    with pytest.raises(IngestError) as caught:
        registry.collect([path])
    assert time.perf_counter() - started < 10
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    return message[len(f"{path}: "):]


def _spliced(payload: bytes) -> bytes:
    """A real rewrites.pkl head (so the file is recognised as tinygrad's) whose first object is replaced by
    `payload` after a tinygrad global: PROTO 4, the tinygrad global, then what the payload does."""
    head = b"\x80\x04\x8c\x10tinygrad.uop.ops\x94\x8c\x0cRewriteTrace\x94\x93\x94" + b"0"  # pushed, then popped
    return head + payload + b"."


class _RunsCode:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (os.system, (f"touch {self.marker}",))


def test_os_system_by_reduce_is_refused_and_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    data = dumps([*demo_pair().events, _RunsCode(marker)])
    path = tmp_path / "profile.pkl"
    path.write_bytes(data)
    problem = _ingest_error(path)
    assert problem.startswith("the pickle asks to import `posix.system` (it would run code)")
    assert not marker.exists()


@pytest.mark.parametrize(("module", "name"), [("collections", "OrderedDict"), ("subprocess", "Popen"),
                                              ("builtins", "getattr"), ("tinygrad_evil", "Payload"),
                                              ("decimal", "getcontext")])
def test_a_global_outside_the_allowed_ones_is_refused(tmp_path: Path, module: str, name: str) -> None:
    # A tinygrad head so that the file is taken for tinygrad's, then GLOBAL module.name and a call of it.
    payload = f"c{module}\n{name}\n".encode() + b"(tR"
    path = tmp_path / "rewrites.pkl"
    path.write_bytes(_spliced(payload))
    assert _ingest_error(path).startswith(f"the pickle asks to import `{module}.{name}`")


def test_a_dict_key_nested_a_million_tuples_deep_is_refused_without_crashing(tmp_path: Path) -> None:
    # CPython's hash of such a tuple recurses in C without a depth check: a segmentation fault if it is hashed.
    payload = b"}" + b")" + b"\x85" * 1_000_000 + b"N" + b"s"
    path = tmp_path / "rewrites.pkl"
    path.write_bytes(_spliced(payload))
    assert _ingest_error(path) == "corrupt pickle: its bytes do not decode as tinygrad VIZ data (damaged data)"


def test_a_set_of_a_doubling_tuple_is_refused_before_hashing_it(tmp_path: Path) -> None:
    # t = (t, t) sixty times: hashing it would visit 2^60 items; its pickle is 500 bytes.
    doubling = b")\x94" + b"".join(b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86\x94" for i in range(1, 61))
    path = tmp_path / "rewrites.pkl"
    path.write_bytes(_spliced(b"\x8f(" + doubling + b"\x90"))
    assert "do not decode as tinygrad VIZ data" in _ingest_error(path)


def test_deep_nesting_in_a_value_is_read_without_recursion(tmp_path: Path) -> None:
    # A list nested 200,000 deep as an event's name: built by opcodes, read as data, never walked recursively.
    builder = demo_pair()
    _, profile = builder.files()
    nested = b"]" * 200_000 + b"a" * 199_999
    position = profile.index(b"\x8c\x05randn")  # the first user call's name
    data = profile[:position] + nested + profile[position + len(b"\x8c\x05randn"):]
    path = tmp_path / "profile.pkl"
    path.write_bytes(data)
    run = registry.collect([path])
    assert run.tables["ranges"].filter(run.tables["ranges"]["category"] == "USER")["name"].null_count() == 1


@pytest.mark.parametrize("protocol", [3, 4])
def test_a_huge_memo_index_costs_one_entry(tmp_path: Path, protocol: int) -> None:
    # CPython's C unpickler would grow its memo array to the index and zero it (gigabytes, seconds in C).
    rewrites, _ = demo_pair().files(protocol)
    intact = registry.collect([_file(tmp_path / "intact", rewrites)]).tables
    top = rewrites.index(b"RewriteTrace") + len(b"RewriteTrace") + (2 if protocol == 4 else 1)
    top += 2 if protocol == 3 else 1  # past the global's BINPUT / MEMOIZE
    damaged = rewrites[:top] + b"r" + (4_000_000_000).to_bytes(4, "little") + rewrites[top:]  # LONG_BINPUT
    started = time.perf_counter()
    if protocol == 3:  # keys named by BINPUT: the extra entry changes nothing else
        tables = registry.collect([_file(tmp_path / "damaged", damaged)]).tables
        for table, frame in intact.items():
            assert tables[table].equals(frame), table
    else:  # MEMOIZE numbers entries by the memo's size: one more entry shifts every later key (as in CPython)
        _ingest_error(_file(tmp_path / "damaged", damaged))
    assert time.perf_counter() - started < 5


def _file(folder: Path, data: bytes) -> Path:
    folder.mkdir()
    path = folder / "rewrites.pkl"
    path.write_bytes(data)
    return path


def test_a_persistent_id_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rewrites.pkl"
    path.write_bytes(_spliced(b"\x8c\x04evil\x94Q"))  # BINPERSID
    assert _ingest_error(path).startswith("the pickle refers to a persistent object")


def test_state_for_a_handed_out_class_is_refused(tmp_path: Path) -> None:
    # BUILD on the class itself (not an instance) with slots state would set class attributes.
    payload = b"\x8c\x10tinygrad.uop.ops\x8c\x03UOp\x93N}\x8c\x08__init__N\x86\x86b"
    path = tmp_path / "rewrites.pkl"
    path.write_bytes(_spliced(payload))
    assert "do not decode as tinygrad VIZ data" in _ingest_error(path)


def test_a_bytearray_of_a_terabyte_is_refused_before_it_is_allocated(tmp_path: Path) -> None:
    path = tmp_path / "rewrites.pkl"
    path.write_bytes(_spliced(b"\x96" + (1 << 40).to_bytes(8, "little")))
    assert "do not decode as tinygrad VIZ data" in _ingest_error(path)


def test_truncated_and_foreign_pickles_are_one_line(tmp_path: Path) -> None:
    rewrites, _ = demo_pair().files()
    cut = tmp_path / "cut" / "rewrites.pkl"
    cut.parent.mkdir()
    cut.write_bytes(rewrites[: len(rewrites) // 2])
    assert _ingest_error(cut) == "truncated pickle: the file ends before the tinygrad data does"
    # Cut anywhere (after an opcode, inside its argument, inside a frame): always the same line.
    # (From past the first tinygrad global: shorter, the file is not recognisably tinygrad's.)
    for end in range(rewrites.index(b"tinygrad") + 40, len(rewrites) - 1, 97):
        cut.write_bytes(rewrites[:end])
        assert _ingest_error(cut) == "truncated pickle: the file ends before the tinygrad data does", end
    lone = tmp_path / "lone.pkl"
    lone.write_bytes(_spliced(b"\x8c\x10tinygrad.helpers\x8c\nTracingKey\x93)\x81"))
    assert _ingest_error(lone).startswith("not a tinygrad VIZ file: a pickled TracingKey")
    assert pickle.loads(pickle.dumps(1)) == 1  # the process is intact
