"""Layers, passes and FLOPs from torch module hooks, on CPU with the fake CUPTI backend."""

from __future__ import annotations

import importlib

import polars as pl
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from dashboard.capture.cupti_fake import FakeCuptiBackend  # noqa: E402
from dashboard.capture.session import CaptureSession  # noqa: E402


class LaunchOnGpu(torch.autograd.Function):
    """Identity whose forward and backward launch a (fake) kernel each."""

    @staticmethod
    def forward(ctx, x, gpu):  # type: ignore[override]
        ctx.gpu = gpu
        gpu.launch_kernel("_Z11scale_fwd_kPfi", 1000)
        return x * 1.0

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        ctx.gpu.launch_kernel("_Z11scale_bwd_kPfi", 1000)
        return grad * 1.0, None


class Scale(nn.Module):
    def __init__(self, gpu: FakeCuptiBackend) -> None:
        super().__init__()
        self.gpu = gpu

    def forward(self, x):
        return LaunchOnGpu.apply(x, self.gpu)


def _capture(model, x, gpu: FakeCuptiBackend | None = None, **kwargs) -> tuple[CaptureSession, dict]:
    gpu = gpu or FakeCuptiBackend()
    with CaptureSession("t", backend=gpu, layers=True, **kwargs) as session:
        model(x).sum().backward()
    return session, session.tables()


def _modules(tables: dict, pass_: str) -> pl.DataFrame:
    ranges = tables["ranges"]
    return ranges.filter((pl.col("category") == "module") & (pl.col("pass") == pass_)).sort("start_ns")


def test_forward_and_backward_ranges_per_module_with_qualified_names() -> None:
    model = nn.Sequential(nn.Linear(8, 4), nn.GELU(), nn.Linear(4, 2))
    session, tables = _capture(model, torch.randn(2, 8))
    forward = _modules(tables, "forward")
    assert forward.get_column("name").to_list() == ["Sequential", "Sequential.0", "Sequential.1", "Sequential.2"]
    assert forward.get_column("depth").to_list() == [0, 1, 1, 1]
    root_id = forward.row(0, named=True)["id"]
    assert forward.get_column("parent").to_list()[1:] == [root_id] * 3
    assert (forward.get_column("layer") == forward.get_column("name")).all()

    backward = _modules(tables, "backward")
    assert set(backward.get_column("name")) == {"Sequential", "Sequential.0", "Sequential.1", "Sequential.2"}
    root = backward.filter(pl.col("name") == "Sequential").row(0, named=True)
    assert root["depth"] == 0
    children = backward.filter(pl.col("name") != "Sequential")
    assert (children.get_column("parent") == root["id"]).all()
    assert (children.get_column("start_ns") >= root["start_ns"]).all()
    assert (children.get_column("end_ns") <= root["end_ns"]).all()
    # Backward runs last layer first, and every backward range follows the forward.
    assert children.get_column("name").to_list() == ["Sequential.2", "Sequential.1", "Sequential.0"]
    assert backward.get_column("start_ns").min() > forward.get_column("end_ns").max()
    assert session.torch_hooks.errors == 0


def test_flops_per_layer_and_pass_count_a_multiply_add_as_two() -> None:
    model = nn.Sequential(nn.Linear(8, 4), nn.GELU(), nn.Linear(4, 2))
    _session, tables = _capture(model, torch.randn(2, 8))
    flops = {(r["name"], r["pass"]): r["flops"] for r in tables["ranges"].iter_rows(named=True)}
    assert flops[("Sequential.0", "forward")] == 2 * 2 * 8 * 4
    assert flops[("Sequential.2", "forward")] == 2 * 2 * 4 * 2
    assert flops[("Sequential", "forward")] == 128 + 32  # inclusive of children
    # Backward of the last Linear: grad input + grad weight; the first layer's
    # input needs no grad, so only its weight gradient (still inside its range).
    assert flops[("Sequential.2", "backward")] == 2 * (2 * 2 * 4 * 2)
    assert flops[("Sequential.0", "backward")] == 2 * 2 * 8 * 4
    assert flops[("Sequential", "backward")] == 64 + 128
    assert flops[("Sequential.1", "forward")] is None  # GELU: no counted op -> unknown, not 0


