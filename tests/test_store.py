from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors.base import IngestError
from dashboard.ingest.pipeline import ingest_paths
from dashboard.ingest.sources import default_name
from dashboard.store import RunNotFound, RunStore
from tests.support.csv_collector import write_kernel_csv


def kernels_frame() -> pl.DataFrame:
    return pl.DataFrame({"name": ["b", "a", "c"], "start_ns": [30, 10, 20], "end_ns": [35, 12, 29]})


def test_write_lays_out_run_folder_with_sources_byte_for_byte(data_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "trace.json"
    source.write_bytes(b"\x00\x01original bytes\xff")
    store = RunStore(data_dir)
    run_id = store.write("my run", {"kernels": kernels_frame()}, sources=[source], parse_seconds=1.23456)
    folder = data_dir / "runs" / run_id
    assert run_id.startswith("my-run-")
    info = json.loads((folder / "run.json").read_text())
    assert info["name"] == "my-run"
    assert info["row_counts"] == {"kernels": 3}
    assert info["evidence"] == ["kernels"]
    assert info["schema_version"] == 1
    assert info["parse_seconds"] == 1.235
    assert info["sources"] == ["trace.json"]
    assert (folder / "source" / "trace.json").read_bytes() == source.read_bytes()
    table = pl.read_parquet(folder / "kernels.parquet")
    assert table["start_ns"].to_list() == [10, 20, 30]  # time-sorted on write
    assert table.schema["start_ns"] == pl.Int64
    assert "grid_x" in table.columns  # conformed to the canonical schema


def test_same_name_in_the_same_second_gets_distinct_ids(data_dir: Path) -> None:
    store = RunStore(data_dir)
    ids = [store.write("same", {"kernels": kernels_frame()}) for _ in range(4)]
    assert len(set(ids)) == 4
    assert all((data_dir / "runs" / run_id / "run.json").is_file() for run_id in ids)


def test_failed_write_leaves_nothing_behind(data_dir: Path) -> None:
    store = RunStore(data_dir)
    with pytest.raises(ValueError, match="outside its schema"):
        store.write("bad", {"kernels": pl.DataFrame({"not_a_column": [1]})})
    assert list((data_dir / "runs").iterdir()) == []
    assert list((data_dir / ".staging").iterdir()) == []


def test_open_is_cached_lazy_and_list_is_newest_first(data_dir: Path) -> None:
    store = RunStore(data_dir)
    first = store.write("one", {"kernels": kernels_frame()})
    second = store.write("two", {"kernels": kernels_frame()})
    assert store.open(first) is store.open(first)
    assert isinstance(store.open(first).scan("kernels"), pl.LazyFrame)
    assert store.open(first).frame("memcpy").height == 0  # absent table reads as empty
    listed = [info.id for info in store.list_runs()]
    assert set(listed) == {first, second}


@pytest.mark.parametrize("bad_id", ["..", "../x", "/etc", "a/b", "", ".staging", "x\x00y"])
def test_run_ids_that_could_escape_are_rejected(data_dir: Path, bad_id: str) -> None:
    store = RunStore(data_dir)
    with pytest.raises(RunNotFound):
        store.open(bad_id)


def test_symlinked_run_outside_the_data_folder_is_rejected(data_dir: Path, tmp_path: Path) -> None:
    store = RunStore(data_dir)
    real = store.write("real", {"kernels": kernels_frame()})
    outside = tmp_path / "outside"
    (data_dir / "runs" / real).rename(outside)
    (data_dir / "runs" / "sneaky").symlink_to(outside)
    with pytest.raises(RunNotFound):
        store.open("sneaky")


def test_delete_removes_the_run(data_dir: Path) -> None:
    store = RunStore(data_dir)
    run_id = store.write("gone", {"kernels": kernels_frame()})
    store.delete(run_id)
    assert not store.exists(run_id)
    assert store.list_runs() == []


def test_broken_run_json_is_skipped_not_fatal(data_dir: Path) -> None:
    store = RunStore(data_dir)
    good = store.write("good", {"kernels": kernels_frame()})
    broken = data_dir / "runs" / "broken-20250101-000000"
    broken.mkdir()
    (broken / "run.json").write_text("{not json")
    assert [info.id for info in store.list_runs()] == [good]


def test_ingest_combines_several_files_into_one_run(data_dir: Path, tmp_path: Path, csv_collector) -> None:
    a = write_kernel_csv(tmp_path / "rank0.csv", rows=4)
    b = write_kernel_csv(tmp_path / "rank1.csv", rows=6)
    seen: list[tuple[float | None, str]] = []
    run_id = ingest_paths(RunStore(data_dir), [a, b], progress=lambda f, m: seen.append((f, m)))
    run = RunStore(data_dir).open(run_id)
    kernels = run.frame("kernels")
    assert kernels.height == 10
    assert sorted(kernels["rank"].unique().to_list()) == [0, 1]
    assert run.info.collectors == ["kernel_csv"]
    assert run.info.metadata == {"kernel_csv": {"files": 2}}
    assert seen[0][0] == 0.0 and any(f == 1.0 for f, _ in seen)
    assert run_id.startswith("rank0-")


def test_default_name_strips_format_suffixes() -> None:
    assert default_name([Path("/x/worker0.1234.pt.trace.json.gz")]) == "worker0.1234"
    assert default_name([Path("my trace!.json")]) == "my-trace"
    # Archives, tritonparse traces and snapshots (issue 30) are named without their suffixes too.
    assert [default_name([Path(n)]) for n in ("job42.tar.gz", "t_mapped.ndjson.gz", "snap.pickle", "r.zip")] == [
        "job42", "t_mapped", "snap", "r"]


SLOW_INGEST = """
import sys, time
from pathlib import Path
import dashboard.store as store_module
from dashboard.ingest.pipeline import ingest_paths
from dashboard.collectors import register
sys.path.insert(0, {repo!r})
from tests.support.csv_collector import KernelCsvCollector
register(KernelCsvCollector())
original = store_module.RunStore.publish_staging
def slow_publish(*args, **kwargs):
    print("copying", flush=True)
    time.sleep(60)
    return original(*args, **kwargs)
store_module.RunStore.publish_staging = slow_publish
ingest_paths(store_module.RunStore({data!r}), [Path({source!r})])
"""


def test_killing_an_ingest_midway_leaves_no_run(data_dir: Path, tmp_path: Path) -> None:
    source = write_kernel_csv(tmp_path / "k.csv")
    repo = str(Path(__file__).resolve().parents[1])
    script = SLOW_INGEST.format(repo=repo, data=str(data_dir), source=str(source))
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "copying"  # parquet written, sources copied, not yet published
    staged = [p for p in (data_dir / ".staging").iterdir() if p.is_dir()]
    assert staged and (staged[0] / "kernels.parquet").is_file()
    assert (data_dir / ".staging" / f"{staged[0].name}.owner").is_file()  # names the process writing it
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    assert list((data_dir / "runs").iterdir()) == []
    assert RunStore(data_dir).list_runs() == []
    # The next ingest (or server start) clears what the dead ingest left in staging at once:
    # its owner is recorded and gone, no need to wait for the folder to age.
    assert RunStore(data_dir).remove_stale_staging() == 1
    assert list((data_dir / ".staging").iterdir()) == []


def test_staging_of_a_live_owner_is_kept_and_of_an_unknown_owner_only_when_old(data_dir: Path) -> None:
    store = RunStore(data_dir)
    staging = data_dir / ".staging"
    staging.mkdir(parents=True)
    live = staging / "live-run"
    live.mkdir()
    (staging / "live-run.owner").write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
    unknown = staging / "no-owner-run"
    unknown.mkdir()
    old = time.time() - 7 * 3600
    os.utime(live, (old, old))  # a live owner's folder is kept however old
    assert store.remove_stale_staging() == 0
    os.utime(unknown, (old, old))
    assert store.remove_stale_staging() == 1
    assert live.is_dir() and not unknown.exists()


def test_a_marker_is_written_whole_and_a_writer_killed_mid_write_leaves_nothing_for_long(data_dir: Path) -> None:
    from dashboard.store.owners import read_owner, write_owner

    staging = data_dir / ".staging"
    staging.mkdir(parents=True)
    write_owner(staging / "run-a.owner")
    assert read_owner(staging / "run-a.owner") == {"pid": os.getpid(), "host": socket.gethostname()}
    assert sorted(p.name for p in staging.iterdir()) == ["run-a.owner"]  # no part file left beside it
    (staging / "run-a").mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    # A writer killed before its rename leaves only its part file, named by its pid: removed at once.
    (staging / f"run-b.owner.{dead.pid}.part").write_text("")
    # A live writer's part file stays.
    (staging / f"run-c.owner.{os.getpid()}.part").write_text("")
    # A marker naming nobody (an empty file, as a kill mid-write left before) goes once old.
    (staging / "run-d.owner").write_text("")
    store = RunStore(data_dir)
    store.remove_stale_staging()
    assert sorted(p.name for p in staging.iterdir()) == ["run-a", "run-a.owner", f"run-c.owner.{os.getpid()}.part",
                                                          "run-d.owner"]
    old = time.time() - 7 * 3600
    os.utime(staging / "run-d.owner", (old, old))
    store.remove_stale_staging()
    assert sorted(p.name for p in staging.iterdir()) == ["run-a", "run-a.owner", f"run-c.owner.{os.getpid()}.part"]


def test_every_ingest_start_clears_the_staging_of_dead_processes(data_dir: Path, tmp_path: Path,
                                                                 csv_collector) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    staging = data_dir / ".staging"
    staging.mkdir(parents=True)
    (staging / "killed-cli-run").mkdir()
    (staging / "killed-cli-run" / "kernels.parquet").write_bytes(b"x" * 1000)
    (staging / "killed-cli-run.owner").write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname()}))
    ingest_paths(RunStore(data_dir), [write_kernel_csv(tmp_path / "k.csv")])
    assert list(staging.iterdir()) == []


