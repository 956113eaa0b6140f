"""tinygrad VIZ files without tinygrad: generated pairs (the demo's generator counts what it writes), pairing,
recognition by content, the release check, the estimate evaluator, memory and damaged parts."""

from __future__ import annotations

import gzip
import random
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.collectors.tinygrad import COLLECTOR
from dashboard.collectors.tinygrad.records import EnumValue, Record, record_class
from dashboard.collectors.tinygrad.symbolic import MAX_NODES, evaluate
from dashboard.collectors.tinygrad.values import Names, expression_text
from dashboard.demo.tinygrad_generated import VizBuilder, demo_pair
from dashboard.demo.tinygrad_pickles import EnumMembers, dumps, record

NAMES = Names({"Ops": {1: "CONST", 2: "PARAM", 3: "ADD", 4: "MUL", 5: "CDIV", 6: "FLOORDIV", 7: "SHL", 8: "STACK",
                       9: "CMOD", 10: "WHERE", 11: "CMPLT"}})


def _write(folder: Path, builder: VizBuilder, suffix: str = "") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    rewrites, profile = builder.files()
    paths = [folder / f"rewrites.pkl{suffix}", folder / f"profile.pkl{suffix}"]
    paths[0].write_bytes(rewrites)
    paths[1].write_bytes(profile)
    return paths


@pytest.mark.parametrize("release", ["0.14.0", "0.13.0"])
def test_a_generated_pair_ingests_with_what_was_written(tmp_path: Path, release: str) -> None:
    builder = demo_pair(release)
    _write(tmp_path, builder)
    run = registry.collect([tmp_path])
    assert run.collectors == ["tinygrad"] and run.warnings == []
    assert run.metadata["tinygrad"]["runs"][0]["release"] == release  # chosen by the file's structure
    tables, counts = run.tables, builder.counts
    assert (tables["rewrite_contexts"].height, tables["rewrite_steps"].height, tables["rewrite_matches"].height) == \
        (counts.contexts, counts.steps, counts.matches)
    assert tables["rewrite_steps"]["matches"].sum() == counts.matches
    assert Counter(tables["kernels"]["device_name"].to_list()) == counts.kernels
    flops = {name: sorted(group["flops"].cast(pl.Int64).to_list())
             for (name,), group in tables["kernels"].group_by("name")}
    assert flops == {name: sorted(values) for name, values in counts.flops.items()}  # n = 3, 5 for E_n
    memory = tables["device_memory"]
    assert Counter(memory["action"].to_list()) == {"alloc": counts.allocs, "free": counts.frees}
    assert {device: group["allocated"].max() for (device,), group in memory.group_by("device")} == counts.peak
    uops = tables["rewrite_uops"]
    assert uops.height == len(builder.uop_fields) and not uops["op"].str.starts_with("Ops(").any()
    programs = tables["rewrite_contexts"].filter("codegen")
    assert programs["source"].str.starts_with("void ").all() and programs["binary"].bin.starts_with(b"\x7fELF").all()


def test_either_file_alone_ingests(tmp_path: Path) -> None:
    rewrites, profile = _write(tmp_path / "pair", demo_pair())
    alone = registry.collect([rewrites]).tables
    assert "kernels" not in alone and alone["rewrite_steps"].height > 0
    timeline = registry.collect([profile]).tables
    assert "rewrite_steps" not in timeline and timeline["kernels"].height > 0
    assert timeline["kernels"]["flops"].is_null().all()  # the estimates live in rewrites.pkl
    assert timeline["kernels"]["name"].to_list() == registry.collect([tmp_path / "pair"]).tables["kernels"]["name"] \
        .to_list()


