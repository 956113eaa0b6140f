"""A snapshot whose dict keys would make the C unpickler's hashing recurse without bound gets one line, never a
crash: `bounded.hash_risk` walks the opcodes before the C unpickler runs and sends such a file to the streaming
loader, which checks every key before hashing it. Hostile files run in a child process, so a regression is a
crash (a signal), not a passing test."""

from __future__ import annotations

import pickle
import pickletools
import random
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard.collectors.torch_snapshot.bounded import MAX_SMALL_TUPLES, hash_risk

REPO = Path(__file__).resolve().parents[2]
INGEST = """
import sys
from pathlib import Path
from dashboard.collectors.base import IngestError
from dashboard.collectors.torch_snapshot import COLLECTOR
try:
    COLLECTOR.collect([Path(sys.argv[1])], lambda fraction, message: None)
except IngestError as exc:
    print("ERROR", exc)
else:
    print("LOADED")
"""


def deep_key(depth: int) -> bytes:
    """{((((...),),),): 1} nested `depth` tuples deep: EMPTY_TUPLE, then TUPLE1 `depth` times."""
    return b"\x80\x04}" + b")" + b"\x85" * depth + b"K\x01s."


def doubling_key(times: int) -> bytes:
    """{t: 1} with t = (t, t) `times` times through the memo: 2^times items to hash."""
    body = b")\x940" + b"0".join(b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86\x94" for i in range(times))
    return b"\x80\x04}" + body + b"K\x01s."


@pytest.mark.parametrize("hostile", [deep_key(1_000_000), doubling_key(60)], ids=["deep", "doubling"])
def test_a_key_that_would_crash_or_hang_the_c_unpickler_is_one_line(tmp_path: Path, hostile: bytes) -> None:
    path = tmp_path / "snapshot.pickle"
    path.write_bytes(hostile)
    done = subprocess.run([sys.executable, "-c", INGEST, str(path)], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, f"the process died ({done.returncode}): {done.stderr[-2000:]}"
    # The streaming loader refused the key (`safe_pickle`): the collector names the file in one line.
    assert done.stdout.startswith(f"ERROR {path}: ") and len(done.stdout.strip().splitlines()) == 1


def random_value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.randrange(-2**70, 2**70)
    if kind == 1:
        return "".join(rng.choice("ab\n\u00e9") for _ in range(rng.choice([0, 5, 47, 48, 49, 300])))
    if kind == 2:
        return bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 60, 300])))
    if kind == 3:
        return rng.random()
    if kind == 4:
        return rng.choice([None, True, False])
    if kind == 5:
        return rng.randrange(300)
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {str(i): random_value(rng, depth + 1) for i in range(rng.randrange(4))}


def tuple_builders(data: bytes) -> tuple[int, int]:
    """(TUPLE1-3, other tuple / frozenset builders) as pickletools reads the file."""
    names = [op.name for op, _, _ in pickletools.genops(data)]
    small = sum(name in ("TUPLE1", "TUPLE2", "TUPLE3") for name in names)
    return small, sum(name in ("TUPLE", "FROZENSET") for name in names)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_the_walk_reads_opcodes_as_pickletools_does(protocol: int) -> None:
    rng = random.Random(protocol)
    for _ in range(60):
        value = {"snapshot": random_value(rng)}
        tuples = rng.randrange(3)
        for index in range(tuples * rng.choice([1, 7])):  # up to 14 small tuples, sometimes none
            value[f"t{index}"] = tuple(random_value(rng, 3) for _ in range(rng.randrange(1, 4)))
        if rng.random() < 0.2:
            value["k"] = frozenset({1, 2})
        data = pickle.dumps(value, protocol=protocol)
        small, other = tuple_builders(data)
        expected = None if other == 0 and small <= MAX_SMALL_TUPLES else "risk"
        assert (hash_risk(data) is None) == (expected is None), (protocol, small, other)


def test_a_real_shaped_snapshot_stays_on_the_fast_path() -> None:
    from dashboard.demo.torch_snapshot import snapshot_of, training_builders

    assert hash_risk(pickle.dumps(snapshot_of(training_builders(2, 4, 1, 0)), protocol=4)) is None