# ---- symbolic links are never followed ---------------------------------------------------------
def test_symlinks_in_an_ingested_folder_are_skipped_and_named(data_dir: Path, tmp_path: Path,
                                                             csv_collector) -> None:
    secret = tmp_path / "secret"
    (secret / "deep").mkdir(parents=True)
    (secret / "passwd").write_text("root:x:0:0")
    (secret / "deep" / "k.csv").write_text("kernel_csv,name,start_ns,end_ns\nx,stolen,0,1\n")
    folder = tmp_path / "traces"
    folder.mkdir()
    write_kernel_csv(folder / "k.csv")
    (folder / "notes.txt").symlink_to(secret / "passwd")
    (folder / "tree").symlink_to(secret)  # a linked folder must not bring its tree in
    (folder / "more.csv").symlink_to(secret / "deep" / "k.csv")  # nor a recognisable linked file
    store = RunStore(data_dir)
    run = store.open(ingest_paths(store, [folder]))
    source = run.info.path / "source"
    copied = sorted(str(p.relative_to(source)) for p in source.rglob("*"))
    assert copied == ["traces", "traces/k.csv"]
    assert not any(p.is_symlink() for p in source.rglob("*"))
    assert "stolen" not in run.frame("kernels").get_column("name").to_list()
    assert b"root:x" not in b"".join(p.read_bytes() for p in run.info.path.rglob("*") if p.is_file())
    for link in ("notes.txt", "tree", "more.csv"):
        assert f"{folder / link}: symbolic link, skipped" in run.info.warnings


def test_a_symlink_given_as_an_input_is_refused_in_one_line(data_dir: Path, tmp_path: Path, csv_collector) -> None:
    link = tmp_path / "latest.csv"
    link.symlink_to(write_kernel_csv(tmp_path / "k.csv"))
    with pytest.raises(IngestError) as refused:
        ingest_paths(RunStore(data_dir), [link])
    assert str(refused.value) == f"{link}: symbolic link (to {tmp_path / 'k.csv'}); give the file or folder it " \
                                 "points to instead"
    assert RunStore(data_dir).list_runs() == []
