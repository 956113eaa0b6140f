"""Demo Tenstorrent memory-profiler run: a runtime log plus the profiler's JSON files.

`write(folder)` simulates a small VAE-decoder-like TTNN program on a Wormhole-like
device (a first-fit allocator per buffer type, sizes per bank) and writes what
the memory profiler leaves behind: `<script>_<YYYYMMDD_HHMMSS>/` with the
ANSI-coloured runtime log (`Executing operation` + memory block per op, const-eval
sub-programs, deallocates, lines of other producers) and the matching
`_memory.json`, `_operations.json` and `_inputs_registry.json` (v0 shape: no
deallocate / get_device entries). Deterministic: fixed seed, fixed timestamps.

The story: const-eval weights form the DRAM floor; an attention stage raises L1
to ~70 % and leaves holes; a conv stage in DRAM fragments it; the final group-norm
peaks DRAM right after `ttnn.multiply` (loc `PEAK_CULPRIT_LOC`), before `ttnn.mean`.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from dashboard.demo.tt_memory_sim import DEVICE, MIB, Program, Tensor, runtime_line

SCRIPT = "vae_decode"
STAMP = "20260301_101500"
PEAK_CULPRIT_LOC = "multiply.peak"
PEAK_NEXT_LOC = "reduce.peak_mean"


def _const_eval(run: Program, number: int, args: list[tuple[str, Tensor]]) -> list[Tensor]:
    """A load_cached op whose const-eval sub-program puts a conv weight and bias on the device."""
    name = f"main_const_eval_{number}"
    result = run.ssa()
    device_shapes = [(1, 1, math.prod(host.shape[1:]), host.shape[0]) if len(host.shape) == 4
                     else (1, 1, 1, host.shape[0]) for _, host in args]
    outputs = [Tensor(shape, ssa=f"{result}#{i}") for i, shape in enumerate(device_shapes)]
    operands = f"@{name}, [{', '.join(ssa for ssa, _ in args)}]"
    run.op("ttcore.load_cached", "LoadCachedOp", [h for _, h in args], outputs, operand_text=operands,
           result=f"{result}:{len(args)}", allocate=False)
    run.lines.append(runtime_line("Always", "DEBUG", f"Running LoadCachedOp for function {name} with hash: "
                                  f"{1_000_000_007 * (number + 3) % 10**18}"))
    run.lines.append(runtime_line("Always", "DEBUG", f"Cache miss or invalid cache for function: {name}"))
    saved, run.next_ssa = run.next_ssa, 0
    run.start(name)
    run.get_device()
    for position, ((_, host), out) in enumerate(zip(args, outputs, strict=True)):
        arg = Tensor(host.shape, "system_memory", tiled=False, ssa=f"%arg{position}")
        row = run.op("ttnn.to_device", "ToDeviceOp", [arg], [Tensor(host.shape, tiled=False)],
                     attrs="memory_config = #ttnn.memory_config<<dram>, <interleaved>>")[0]
        if len(host.shape) == 4:
            inner = run.op("ttnn.prepare_conv2d_weights", "PrepareConv2dWeightsOp", [row], [Tensor(out.shape)],
                           attrs=f"in_channels = {host.shape[1]} : i32, out_channels = {host.shape[0]} : i32, "
                                 'kernel_size = array<i32: 3, 3>, weights_format = "OIHW"',
                           loc=f"convolution.{number}_prepare_conv2d_weight")[0]
        else:
            inner = run.op("ttnn.reshape", "ReshapeOp", [row], [Tensor(out.shape)],
                           attrs=f"shape = [1 : i32, 1 : i32, 1 : i32, {host.shape[0]} : i32]",
                           loc=f"convolution.{number}_bias")[0]
        out.address = inner.address  # the sub-program's result is what load_cached returns
        run.dealloc(row)
    run.finish()
    run.lines.append(runtime_line("Always", "DEBUG", f"executed sub-func: {name}"))
    run.next_ssa = saved
    return outputs


def _attention(run: Program, x: Tensor, block: int) -> Tensor:
    """An L1 stage: q/k/v in L1, freed in an order that leaves holes, result back to DRAM."""
    rows = x.shape[-2]
    l1 = {"buffer": "l1", "mem_layout": "height_sharded"}
    x_l1 = run.op("ttnn.to_memory_config", "ToMemoryConfigOp", [x], [Tensor(x.shape, **l1)],
                  attrs="memory_config = #ttnn.memory_config<<l1>, <height_sharded>>", loc=f"attn{block}.in")[0]
    q, k, v = (run.op("ttnn.linear", "LinearOp", [x_l1], [Tensor(x.shape, **l1)],
                      attrs="transpose_a = false, transpose_b = true", loc=f"dot.{block}_{n}")[0] for n in "qkv")
    s = run.op("ttnn.matmul", "MatmulOp", [q, k], [Tensor((1, 1, rows, 96), **l1)], loc=f"dot.{block}_qk")[0]
    run.dealloc(q, f"dot.{block}_qk")
    p = run.op("ttnn.softmax", "SoftmaxOp", [s], [Tensor((1, 1, rows, 96), **l1)],
               attrs="dimension = 3 : si32", loc=f"softmax.{block}")[0]
    run.dealloc(k, f"dot.{block}_qk")
    run.dealloc(s, f"softmax.{block}")
    o = run.op("ttnn.matmul", "MatmulOp", [p, v], [Tensor(x.shape, **l1)], loc=f"dot.{block}_pv")[0]
    run.dealloc(p, f"dot.{block}_pv")
    run.dealloc(v, f"dot.{block}_pv")
    y = run.op("ttnn.to_memory_config", "ToMemoryConfigOp", [o], [Tensor(x.shape)],
               attrs="memory_config = #ttnn.memory_config<<dram>, <interleaved>>", loc=f"attn{block}.out")[0]
    run.dealloc(o, f"attn{block}.out")
    run.dealloc(x_l1, f"attn{block}.out")
    out = run.op("ttnn.add", "EltwiseBinaryOp", [x, y], [Tensor(x.shape)], loc=f"add.{block}")[0]
    run.dealloc(y, f"add.{block}")
    run.dealloc(x, f"add.{block}")
    return out


def _conv_block(run: Program, x: Tensor, weight: Tensor, block: int) -> Tensor:
    """A DRAM stage: conv, a padded group-norm reshape (4 -> 32 rows), mean, subtract, residual add."""
    shape = (1, 1, 101760, 128)
    conv = run.op("ttnn.conv2d", "Conv2dOp", [x, weight], [Tensor(shape)],
                  attrs=f"in_channels = {x.shape[-1]} : i32, out_channels = 128 : i32, "
                        "kernel_size = array<i32: 3, 3>, groups = 1 : i32", loc=f"convolution.{block}")[0]
    if not run.heaps["L1_SMALL"].blocks:
        run.heaps["L1_SMALL"].allocate(6 * 1024)  # the conv config tensors stay in L1_SMALL for the run
    grouped = run.op("ttnn.reshape", "ReshapeOp", [conv], [Tensor((1, 101760, 32, 4))],
                     attrs="shape = [1 : i32, -1 : i32, 32 : i32, 4 : i32]", loc=f"convolution.{block}_reshape")[0]
    mean = run.op("ttnn.mean", "ReductionOp", [grouped], [Tensor((1, 1, 32, 1))],
                  attrs="dim_arg = [1 : i32, 3 : i32], keep_dim = true", loc=f"reduce.{block}_mean")[0]
    run.dealloc(grouped, f"reduce.{block}_mean")
    normed = run.op("ttnn.subtract", "EltwiseBinaryOp", [conv, mean], [Tensor(shape)], loc=f"subtract.{block}")[0]
    run.dealloc(conv, f"subtract.{block}")
    run.dealloc(mean, f"subtract.{block}")
    if x.shape == shape:
        out = run.op("ttnn.add", "EltwiseBinaryOp", [x, normed], [Tensor(shape)], loc=f"add.{block}_res")[0]
        run.dealloc(normed, f"add.{block}_res")
    else:
        out = normed
    run.dealloc(x, f"convolution.{block}")
    return out


def _peak_block(run: Program, x: Tensor, weight: Tensor) -> Tensor:
    """Upsample, a wide conv and a padded group norm: the multiply's output is the DRAM peak."""
    up = run.op("ttnn.upsample", "UpsampleOp", [x], [Tensor((1, 1, 915840, 128))],
                attrs="scale_factor = 3 : si32, mode = \"nearest\"", loc="upsample.peak")[0]
    run.dealloc(x, "upsample.peak")
    wide = run.op("ttnn.conv2d", "Conv2dOp", [up, weight], [Tensor((1, 1, 915840, 512))],
                  attrs="in_channels = 128 : i32, out_channels = 512 : i32, kernel_size = array<i32: 3, 3>",
                  loc="convolution.peak")[0]
    run.dealloc(up, "convolution.peak")
    grouped = run.op("ttnn.reshape", "ReshapeOp", [wide], [Tensor((1, 915840, 32, 16))],
                     attrs="shape = [1 : i32, -1 : i32, 32 : i32, 16 : i32]", loc="reshape.peak")[0]
    run.dealloc(wide, "reshape.peak")
    squared = run.op("ttnn.multiply", "EltwiseBinaryOp", [grouped, grouped], [Tensor(grouped.shape)],
                     loc=PEAK_CULPRIT_LOC)[0]
    mean = run.op("ttnn.mean", "ReductionOp", [squared], [Tensor((1, 1, 32, 1))],
                  attrs="dim_arg = [1 : i32, 3 : i32], keep_dim = true", loc=PEAK_NEXT_LOC)[0]
    run.dealloc(squared, PEAK_NEXT_LOC)
    out = run.op("ttnn.slice", "SliceOp", [grouped], [Tensor((1, 3, 240, 424))],
                 attrs="begins = [0 : i32, 0 : i32, 0 : i32, 0 : i32]", loc="slice.out")[0]
    run.dealloc(grouped, "slice.out")
    run.dealloc(mean, "slice.out")
    return out