def test_flops_can_be_switched_off() -> None:
    model = nn.Sequential(nn.Linear(8, 4))
    session, tables = _capture(model, torch.randn(2, 8), flops=False)
    assert tables["ranges"].get_column("flops").null_count() == tables["ranges"].height
    assert session.metadata()["capture"]["flops"] is False


def test_kernels_are_attributed_to_their_layer_and_pass_without_synchronize() -> None:
    gpu = FakeCuptiBackend()
    model = nn.Sequential(nn.Linear(4, 4), Scale(gpu), nn.Linear(4, 2))
    _session, tables = _capture(model, torch.randn(3, 4), gpu)
    kernels = tables["kernels"].select("name", "layer", "pass").sort("name").rows()
    assert kernels == [
        ("scale_bwd_k(float*, int)", "Sequential.1", "backward"),
        ("scale_fwd_k(float*, int)", "Sequential.1", "forward"),
    ]
    assert gpu.synchronize_calls == 1  # once, at the end of the capture; never per layer


def test_in_place_modules_and_residual_blocks_keep_working() -> None:
    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)

        def forward(self, x):
            return x + torch.softmax(self.q(x) @ self.k(x).T, -1) @ self.v(x)

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), Block(), nn.Linear(8, 2))
    session, tables = _capture(model, torch.randn(3, 4))
    backward = _modules(tables, "backward")
    siblings = backward.filter(pl.col("name").is_in(["Sequential.2.q", "Sequential.2.k", "Sequential.2.v"]))
    assert siblings.height == 3
    # Siblings run one after another on the autograd thread: no overlap.
    ordered = siblings.sort("start_ns")
    assert (ordered.get_column("start_ns").slice(1) >= ordered.get_column("end_ns").slice(0, 2)).all()
    block = backward.filter(pl.col("name") == "Sequential.2").row(0, named=True)
    assert (siblings.get_column("parent") == block["id"]).all()
    assert session.torch_hooks.errors == 0


def test_hooks_are_removed_when_the_capture_stops() -> None:
    model = nn.Sequential(nn.Linear(4, 2))
    session, tables = _capture(model, torch.randn(1, 4))
    before = tables["ranges"].height
    model(torch.randn(1, 4)).sum().backward()  # outside the capture
    assert session.tables()["ranges"].height == before
    assert not torch.nn.modules.module._global_forward_pre_hooks


def test_no_grad_forward_records_no_backward() -> None:
    model = nn.Sequential(nn.Linear(4, 2))
    with CaptureSession("t", backend=FakeCuptiBackend(), layers=True) as session, torch.no_grad():
        model(torch.randn(1, 4))
    passes = session.tables()["ranges"].get_column("pass").unique().to_list()
    assert passes == ["forward"]


def test_flops_are_counted_for_the_first_steps_then_reused_by_input_shape() -> None:
    model = nn.Sequential(nn.Linear(8, 4))
    with CaptureSession("t", backend=FakeCuptiBackend(), layers=True, flop_steps=1) as session:
        for _ in range(3):
            model(torch.randn(2, 8)).sum().backward()
        assert session.torch_hooks._flops.counting is False  # the dispatch mode left after step 1
        model(torch.randn(5, 8)).sum().backward()  # a shape never measured
    linear = session.tables()["ranges"].filter(pl.col("name") == "Sequential.0").sort("start_ns")
    forward = linear.filter(pl.col("pass") == "forward").get_column("flops").to_list()
    backward = linear.filter(pl.col("pass") == "backward").get_column("flops").to_list()
    assert forward == [128.0, 128.0, 128.0, None]
    assert backward == [128.0, 128.0, 128.0, None]