def test_a_folder_of_several_runs_pairs_files_by_their_suffix(tmp_path: Path) -> None:
    _write(tmp_path, demo_pair("0.14.0"), ".alice")
    _write(tmp_path, demo_pair("0.13.0"), ".bob")
    run = registry.collect([tmp_path])
    runs = run.metadata["tinygrad"]["runs"]
    assert [(r["rank"], Path(r["rewrites"]).name, Path(r["profile"]).name, r["release"]) for r in runs] == [
        (0, "rewrites.pkl.alice", "profile.pkl.alice", "0.14.0"), (1, "rewrites.pkl.bob", "profile.pkl.bob", "0.13.0")]
    kernels = run.tables["kernels"]
    assert kernels["rank"].unique().sort().to_list() == [0, 1] and kernels["flops"].is_not_null().all()


def test_recognised_by_content_whatever_the_name_and_gzipped(tmp_path: Path) -> None:
    rewrites, profile = demo_pair().files()
    (tmp_path / "compile.bin").write_bytes(rewrites)
    (tmp_path / "timeline.dat.gz").write_bytes(gzip.compress(profile))
    run = registry.collect([tmp_path / "compile.bin", tmp_path / "timeline.dat.gz"])
    assert run.collectors == ["tinygrad"] and run.tables["kernels"]["flops"].is_not_null().all()


def test_an_op_numbering_no_release_has_is_said_and_ops_stay_numbers(tmp_path: Path) -> None:
    builder = VizBuilder()
    shifted = {value + 200: name for name, value in builder.ops.values.items()}
    builder.ops = EnumMembers("tinygrad.uop", "Ops", shifted)  # a future release: every op renumbered
    builder.kernel("E_4", 4)
    rewrites, _ = _write(tmp_path, builder)
    run = registry.collect([rewrites])
    assert any("fits none of the supported tinygrad releases (0.14.0, 0.13.0, 0.12.0)" in w for w in run.warnings)
    assert run.tables["rewrite_uops"]["op"].str.starts_with("Ops(2").all()


def test_a_file_that_shows_no_release_says_which_names_it_uses(tmp_path: Path) -> None:
    builder = VizBuilder()
    context = builder.context("Schedule 1 Kernel n1", ("Schedule 1 Kernel n1",))
    builder.step(context, "View Tensor Graph", builder.uop("ADD", "float", (builder.uop("LOAD", "float"),)))
    rewrites, _ = _write(tmp_path, builder)
    run = registry.collect([rewrites])
    assert run.warnings == [f"{rewrites}: nothing in the file shows which tinygrad release wrote it; op names follow "
                            "tinygrad 0.14.0"]


def _uop(op: int, *src: object, arg: object = None) -> Record:
    return record_class("tinygrad.uop.ops", "UOp")(EnumValue("Ops", op), None, src, arg, None, None)


def _variable(name: str) -> Record:
    param_arg = record_class("tinygrad.uop.ops", "ParamArg")()
    param_arg.fields.update(name=name)
    return _uop(2, _uop(8), arg=param_arg)  # a 0.14 Variable: PARAM with its shape's STACK as a source


@pytest.mark.parametrize(("expression", "var_vals", "expected"), [
    (lambda n: _uop(3, _uop(4, n, _uop(1, arg=16)), _uop(1, arg=4)), {"n": 5}, 84),
    (lambda n: _uop(5, _uop(1, arg=-7), _uop(1, arg=2)), {}, -3),  # cdiv truncates towards zero
    (lambda n: _uop(6, _uop(1, arg=-7), _uop(1, arg=2)), {}, -4),  # floordiv floors
    (lambda n: _uop(9, _uop(1, arg=-7), _uop(1, arg=2)), {}, -1),
    (lambda n: _uop(5, n, _uop(1, arg=0)), {"n": 3}, 0),  # tinygrad's cdiv by zero is 0
    (lambda n: _uop(10, _uop(11, n, _uop(1, arg=4)), n, _uop(1, arg=4)), {"n": 2}, 2),
    (lambda n: _uop(4, n, _uop(1, arg=2)), {}, None),  # no value for n
    (lambda n: _uop(7, _uop(1, arg=1), _uop(1, arg=10**6)), {}, None),  # a shift past 64 bits is no count
    (lambda n: _uop(4, _uop(1, arg=2**70), _uop(1, arg=2**70)), {}, None),  # past any count of FLOPs
])
def test_estimates_evaluate_with_tinygrads_integer_semantics(expression, var_vals, expected) -> None:
    assert evaluate(expression(_variable("n")), var_vals, NAMES) == expected