def _prelude(run: Program, params: list[tuple[str, Tensor]]) -> None:
    run.lines.append("Loading VAE decoder (f32) ...")
    run.metal("info", "Device", "Opening user mode device driver (tt_cluster.cpp:211)")
    run.metal("info", "UMD", "Starting topology discovery. (topology_discovery.cpp:69)")
    run.pjrt("client_instance.cc:546", "ClientInstance::PJRT_Client_Create")
    run.pjrt("module_builder.cc:1087", "MLIR Module shlo_frontend:")
    args = ", ".join(f"{ssa}: tensor<{'x'.join(map(str, t.shape))}xf32> {{ttcore.argument_type = "
                     f"#ttcore.argument_type<{'input' if ssa == '%arg0' else 'parameter'}>, "
                     f'ttir.name = "p{ssa[4:]}"}}' for ssa, t in params)
    run.lines += ["module @SyncTensorsGraph.1 {", f"  func.func @main({args}) -> tensor<1x3x240x424xf32> {{",
                  "    // ... ops elided ...", "  }", "}",
                  "------------------ END OF MLIR MODULE ------------------"]
    run.pjrt("flatbuffer_loaded_executable_instance.cc:194", "FlatbufferLoadedExecutableInstance::Execute")


def simulate(n_ops: int = 320, record_json: bool = True) -> Program:
    """Run the demo program; `n_ops` (about the number of executed ops) scales the stages."""
    rng = random.Random(7)
    run = Program(record_json)
    params = [(512, 512, 3, 3), (512,)] * 4 + [(128, 512, 3, 3), (128,)]
    args = [(f"%arg{i}", Tensor(shape, "system_memory", tiled=False))
            for i, shape in enumerate([(1, 1, 12800, 256), *params])]
    _prelude(run, args)
    run.start("main")
    run.get_device()
    device_weights: list[Tensor] = []
    for number in range(5):
        device_weights += _const_eval(run, number, args[1 + 2 * number: 3 + 2 * number])
    x = run.op("ttnn.to_device", "ToDeviceOp", [args[0][1]], [Tensor(args[0][1].shape, tiled=False)],
               attrs="memory_config = #ttnn.memory_config<<dram>, <interleaved>>", loc="p0.input")[0]
    tiled = run.op("ttnn.to_layout", "ToLayoutOp", [x], [Tensor(x.shape)], attrs="layout = #ttnn.layout<tile>",
                   loc="p0.tile")[0]
    run.dealloc(x)
    x = tiled
    budget = max(n_ops - 60, 60)
    for block in range(max(2, budget * 2 // 3 // 18)):
        x = _attention(run, x, block)
        if rng.random() < 0.1:
            run.metal("warning", "Op", "Program cache hit ratio below threshold (program_cache.cpp:88)")
    for block in range(max(2, budget // 3 // 9)):
        x = _conv_block(run, x, device_weights[2 * (block % 4)], 1000 + block)
    x = _peak_block(run, x, device_weights[8])
    host = run.op("ttnn.from_device", "FromDeviceOp", [x], [Tensor(x.shape, "system_memory")], loc="out")[0]
    run.dealloc(x, "out")
    run.op("ttnn.to_layout", "ToLayoutOp", [host], [Tensor(x.shape, "system_memory", tiled=False)],
           attrs="layout = #ttnn.layout<row_major>", loc="out.row_major")
    run.finish()
    run.lines.append("Got output shape: torch.Size([1, 3, 240, 424])")
    run.metal("info", "Device", "Closing user mode device drivers (tt_cluster.cpp:442)")
    run.args = args
    return run


def _registry(args: list[tuple[str, Tensor]]) -> dict:
    entries = [{"index": i, "ssa": ssa, "name": "l_x_" if i == 0 else f"l__self___param_{i}",
                "type": "input" if i == 0 else "parameter", "shape": "x".join(map(str, t.shape)), "dtype": "f32",
                "bytes": math.prod(t.shape) * 4, "bytes_MB": math.prod(t.shape) * 4 / MIB}
               for i, (ssa, t) in enumerate(args)]
    weight_bytes = sum(e["bytes"] for e in entries if e["type"] == "parameter")
    return {"metadata": {"total_entries": len(entries), "total_weights": len(entries) - 1, "total_inputs": 1,
                         "total_weight_bytes": weight_bytes, "total_weight_MB": weight_bytes / MIB},
            "entries": entries}


def write(folder: Path, n_ops: int = 320, with_json: bool = True) -> list[Path]:
    """Write one profiler run folder under `folder`; returns [the run folder].

    `n_ops` scales the run (100_000 gives a ~600 k-line, ~170 MB log for benchmarks);
    `with_json=False` writes only the log.
    """
    run = simulate(n_ops, record_json=with_json)
    run_dir = Path(folder) / f"{SCRIPT}_{STAMP}"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / f"{SCRIPT}_profile.log").write_text("\n".join(run.lines) + "\n", encoding="utf-8")
    if with_json:
        config = {bt: {"num_banks": banks, "total_bytesper_bank_MB": round(mib, 3)}
                  for bt, (banks, mib) in DEVICE.items()}
        memory = {"metadata": {"memory_config": config, "total_operations": len(run.memory)},
                  "operations": run.memory}
        (run_dir / f"{SCRIPT}_memory.json").write_text(json.dumps(memory, indent=1), encoding="utf-8")
        (run_dir / f"{SCRIPT}_operations.json").write_text(json.dumps(run.operations, indent=1), encoding="utf-8")
        (run_dir / f"{SCRIPT}_inputs_registry.json").write_text(json.dumps(_registry(run.args), indent=2),
                                                                 encoding="utf-8")
    return [run_dir]