def test_every_step_is_counted_when_asked() -> None:
    model = nn.Sequential(nn.Linear(8, 4))
    with CaptureSession("t", backend=FakeCuptiBackend(), layers=True, flop_steps=None) as session:
        for batch in (2, 5, 2):
            model(torch.randn(batch, 8)).sum().backward()
        assert session.torch_hooks._flops.counting is True
    forward = session.tables()["ranges"].filter((pl.col("name") == "Sequential.0") & (pl.col("pass") == "forward"))
    assert forward.sort("start_ns").get_column("flops").to_list() == [128.0, 320.0, 128.0]


def test_optimizer_steps_are_ranges_of_the_optimizer_pass_and_own_their_kernels() -> None:
    gpu = FakeCuptiBackend()
    model = nn.Sequential(Scale(gpu), nn.Linear(4, 2))

    class LaunchingSGD(torch.optim.SGD):
        def step(self, closure=None):  # type: ignore[override]
            gpu.launch_kernel("_Z14sgd_update_kPfi", 500)
            return super().step(closure)

    optimizer = LaunchingSGD(model.parameters(), lr=0.1)
    global_hooks = importlib.import_module("torch.optim.optimizer")._global_optimizer_pre_hooks
    before = len(global_hooks)
    with CaptureSession("t", backend=gpu, layers=True, flops=False) as session:
        for _ in range(2):
            model(torch.randn(3, 4, requires_grad=True)).sum().backward()
            optimizer.step()
    tables = session.tables()
    steps = tables["ranges"].filter(pl.col("name") == "Optimizer.step#LaunchingSGD.step")
    assert steps.select("category", "pass").rows() == [("marker", "optimizer")] * 2
    kernels = tables["kernels"]
    assert dict(kernels.group_by("pass").len().iter_rows()) == {"forward": 2, "backward": 2, "optimizer": 2}
    assert set(kernels.filter(pl.col("pass") == "optimizer").get_column("op")) == {
        "Optimizer.step#LaunchingSGD.step"}
    assert len(global_hooks) == before  # the global hooks leave with the session
    assert session.torch_hooks.errors == 0


def test_tensors_inside_nested_arguments_and_outputs_still_get_backward_ranges() -> None:
    class Pair(nn.Module):  # takes a list and a keyword dict, returns a dict: pytree's path, not the flat one
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, xs, *, extra):
            return {"out": self.a(xs[0]) + self.b(extra["y"])}

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first, self.pair = nn.Linear(4, 4), Pair()

        def forward(self, x):
            h = self.first(x)
            return self.pair([h], extra={"y": h * 2})["out"]

    model = Net()
    session, tables = _capture(model, torch.randn(3, 4))
    backward = _modules(tables, "backward")
    assert {"Net", "Net.first", "Net.pair", "Net.pair.a", "Net.pair.b"} <= set(backward.get_column("name"))
    pair = backward.filter(pl.col("name") == "Net.pair").row(0, named=True)
    first = backward.filter(pl.col("name") == "Net.first").row(0, named=True)
    assert pair["end_ns"] <= first["start_ns"]  # the pair's inputs (first's output) end it before first starts
    assert session.torch_hooks.errors == 0


def test_one_node_pre_hook_carries_every_action_placed_on_it() -> None:
    # Linear i's input is linear i-1's output: its end and i-1's start share one autograd node.
    model = nn.Sequential(*(nn.Linear(4, 4) for _ in range(4)))
    x = torch.randn(2, 4, requires_grad=True)
    with CaptureSession("t", backend=FakeCuptiBackend(), layers=True, flops=False) as session:
        out = model(x)
        # The node producing layer 2's output (layer 3's input).
        hooked = next(n for n, _ in out.grad_fn.next_functions if n is not None and "Addmm" in n.name())
        actions = hooked.metadata["dashboard.capture.actions"]
        assert len(actions) == 2  # layer 2's start, then layer 3's end: one Python call from autograd
        out.sum().backward()
    backward = _modules(session.tables(), "backward").filter(pl.col("name") != "Sequential")
    assert backward.get_column("name").to_list() == [f"Sequential.{i}" for i in (3, 2, 1, 0)]
    ordered = backward.sort("start_ns")
    assert (ordered.get_column("start_ns").slice(1) >= ordered.get_column("end_ns").slice(0, 3)).all()


