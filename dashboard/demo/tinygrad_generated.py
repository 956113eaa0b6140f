"""A generated pair of tinygrad VIZ files (rewrites.pkl, profile.pkl), for the demo without tinygrad and the tests.

`VizBuilder` makes what tinygrad records for a tiny program (a schedule, then one codegen context
per kernel with its rewrite steps and its `View Program`; the profile's compiler passes, Tensor
calls, exec points, kernel ranges and graph batches, allocations and frees) in the numbering of a
release (0.14.0 or 0.13.0, which differ in the PROGRAM's sources and the pickled fields) and counts
what it wrote (`counts`), so a test can compare a reader's tables with what is really in the files.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from dashboard.collectors.tinygrad.enums import RELEASES
from dashboard.demo.tinygrad_pickles import EnumMembers, const_float, dumps, record, reduced

_SITE = "/usr/lib/python3/site-packages/tinygrad"
_DTYPES = {"void": (-1, 0, "void", None), "float": (11, 32, "float", "f"), "int": (6, 32, "int", "i"),
           "weakint": (8, 64, "weakint", None)}


@dataclass
class Counts:
    """What the builder wrote, as a reader should find it."""

    contexts: int = 0
    steps: int = 0
    matches: int = 0
    kernels: Counter[str] = field(default_factory=Counter)  # kernel ranges per device row
    flops: dict[str, list[int]] = field(default_factory=dict)  # kernel name -> FLOPs of each launch
    allocs: int = 0
    frees: int = 0
    peak: Counter[str] = field(default_factory=Counter)  # device -> peak bytes


class VizBuilder:
    def __init__(self, release: str = "0.14.0") -> None:
        self.release = release
        tables = RELEASES[release]
        self.ops = EnumMembers("tinygrad.uop", "Ops", tables["Ops"])
        self.axis = EnumMembers("tinygrad.uop.ops", "AxisType", tables["AxisType"])
        self.addrspace = EnumMembers("tinygrad.dtype", "AddrSpace", tables["AddrSpace"])
        self.uop_fields: dict[int, tuple[Any, ...]] = {}
        self.keys: list[Any] = []
        self.rewrites: list[list[Any]] = []
        self.events: list[Any] = []
        self.counts = Counts()
        self.clock = Decimal("1000000.000")  # µs, as perf_counter_us
        self._memory: Counter[str] = Counter()
        self._sizes: dict[int, tuple[str, int]] = {}
        self.target = record("tinygrad.helpers", "Target", device="CPU", renderer="CLANG", arch="x86_64,native",
                             interface="", indices="")

    # --- UOps ---------------------------------------------------------------------------------------

    def dtype(self, name: str) -> Any:
        args = _DTYPES[name]
        return reduced("tinygrad.dtype", "DType", *(args if self.release == "0.14.0" else (*args, 1, None)))

    def uop(self, op: str, dtype: str = "void", src: tuple[int, ...] = (), arg: Any = None) -> int:
        """A UOp in the trace table; returns its trace number."""
        number = len(self.uop_fields)
        self.uop_fields[number] = (self.ops[op], self.dtype(dtype), src, arg, None)
        return number

    def nested(self, number: int) -> Any:
        """The UOp of a trace number as a pickled UOp object (what TracingKey.keys and estimates hold)."""
        op, dtype, src, arg, tag = self.uop_fields[number]
        return reduced("tinygrad.uop.ops", "UOp", op, dtype, tuple(self.nested(s) for s in src), arg, tag, None)

    def param(self, slot: int, name: str | None = None) -> int:
        """A kernel's buffer parameter, or (`name`) a Variable: PARAM(ParamArg) in 0.14; before, PARAM(slot)
        and DEFINE_VAR((name, min, max))."""
        if self.release != "0.14.0":
            return self.uop("DEFINE_VAR", "int", (), (name, 1, 16)) if name else self.uop("PARAM", "float", (), slot)
        space = self.addrspace["ALU" if name else "GLOBAL"]
        arg = record("tinygrad.uop.ops", "ParamArg", slot=slot, dtype=self.dtype("int" if name else "float"),
                     vmin_vmax=(1, 16) if name else None, multiple_of=None, name=name, addrspace=space, axis=None,
                     device=None, volatile=False)
        return self.uop("PARAM", "int" if name else "float", (), arg)

    # --- rewrite contexts -------------------------------------------------------------------------------

    def context(self, display: str, keys: tuple[Any, ...], ret: Any = None) -> int:
        tb = ((f"{_SITE}/engine/realize.py", 120, "run_schedule", "for ei in lower_schedule(schedule):"),
              ("/home/me/train.py", 14, "<module>", "loss.realize()"))
        self.keys.append(record("tinygrad.helpers", "TracingKey", display_name=display, keys=keys, ret=ret, tb=tb))
        self.rewrites.append([])
        self.counts.contexts += 1
        return len(self.keys) - 1

    def step(self, context: int, name: str, sink: int, matches: list[tuple[int, int]] = (), depth: int = 0,
             where: str = "codegen/__init__.py") -> None:
        fields: dict[str, Any] = {
            "loc": (f"{_SITE}/{where}", 40 + len(self.rewrites[context])), "sink": sink,
            "matches": [(before, after, (f"{_SITE}/uop/symbolic.py", 100 + i), 1.5e-6 * (i + 1))
                        for i, (before, after) in enumerate(matches)],
            "name": name, "depth": depth, "bottom_up": False}
        if self.release == "0.14.0":
            fields.update(walk=False, enter_calls=False)
        self.rewrites[context].append(record("tinygrad.uop.ops", "TrackedGraphRewrite", **fields))
        self.counts.steps += 1
        self.counts.matches += len(fields["matches"])
        self._range("TINY", name, Decimal("3.5"))

    def kernel(self, name: str, size: int, symbolic: bool = False) -> tuple[int, bytes, Any]:
        """A kernel's codegen context: `out[i] = in[i] * 2` over `size` (or `n`) elements; returns (context,
        program key, the estimate of its FLOPs as pickled)."""
        out, inp = self.param(0), self.param(1)
        bound = self.param(2, "n") if symbolic else self.uop("CONST", "weakint", (), size)
        loop = self.uop("RANGE", "weakint", (bound,), (0, self.axis["LOOP"]))
        load = self.uop("LOAD", "float", (self.uop("INDEX", "float", (inp, loop)),))
        two = self.uop("CONST", "float", (), const_float(2.0))
        product = self.uop("MUL", "float", (load, two))
        store = self.uop("STORE", "void", (self.uop("INDEX", "float", (out, loop)), product))
        ops: Any = size
        if symbolic:
            ops = self.nested(self.uop("MUL", "weakint", (bound, self.uop("CONST", "weakint", (), 1))))
        estimates = record("tinygrad.renderer", "Estimates", ops=ops, lds=8 * size, mem=8 * size)
        info = record("tinygrad.uop.ops", "KernelInfo", name=name, axis_types=(self.axis["LOOP"],),
                      dont_use_locals=False, applied_opts=(), opts_to_apply=None, estimates=estimates, beam=0)
        ast = self.uop("SINK", "void", (self.uop("END", "void", (store, loop)),), info)
        key = bytes(range(len(self.keys), len(self.keys) + 32))
        renderer = reduced("tinygrad.renderer.cstyle", "ClangRenderer", self.target)
        display = "\x1b[90m_\x1b[0m".join(f"\x1b[33m{part}\x1b[0m" if i else part
                                          for i, part in enumerate(name.split("_")))
        context = self.context(display, (name, self.nested(ast), key), renderer)
        self.step(context, "View Base AST", ast)
        # Each step rewrites the graph the one before left, as tinygrad's do: x*2 -> x+x, then x+x -> x*1+x.
        added = self.uop("ADD", "float", (load, load))
        self.step(context, "early movement ops", ast, [(product, added)])
        after_movement = self._with_value(info, out, loop, added)
        fused = self.uop("MULACC", "float", (load, self.uop("CONST", "float", (), const_float(1.0)), load))
        self.step(context, "expander", after_movement, [(added, fused)], depth=1)
        ast = self._with_value(info, out, loop, fused)
        linear = self.uop("LINEAR", "void", (out, inp, loop, load, fused, store))
        source = self.uop("SOURCE", "void", (), f"void {name}(float* data0, float* data1) {{ /* {size} */ }}")
        binary = self.uop("BINARY", "void", (), b"\x7fELF" + bytes(60))
        pieces = (ast, linear, source, binary) if self.release == "0.14.0" else \
            (ast, self.uop("DEVICE", "void", (), "CPU"), linear, source, binary)
        program_info = record("tinygrad.uop.ops", "ProgramInfo", name=name, global_size=(1, 1, 1),
                              local_size=(1, 1, 1), vars=(), globals=(0, 1), outs=(0,), ins=(1,), target=self.target)
        self.step(context, "linearize/render", ast)
        self.step(context, "View Program", self.uop("PROGRAM", "void", pieces, program_info))
        return context, key, ops

    def _with_value(self, info: Any, out: int, loop: int, value: int) -> int:
        """A kernel's AST storing `value` at `out[loop]`: the graph a step leaves for the next one."""
        store = self.uop("STORE", "void", (self.uop("INDEX", "float", (out, loop)), value))
        return self.uop("SINK", "void", (self.uop("END", "void", (store, loop)),), info)

    # --- profile ------------------------------------------------------------------------------------------

    def _range(self, device: str, name: Any, length: Decimal, key: bytes | None = None) -> None:
        start = self.clock
        self.clock += length + Decimal("0.25")
        fields: dict[str, Any] = {"device": device, "name": name, "st": start, "en": start + length}
        if self.release == "0.14.0":
            fields["profile_key"] = key
        self.events.append(record("tinygrad.helpers", "ProfileRangeEvent", **fields))

    def point(self, device: str, name: str, key: Any, arg: dict[str, Any]) -> None:
        self.events.append(record("tinygrad.helpers", "ProfilePointEvent", device=device, name=name, key=key,
                                  arg=arg, ts=self.clock))
        self.clock += Decimal("0.125")

    def user_call(self, name: str) -> None:
        self._range("USER", record("tinygrad.helpers", "TracingKey", display_name=name, keys=(), ret=None,
                                   tb=(("/home/me/train.py", 9, "<module>", f"x.{name}()"),)), Decimal("2.75"))

    def alloc(self, device: str, buffer: int, elements: int) -> None:
        self.point(device, "alloc", buffer, {"dtype": self.dtype("float"), "sz": elements})
        self._sizes[buffer] = (device, elements * 4)
        self._memory[device] += elements * 4
        self.counts.allocs += 1
        self.counts.peak[device] = max(self.counts.peak[device], self._memory[device])

    def free(self, buffer: int) -> None:
        device, size = self._sizes.pop(buffer)
        self.point(device, "free", buffer, {})
        self._memory[device] -= size
        self.counts.frees += 1

    def launch(self, device: str, name: str, key: bytes | None, flops: int, var_vals: dict[str, int],
               length: str = "4.5") -> None:
        """An exec point, then the kernel's range on the device (linked by program key when given)."""
        self.point(device, "exec", len(self.events), {"var_vals": var_vals, "bufs": [1, 2], "name": name,
                                                     "outputs": (0,), "inputs": (1,)})
        self._range(device, name, Decimal(length), key)
        self.counts.kernels[device] += 1
        self.counts.flops.setdefault(name, []).append(flops)

    def graph(self, device: str, names: list[str], flops: list[int]) -> None:
        """A graph batch (HCQ / TinyJit): entries timed by signals on the device clock, linked by name."""
        self.point(device, "exec", len(self.events), {"var_vals": {}, "bufs": [1, 2], "name": names[0],
                                                     "outputs": (0,), "inputs": (1,)})
        sigs = [self.clock + Decimal(i) for i in range(2 * len(names))]
        entries = [record("tinygrad.device", "ProfileGraphEntry", device=device, name=name, st_id=2 * i,
                          en_id=2 * i + 1, profile_key=b"call" + bytes([i])) for i, name in enumerate(names)]
        self.events.append(record("tinygrad.device", "ProfileGraphEvent", ents=entries, deps=[[] for _ in names],
                                  sigs=sigs))
        self.clock = sigs[-1] + 1
        self.counts.kernels[device] += len(names)
        for name, count in zip(names, flops, strict=True):
            self.counts.flops.setdefault(name, []).append(count)

    def files(self, protocol: int = 4) -> tuple[bytes, bytes]:
        """(rewrites.pkl, profile.pkl) bytes."""
        trace = record("tinygrad.uop.ops", "RewriteTrace", keys=self.keys, rewrites=self.rewrites,
                       uop_fields=self.uop_fields)
        return dumps(trace, protocol), dumps(self.events, protocol)


