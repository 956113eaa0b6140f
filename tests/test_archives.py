"""Archives opened like folders (issue 30, shape 5): .tar, .tar.gz / .tgz, .zip told by their bytes, unpacked
safely (no absolute paths, no `..`, no links, bounded members and bytes), the archive kept as the source."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.collectors.archive_kind import archive_kind
from dashboard.collectors.base import IngestError
from dashboard.ingest.archives import Limits, unpack_archive, unpack_inputs
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.support.rank_runs import rank_traces


def _tar(path: Path, folder: Path, mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tar:
        for file in sorted(folder.iterdir()):
            tar.add(file, arcname=f"job42/{file.name}")
    return path


def _zip(path: Path, folder: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bundle:
        for file in sorted(folder.iterdir()):
            bundle.write(file, f"job42/{file.name}")
    return path


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rank_traces(tmp_path_factory.mktemp("ranks") / "ranks", 3, kernels=300)


@pytest.mark.parametrize(("name", "make", "kind"), [
    ("traces.tar.gz", lambda p, f: _tar(p, f), "tar.gz"),
    ("traces.tgz", lambda p, f: _tar(p, f), "tar.gz"),
    ("traces.tar", lambda p, f: _tar(p, f, "w"), "tar"),
    ("traces.zip", _zip, "zip"),
    ("no_suffix_at_all", lambda p, f: _tar(p, f), "tar.gz"),  # by content, not by name
])
def test_an_archive_of_rank_traces_ingests_like_its_folder(tmp_path: Path, ranks: Path, name: str, make,
                                                           kind: str) -> None:
    archive = make(tmp_path / name, ranks)
    assert archive_kind(archive) == kind
    store = RunStore(tmp_path / "data")
    folder = store.open(ingest_paths(store, [ranks], name="folder"))
    packed = store.open(ingest_paths(store, [archive], name="packed"))
    for table in ("kernels", "ranges", "memcpy"):
        assert packed.frame(table).sort(packed.frame(table).columns).equals(
            folder.frame(table).sort(folder.frame(table).columns)), table
    assert sorted(packed.frame("kernels")["rank"].unique()) == [0, 1, 2]
    # The source is the archive byte for byte; nothing unpacked is left behind.
    assert packed.info.sources == [name]
    assert (packed.info.path / "source" / name).read_bytes() == archive.read_bytes()
    assert not any(p.name == ".unpacked" for p in packed.info.path.rglob("*"))
    assert list((tmp_path / "data" / ".staging").iterdir()) == []


def test_archive_members_are_named_through_the_archive(tmp_path: Path, ranks: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    (folder / "rank-0.json").write_bytes((ranks / "rank-0.json").read_bytes())
    archive = _tar(tmp_path / "job.tar.gz", folder)
    store = RunStore(tmp_path / "data")
    run = store.open(ingest_paths(store, [archive]))
    assert f"{archive}/job42/notes.txt: not recognised, kept as a source but not parsed" in run.info.warnings


def _hostile_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize(("name", "problem"), [
    ("/etc/cron.d/evil", "has an absolute path: the archive is refused"),
    ("job/../../evil.json", "climbs out of the archive (`..`): the archive is refused"),
])
def test_paths_outside_the_folder_refuse_the_archive(tmp_path: Path, ranks: Path, name: str, problem: str) -> None:
    archive = _hostile_tar(tmp_path / "bad.tar.gz", [(_member("ok/rank-0.json"), (ranks / "rank-0.json").read_bytes()),
                                                       (_member(name), b"{}")])
    store = RunStore(tmp_path / "data")
    with pytest.raises(IngestError) as caught:
        ingest_paths(store, [archive])
    assert str(caught.value) == f"{archive}: member {name!r} {problem}"
    assert not (tmp_path / "evil.json").exists() and list((tmp_path / "data" / ".staging").iterdir()) == []


def test_links_and_devices_are_left_out_and_counted(tmp_path: Path, ranks: Path) -> None:
    archive = _hostile_tar(tmp_path / "links.tar.gz", [
        (_member("job/rank-0.json"), (ranks / "rank-0.json").read_bytes()),
        (_member("job/passwd", tarfile.SYMTYPE, "/etc/passwd"), b""),
        (_member("job/hard", tarfile.LNKTYPE, "job/rank-0.json"), b""),
        (_member("job/null", tarfile.CHRTYPE), b""),
    ])
    store = RunStore(tmp_path / "data")
    run = store.open(ingest_paths(store, [archive]))
    assert run.frame("kernels").height == 300
    assert f"{archive}: 3 links or special files left out ('job/passwd', 'job/hard', 'job/null'): an archive's " \
           "links are never followed" in run.info.warnings


def test_zip_links_are_left_out(tmp_path: Path) -> None:
    archive = tmp_path / "links.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        link = zipfile.ZipInfo("job/passwd")
        link.external_attr = (0o120777 << 16)  # S_IFLNK
        bundle.writestr(link, "/etc/passwd")
        bundle.writestr("job/a.txt", "x")
    warnings = unpack_archive(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "job" / "passwd").exists() and (tmp_path / "out" / "job" / "a.txt").exists()
    assert warnings == [f"{archive}: 1 links or special files left out ('job/passwd'): an archive's links are never "
                        "followed"]


def test_bombs_stop_at_the_limits_in_one_line(tmp_path: Path) -> None:
    big = tmp_path / "bomb.tar.gz"
    _hostile_tar(big, [(_member("zeros.bin"), bytes(3 << 20))])
    assert big.stat().st_size < 20_000  # 3 MiB of zeros packs to a few KiB
    with pytest.raises(IngestError) as caught:
        unpack_archive(big, tmp_path / "a", Limits(bytes=2 << 20))
    assert str(caught.value) == (f"{big}: unpacks to more than 2 MiB: not unpacked (a decompression bomb, or unpack "
                                 "it yourself)")
    many = _hostile_tar(tmp_path / "many.tar.gz", [(_member(f"f{i}.txt"), b"x") for i in range(12)])
    with pytest.raises(IngestError, match=r"holds more than 10 files: not unpacked"):
        unpack_archive(many, tmp_path / "b", Limits(members=10))
    zipped = tmp_path / "bomb.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("zeros.bin", bytes(3 << 20))
    with pytest.raises(IngestError, match="unpacks to more than 2 MiB"):
        unpack_archive(zipped, tmp_path / "c", Limits(bytes=2 << 20))


def test_damaged_and_empty_archives_are_one_line(tmp_path: Path, ranks: Path) -> None:
    whole = _tar(tmp_path / "whole.tar.gz", ranks).read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    store = RunStore(tmp_path / "data")
    with pytest.raises(IngestError) as caught:
        ingest_paths(store, [cut])
    assert str(caught.value) in (f"{cut}: a truncated tar.gz archive: it cannot be unpacked",
                                 f"{cut}: a damaged tar.gz archive: it cannot be unpacked")
    empty = tmp_path / "empty.zip"
    zipfile.ZipFile(empty, "w").close()
    with pytest.raises(IngestError, match="an empty zip archive"):
        ingest_paths(store, [empty])


def test_an_archive_inside_a_folder_and_one_inside_an_archive(tmp_path: Path, ranks: Path) -> None:
    folder = tmp_path / "upload"
    folder.mkdir()
    inner_src = tmp_path / "inner"
    inner_src.mkdir()
    (inner_src / "rank-2.json").write_bytes((ranks / "rank-2.json").read_bytes())
    staged = tmp_path / "staged"
    staged.mkdir()
    (staged / "rank-1.json").write_bytes((ranks / "rank-1.json").read_bytes())
    _tar(staged / "nested.tar.gz", inner_src)
    _tar(folder / "outer.tar.gz", staged)
    (folder / "rank-0.json").write_bytes((ranks / "rank-0.json").read_bytes())
    store = RunStore(tmp_path / "data")
    run = store.open(ingest_paths(store, [folder]))
    assert sorted(run.frame("kernels")["rank"].unique()) == [0, 1]  # the nested archive is not opened
    assert any("1 archive inside it kept as files, not opened (nested.tar.gz)" in w for w in run.info.warnings)
    assert (run.info.path / "source" / "upload" / "outer.tar.gz").read_bytes() == (folder / "outer.tar.gz").read_bytes()


def test_registry_detection_tells_archives_by_their_bytes(tmp_path: Path, ranks: Path) -> None:
    gz_json = tmp_path / "trace.tar.gz"  # a gzip of one JSON file is no archive, whatever its name
    gz_json.write_bytes(gzip.compress((ranks / "rank-0.json").read_bytes()))
    assert archive_kind(gz_json) is None
    assert registry.collect([gz_json]).collectors == ["kineto"]
    archive = _zip(tmp_path / "x.json", ranks)
    with pytest.raises(IngestError, match="a zip archive: ingest it with `dashboard ingest`"):
        registry.detect([archive])
    unpacked = unpack_inputs([archive], tmp_path / "u")
    assert pl.Series([p.name for p in unpacked.inputs]).to_list() == ["x.json"]
    assert unpacked.folders == {tmp_path / "u" / "0" / "x.json": archive}


def test_an_archive_on_the_cluster_path(tmp_path: Path, ranks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    distributed = pytest.importorskip("distributed")
    from click.testing import CliRunner

    from dashboard.cli.main import cli
    from dashboard.ingest import cluster as cluster_ingest

    archive = _tar(tmp_path / "job.tgz", ranks)
    cluster = distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0")
    monkeypatch.setattr(cluster_ingest, "connect", lambda address, workers=None: distributed.Client(cluster))
    try:
        result = CliRunner().invoke(cli, ["ingest", str(archive), "--data", str(tmp_path / "data"),
                                          "--cluster", "local"])
    finally:
        cluster.close()
    assert result.exit_code == 0, result.output
    store = RunStore(tmp_path / "data")
    (info,) = store.list_runs()
    run = store.open(info.id)
    assert sorted(run.frame("kernels")["rank"].unique()) == [0, 1, 2]
    assert info.sources == ["job.tgz"]
    assert (info.path / "source" / "job.tgz").read_bytes() == archive.read_bytes()
    assert not (info.path / ".unpacked").exists()