def test_the_cheap_form_has_every_forward_range_and_one_backward_range_per_model_call() -> None:
    gpu = FakeCuptiBackend()
    model = nn.Sequential(nn.Linear(4, 4), Scale(gpu), nn.Linear(4, 2))
    with CaptureSession("t", backend=gpu, layers="forward") as session:
        for _ in range(2):
            model(torch.randn(3, 4)).sum().backward()
    tables = session.tables()
    forward = _modules(tables, "forward")
    assert forward.get_column("name").to_list() == ["Sequential", "Sequential.0", "Sequential.1", "Sequential.2"] * 2
    backward = _modules(tables, "backward")
    assert backward.get_column("name").to_list() == ["Sequential"] * 2  # one per model call
    kernels = dict(tables["kernels"].select("name", "pass").iter_rows())
    assert kernels == {"scale_fwd_k(float*, int)": "forward", "scale_bwd_k(float*, int)": "backward"}
    assert set(tables["kernels"].filter(pl.col("pass") == "backward").get_column("layer")) == {"Sequential"}
    assert session.metadata()["capture"]["layers"] == "forward"
    flops = backward.get_column("flops").to_list()
    assert flops[0] == 2 * (2 * 3 * 4 * 2) + 2 * 3 * 4 * 4  # the whole backward: both Linears' weight and input grads


def test_layer_modes_by_name() -> None:
    model = nn.Sequential(nn.Linear(4, 2))
    for layers, expected in ((None, "forward"), (True, "full"), ("full", "full"), (False, False)):
        with CaptureSession("t", backend=FakeCuptiBackend(), layers=layers) as session:
            model(torch.randn(1, 4)).sum().backward()
        assert session.metadata()["capture"]["layers"] == expected, layers
    with pytest.raises(ValueError, match="layers='sideways'"):
        CaptureSession("t", backend=FakeCuptiBackend(), layers="sideways")


class _TwoInputs(nn.Module):
    def forward(self, x, mask=None, scale=2.0):
        return x * scale if mask is None else x.masked_fill(mask, 0.0) * scale


def test_forward_ranges_keep_their_input_tensors_sizes_and_dtypes() -> None:
    model = nn.Sequential(nn.Linear(8, 4).to(torch.float64), nn.GELU())
    both = _TwoInputs()
    _, tables = _capture(model, torch.randn(3, 8, dtype=torch.float64))
    forward = _modules(tables, "forward")
    assert forward.select("name", "input_shapes", "input_dtypes").rows() == [
        ("Sequential", "[3, 8]", "float64"), ("Sequential.0", "[3, 8]", "float64"),
        ("Sequential.1", "[3, 4]", "float64")]
    # Backward ranges have gradients for inputs: none are kept.
    assert _modules(tables, "backward").get_column("input_shapes").null_count() == 3
    # Keyword tensors count, other arguments do not; under no_grad they are kept while FLOPs are counted.
    with CaptureSession("t", backend=FakeCuptiBackend(), layers=True, flops=True) as session, torch.no_grad():
        both(torch.ones(2, 5, dtype=torch.bfloat16), mask=torch.zeros(2, 5, dtype=torch.bool), scale=3.0)
        both(torch.ones(7, dtype=torch.int64))
    ranges = session.tables()["ranges"].sort("start_ns")
    assert ranges.schema["input_shapes"] == pl.Categorical
    assert ranges.select("input_shapes", "input_dtypes").rows() == [("[2, 5], [2, 5]", "bfloat16, bool"),
                                                                    ("[7]", "int64")]
    # Under no_grad without FLOPs, finding the tensors would be the only cost: none are kept.
    with CaptureSession("t", backend=FakeCuptiBackend(), layers=True, flops=False) as session, torch.no_grad():
        both(torch.ones(7))
    assert session.tables()["ranges"].get_column("input_shapes").to_list() == [None]
