"""The triton_ir collector on small compiler outputs of our own: every input form."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import polars as pl
import pytest

from dashboard.collectors import registry
from dashboard.collectors.base import IngestError, probe_file
from dashboard.collectors.triton_ir import COLLECTOR, stream
from dashboard.collectors.triton_ir.headers import parse_header
from dashboard.demo.ws_dumps import attention_kernel, debug_log_text
from tests.collectors.triton_ir_fixtures import LLVM_LOG, compile_log, write_cache

DUMPS_PER_COMPILE = 9


def _collect(tmp_path: Path, text: str, name: str = "dump.txt") -> registry.CollectedRun:
    path = tmp_path / name
    path.write_text(text)
    return registry.collect([path])


def _text(run: registry.CollectedRun, text_id: int) -> str:
    row = run.tables["ir_text"].filter(pl.col("text_id") == text_id)
    return zlib.decompress(row["zlib"][0]).decode()


def test_one_compile_steps_stages_and_kinds(tmp_path: Path) -> None:
    run = _collect(tmp_path, compile_log("add_kernel", 1024))
    assert run.collectors == ["triton_ir"]
    steps = run.tables["ir_steps"]
    assert steps.height == DUMPS_PER_COMPILE
    assert steps["stage"].to_list() == ["ttir"] * 4 + ["ttgir"] * 4 + ["llvm-mlir"]
    assert steps["kind"].to_list() == ["before"] * 5 + ["internal"] + ["before"] * 3
    assert steps["anchor"].to_list()[1] == "function" and steps["symbol"][1] == "add_kernel"
    assert steps["pass_arg"][0] == "inline{max-iterations=4 }"
    # CSE removed an op (changed); ConvertTritonToTritonGPU's input equals CSE's output (unchanged);
    # the function-scope dump is compared with function-scope dumps only.
    assert steps["changed"].to_list()[:4] == [True, True, True, False]
    assert set(steps["kernel"]) == {"add_kernel"} and set(steps["target"]) == {"cuda:90"}
    first = steps.row(0, named=True)
    assert (first["ops_tt"], first["ops_arith"], first["ops_scf"]) == (5, 1, 2)
    assert first["ops"] == 8
    kernel = run.tables["ir_kernels"].row(0, named=True)
    assert (kernel["num_warps"], kernel["num_stages"], kernel["shared"], kernel["tmem_size"]) == (4, 3, 17408, 128)
    assert kernel["python_file"] == "/src/kernels.py" and kernel["steps"] == DUMPS_PER_COMPILE


def test_equal_bodies_are_stored_once_and_round_trip(tmp_path: Path) -> None:
    log = compile_log("add_kernel", 1024)
    run = _collect(tmp_path, log)
    steps, texts = run.tables["ir_steps"], run.tables["ir_text"]
    assert texts.height == steps["text_id"].n_unique() < steps.height
    cse = steps.row(2, named=True)
    body = _text(run, cse["text_id"])
    assert body in log and body.count("\n") == cse["lines"]
    assert steps["text_id"][2] == steps["text_id"][3]


def test_old_header_generation_and_failed_dump(tmp_path: Path) -> None:
    run = _collect(tmp_path, compile_log("k", 256, old=True, failed=True))
    steps = run.tables["ir_steps"]
    assert steps.height == DUMPS_PER_COMPILE + 1
    assert steps["pass_arg"][3] == "convert-triton-to-tritongpu{num-warps=4 target=cuda:90}"
    assert steps["kind"][-1] == "failed" and steps["pass_name"][-1] == "TritonGPUPipeline"


def test_program_output_between_dumps_stays_out_of_the_ir(tmp_path: Path) -> None:
    clean = _collect(tmp_path, compile_log("k", 128), "clean.txt")
    mixed = _collect(tmp_path, "starting\n" + compile_log("k", 128, noise=True) + "done\n", "mixed.txt")
    assert mixed.tables["ir_steps"]["lines"].to_list() == clean.tables["ir_steps"]["lines"].to_list()
    bodies = [zlib.decompress(b).decode() for b in mixed.tables["ir_text"]["zlib"]]
    assert not any("UserWarning" in body or "done" in body for body in bodies)
    assert mixed.metadata["triton_ir"]["logs"][0]["other_bytes"] > 0


def test_several_kernels_and_recompiles_in_one_log(tmp_path: Path) -> None:
    log = compile_log("add_kernel", 1024) + compile_log("softmax", 512) + compile_log("add_kernel", 2048)
    run = _collect(tmp_path, log)
    kernels = run.tables["ir_kernels"].sort("compile")
    assert kernels["kernel"].to_list() == ["add_kernel", "softmax", "add_kernel"]
    assert kernels["steps"].to_list() == [DUMPS_PER_COMPILE] * 3
    counts = run.tables["ir_steps"].group_by("compile").len().sort("compile")["len"].to_list()
    assert counts == [DUMPS_PER_COMPILE] * 3
    # source lines point at each compile's first header
    first = run.tables["ir_steps"].filter(pl.col("step") == 0)["source_line"].to_list()
    lines = log.split("\n")
    assert all(lines[n - 1].startswith("// -----// IR Dump Before InlinerPass") for n in first)


def test_kernel_filter_log_and_a_compile_starting_mid_pipeline(tmp_path: Path) -> None:
    # MLIR_ENABLE_DUMP=<kernel>: another kernel's pipeliner snapshots are not filtered out.
    other = "// -----// SoftwarePipeliner internal IR Dump After: LowerLoops\n" + \
        compile_log("matmul", 64).split("LowerLoops\n")[1].split("\n\n")[0] + "\n\n"
    run = _collect(tmp_path, other + compile_log("softmax", 1024))
    kernels = run.tables["ir_kernels"].sort("compile")
    assert kernels["kernel"].to_list() == ["matmul", "softmax"]
    befores = run.tables["ir_steps"].filter(pl.col("kind") != "internal")
    assert set(befores["kernel"]) == {"softmax"}


def test_llvm_ir_dump_log(tmp_path: Path) -> None:
    run = _collect(tmp_path, LLVM_LOG)
    steps = run.tables["ir_steps"]
    assert steps["pass_name"].to_list() == ["Annotation2MetadataPass", "InstCombinePass", "SROA",
                                            "NVPTX DAG->DAG Pattern Instruction Selection"]
    assert steps["stage"].to_list() == ["llir", "llir", "llir", "mir"]
    assert steps["anchor"].to_list() == ["module", "function", "module", "module"]
    assert steps["pass_arg"][2] == "sroa" and steps["kind"].unique().to_list() == ["after"]
    assert run.tables["ir_kernels"]["kernel"].to_list() == ["add_kernel"]
    assert run.tables["ir_kernels"]["target"].to_list() == ["cuda:90"]
    assert "Running pass" not in _text(run, steps["text_id"][0])


def test_cache_folder_stage_files_and_metadata(tmp_path: Path) -> None:
    run = registry.collect([tmp_path / "cache" / "HASH"] if write_cache(tmp_path / "cache" / "HASH") else [])
    assert run.collectors == ["triton_ir"] and not run.warnings
    steps = run.tables["ir_steps"]
    assert steps["stage"].to_list() == ["source", "ttir", "ttgir", "llir", "ptx", "cubin"]
    assert set(steps["kind"]) == {"file"} and steps["text_id"][-1] is None
    kernel = run.tables["ir_kernels"].row(0, named=True)
    assert (kernel["kernel"], kernel["target"], kernel["num_warps"], kernel["shared"], kernel["triton_version"]) \
        == ("add_kernel", "cuda:90", 8, 32768, "3.9.0")
    locs = run.tables["ir_locs"]
    ptx_text = steps.filter(pl.col("stage") == "ptx")["text_id"][0]
    ptx = locs.filter(pl.col("text_id") == ptx_text)
    assert sorted(set(ptx["line"])) == [6, 9] and set(ptx["file"]) == {"/src/kernels.py"}
    llir = locs.filter(pl.col("text_id") == steps.filter(pl.col("stage") == "llir")["text_id"][0])
    assert llir["line"].to_list() == [6, 9] and set(llir["file"]) == {"/src/kernels.py"}


def test_folder_of_logs_and_cache_dirs_numbers_compiles_in_order(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "a_dump.txt").write_text(compile_log("add_kernel", 1024))
    with gzip.open(tmp_path / "run" / "b_llvm.txt.gz", "wt") as handle:
        handle.write(LLVM_LOG)
    write_cache(tmp_path / "run" / "cache" / "H1")
    write_cache(tmp_path / "run" / "cache" / "H2", "other_kernel")
    run = registry.collect([tmp_path / "run"])
    kernels = run.tables["ir_kernels"].sort("compile")
    assert kernels["compile"].to_list() == [0, 1, 2, 3]
    assert kernels["kernel"].to_list() == ["add_kernel", "add_kernel", "add_kernel", "other_kernel"]
    assert run.tables["ir_steps"]["text_id"].drop_nulls().max() < run.tables["ir_text"].height


def test_locations_named_fused_and_call_site(tmp_path: Path) -> None:
    run = _collect(tmp_path, compile_log("k", 64))
    steps = run.tables["ir_steps"]
    last_ttir = steps.filter(pl.col("stage") == "ttir")["text_id"][-1]
    locs = run.tables["ir_locs"].filter(pl.col("text_id") == last_ttir)
    text = _text(run, last_ttir).split("\n")
    by_via = {via: set(zip(part["file"], part["line"], strict=True))
              for (via,), part in locs.group_by("via")}
    assert ("/src/kernels.py", 7) in by_via["named"]
    assert by_via["callee"] == {("/venv/triton/language/standard.py", 40)}
    assert by_via["caller"] == {("/src/kernels.py", 6)}
    assert {("/src/kernels.py", 6), ("/src/kernels.py", 7)} <= by_via["fused"]
    reduce_line = next(i for i, line in enumerate(text, start=1) if "tt.reduce" in line)
    assert set(locs.filter(pl.col("ir_line") == reduce_line)["via"]) == {"callee", "caller"}


def test_header_split_across_read_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = compile_log("k", 64) * 3
    whole = _collect(tmp_path, log, "whole.txt")
    monkeypatch.setattr(stream, "CHUNK_BYTES", 97)
    chunked = _collect(tmp_path, log, "chunked.txt")
    columns = ["compile", "step", "pass_name", "lines", "ops", "changed", "source_line"]
    assert chunked.tables["ir_steps"].select(columns).equals(whole.tables["ir_steps"].select(columns))


def test_debug_log_with_planner_graphs_yields_both(tmp_path: Path) -> None:
    # A real debug log: megabytes of IR dumps, then the planner's blocks, beyond the sniffed head.
    ir = compile_log("attn_fwd", 1024) * 40
    assert len(ir) > 64 * 1024
    run = _collect(tmp_path, ir + debug_log_text([("attn_fwd", attention_kernel(), True)]))
    assert run.collectors == ["triton_ir"]
    assert run.tables["ir_steps"].height == 40 * DUMPS_PER_COMPILE
    assert run.tables["ws_buffers"].height > 0 and run.tables["ws_channels"].height > 0
    assert run.metadata["triton_ir"]["planner"]["groups"]


def test_short_planner_log_stays_the_planner_collectors(tmp_path: Path) -> None:
    path = tmp_path / "planner.txt"
    path.write_text(debug_log_text([("attn_fwd", attention_kernel(), True)]))
    assert not COLLECTOR.sniff(probe_file(path))
    assert registry.collect([path]).collectors == ["triton_ws"]


@pytest.mark.parametrize("text, expected", [
    ("// -----// IR Dump Before CSEPass: cse ('builtin.module' operation) //----- //\nmodule {\n}\n", True),
    ("; *** IR Dump After InstCombinePass on k ***\ndefine void @k() {\n}\n", True),
    ('#loc = loc("a.py":1:0)\nmodule {\n  tt.func public @k() {\n  }\n}\n', True),
    ("@triton.jit\ndef k(x):\n    pass\n", True),
    ("notes about tt.func and IR Dump Before in prose\n", False),
    ('{"traceEvents": []}', False),
])
def test_sniff(tmp_path: Path, text: str, expected: bool) -> None:
    path = tmp_path / "probe.txt"
    path.write_text(text)
    assert COLLECTOR.sniff(probe_file(path)) is expected


def test_kernel_source_alone_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "kernels.py"
    path.write_text("import triton\n@triton.jit\ndef k(x):\n    pass\n")
    with pytest.raises(IngestError, match=r"kernels\.py: Triton kernel sources without any compiler output"):
        registry.collect([path])


def test_bad_metadata_json_names_the_file(tmp_path: Path) -> None:
    files = write_cache(tmp_path / "H")
    (tmp_path / "H" / "add_kernel.json").write_text('{"name": "add_kernel", "num_warps": 4, "target": {')
    with pytest.raises(IngestError, match=r"add_kernel.json: metadata JSON is not valid JSON"):
        COLLECTOR.collect(files, lambda _f, _m: None)


def test_header_forms() -> None:
    new = parse_header("// -----// IR Dump Before (anonymous namespace)::Foo: foo{a=1 b=2} "
                       "('tt.func' operation: @k) //----- //")
    assert new is not None and (new.pass_name, new.pass_arg, new.anchor, new.symbol) == \
        ("(anonymous namespace)::Foo", "foo{a=1 b=2}", "function", "k")
    warp = parse_header("// -----// WarpSpec internal IR Dump After: doBufferAllocation")
    assert warp is not None and (warp.kind, warp.pass_name) == ("internal", "WarpSpec doBufferAllocation")
    assert parse_header("// -----// not a header") is None


def test_llvm_ir_inlined_locations_reach_the_caller() -> None:
    from dashboard.collectors.triton_ir.locs import llir_locations

    text = ("define void @k() !dbg !4 {\n  %1 = fadd float 0.0, 1.0, !dbg !9\n  ret void, !dbg !7\n}\n"
            '!1 = !DIFile(filename: "kernels.py", directory: "/src")\n'
            '!2 = !DIFile(filename: "standard.py", directory: "/venv/triton/language")\n'
            '!4 = distinct !DISubprogram(name: "k", scope: !1, file: !1, line: 5)\n'
            '!5 = distinct !DISubprogram(name: "max", scope: !2, file: !2, line: 40)\n'
            "!7 = !DILocation(line: 6, column: 10, scope: !4)\n"
            "!9 = !DILocation(line: 41, column: 3, scope: !5, inlinedAt: !7)\n")
    assert llir_locations(text) == [(2, "/venv/triton/language/standard.py", 41, 3, "callee"),
                                    (2, "/src/kernels.py", 6, 10, "caller"),
                                    (3, "/src/kernels.py", 6, 10, "direct")]