def test_a_huge_or_deep_estimate_is_unknown_quickly_and_its_text_is_cut() -> None:
    node = _uop(1, arg=1)
    for _ in range(MAX_NODES * 3):  # built iteratively: deeper than any recursion could follow
        node = _uop(3, node, _uop(1, arg=1))
    assert evaluate(node, {}, NAMES) is None
    assert len(expression_text(node, NAMES)) < 2_000


def test_frees_of_unknown_buffers_and_damaged_events_are_counted(tmp_path: Path) -> None:
    builder = demo_pair()
    builder.point("CPU", "free", 12345, {})  # a buffer allocated before the profile started
    builder.events.append(record("tinygrad.helpers", "ProfileRangeEvent", device="CPU", name="E_16", st="soon",
                                 en=None, profile_key=None))
    _, profile = _write(tmp_path, builder)
    run = registry.collect([profile])
    assert f"{profile}: 1 frees of buffers with no allocation before them count 0 bytes" in run.warnings
    assert any(w.startswith(f"{profile}: 1 events that are not timeline events or whose times") for w in run.warnings)
    memory = run.tables["device_memory"].filter(pl.col("device") == "CPU")
    assert memory["allocated"].to_list()[-1] == memory["allocated"].to_list()[-2]  # the unknown free took nothing


def test_damaged_uops_and_steps_are_left_out_and_counted(tmp_path: Path) -> None:
    builder = demo_pair()
    builder.uop_fields[10**6] = ("not", "a", "uop")
    builder.uop_fields[10**6 + 1] = (builder.ops["ADD"], builder.dtype("float"), ("x",), None, None)
    builder.rewrites[0].append("not a step")
    rewrites, _ = _write(tmp_path, builder)
    run = registry.collect([rewrites])
    assert f"{rewrites}: 3 damaged UOps, steps or matches were left out" in run.warnings
    assert run.tables["rewrite_uops"].height == len(builder.uop_fields) - 2


def test_sizes_and_estimates_out_of_range_become_unknown_not_negative(tmp_path: Path) -> None:
    builder = VizBuilder()
    _, key, _ = builder.kernel("E_4", 4)
    # The program's estimates are its KernelInfo's, the argument of the SINK in its View Program.
    info = next(fields[3] for fields in builder.uop_fields.values() if getattr(fields[3], "fields", {}).get(
        "estimates") is not None)
    info.fields["estimates"].fields.update(ops=-5, mem=2**70)
    builder.launch("CPU", "E_4", key, -5, {})
    _write(tmp_path, builder)
    kernels = registry.collect([tmp_path]).tables["kernels"]
    assert kernels["flops"].to_list() == [None] and kernels["bytes"].to_list() == [None]


def test_each_folder_is_a_run_whether_it_holds_a_pair_or_one_file(tmp_path: Path) -> None:
    rng = random.Random(4)
    kept = []
    for index in range(6):
        files = _write(tmp_path / f"run{index}", demo_pair())
        if rng.random() < 0.5:
            files.pop(rng.randrange(2)).unlink()
        kept.append(sorted(path.name for path in files))
    runs = registry.collect([tmp_path]).metadata["tinygrad"]["runs"]
    assert [r["rank"] for r in runs] == list(range(6))
    assert [sorted(Path(r[kind]).name for kind in ("rewrites", "profile") if kind in r) for r in runs] == kept


def test_the_sniffer_wants_a_tinygrad_global(tmp_path: Path) -> None:
    import pickle

    from dashboard.collectors.base import probe_file

    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps({"segments": [], "device_traces": []}))
    ours = tmp_path / "ours.pkl"
    ours.write_bytes(dumps([record("tinygrad.helpers", "ProfileRangeEvent", device="TINY", name="x", st=None)]))
    assert not COLLECTOR.sniff(probe_file(plain)) and COLLECTOR.sniff(probe_file(ours))