def demo_pair(release: str = "0.14.0") -> VizBuilder:
    """The demo's program: a schedule of three kernels (one with a symbolic size), run eagerly and in a graph."""
    builder = VizBuilder(release)
    builder.events.append(record("tinygrad.device", "ProfileDeviceEvent", device="CPU", tdiff=Decimal(0), props=None))
    builder.user_call("randn")
    schedule = builder.context("Schedule 3 Kernels n1", ("Schedule 3 Kernels n1",))
    graph = builder.uop("SINK", "void", (builder.uop("CONST", "float", (), const_float(1.0)),))
    builder.step(schedule, "View Tensor Graph", graph, where="tensor.py")
    builder.step(schedule, "rangeify", graph, [(graph, graph)], where="schedule/rangeify.py")
    kernels = [builder.kernel("E_16", 16), builder.kernel("E_64", 64), builder.kernel("E_n", 16, symbolic=True)]
    for buffer, elements in ((1, 16), (2, 16), (3, 64), (4, 64)):
        builder.alloc("CPU", buffer, elements)
    builder.user_call("realize")
    builder.launch("CPU", "E_16", kernels[0][1], 16, {})
    builder.launch("CPU", "E_64", kernels[1][1], 64, {}, "9.25")
    for n in (3, 5):
        builder.launch("CPU", "E_n", kernels[2][1], n, {"n": n})
    builder.graph("CPU", ["E_16", "E_64"], [16, 64])
    builder.free(3)
    builder.alloc("PYTHON", 9, 8)
    builder._range("PYTHON:COPY", "CPU -> PYTHON", Decimal("1.5"))
    builder.free(9)
    builder.point("TINY", "marker", None, {"name": "step 1", "color": "red"})
    return builder
