"""Layers and passes, live: torch module hooks that record forward and backward
ranges (category "module", layer = qualified module name) on the capture's
clock, plus FLOPs per layer and pass from `torch.utils.flop_counter`; optimizer
steps through `optimizer_hooks`.

Forward: global forward pre / post hooks. Backward: gradient hooks on each
module call's output tensors (all output grads ready = the module's backward
starts) and input tensors (all input grads ready = it ends), the way torch's
own ModuleTracker does it. Unlike `register_full_backward_hook`, this wraps no
tensors, so in-place modules (ReLU(inplace=True)) keep working, and a module
whose inputs need no grad (the first layer) stays open until its graph task
ends instead of closing before its weight gradients are computed.

Cost: these hooks run for every module call of a launch-bound loop, where
each microsecond of Python shows in the step time, so the per-call path is
kept short: tensors are picked out of flat argument tuples without pytree
(which costs ~15 µs a call; nested arguments still go through it), a single
tensor's gradient hook is a pre-hook on its autograd node (cheaper to
register and to call than a tensor hook). A forward range keeps its input
tensors' sizes and dtypes (`input_shapes`, `input_dtypes`: torch.Size and
dtype objects per call, turned into text once per distinct tuple when the
capture ends) where its input tensors are found anyway: with gradients on
(for the backward hooks) or FLOPs on (the shapes key the reused FLOPs);
measured +0.2 µs (best of 60) to +1.0 µs (median of 10 runs) on a ~15 µs
hooked Linear(8, 8) call on CPU. Under no_grad without
FLOPs, finding them would be the cost (+1.3 µs, ~10 %): those ranges keep
none. Backward ranges keep none either (their inputs are gradients).

No torch.cuda.synchronize anywhere: a kernel belongs to the range open on
the thread whose API call launched it (tables._owners), so kernels keep
their real GPU times.

FLOPs: a FlopCounterMode (`display=False`) runs for the first steps (2 by
default, see FlopSampler); a range's flops are the counter's growth between
its start and end, so they include the module's children, and forward and
backward are separate because they are separate ranges. A multiply-add counts
2 (torch's formulas). A range with no counted op (FlopCounterMode counts
matmul / conv / attention) gets null, never 0. Later steps reuse the value
measured for the same layer, pass and input shapes; unseen shapes get null.
Counting routes every op through a Python dispatch mode, which costs CPU time
per op, hence the sampling; `flops=False` turns it off.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import threading
from typing import Any

from dashboard.capture.flop_sampler import FlopSampler
from dashboard.capture.module_names import ModuleNames
from dashboard.capture.optimizer_hooks import OptimizerHooks
from dashboard.capture.ranges import RangeRecorder

__all__ = ["FlopSampler", "LayerHooks", "unavailable_reason"]

# What a module call's arguments hold besides tensors, in the common case; any other value (a list, a
# dict, a dataclass, a model output) sends the call through pytree, which finds tensors anywhere.
_LEAVES = (int, float, bool, str, type(None))

_REQUIRED_HOOKS = (
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
)


def unavailable_reason() -> str | None:
    """None when torch module hooks can be installed here, else why not."""
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:
        return "torch is not installed"
    try:
        import torch
    except Exception as exc:
        return f"torch cannot be imported ({exc})"
    nn_module = torch.nn.modules.module
    missing = [name for name in _REQUIRED_HOOKS if not hasattr(nn_module, name)]
    if missing:
        return f"torch {torch.__version__} lacks {', '.join(missing)}"
    return None


# Where a node keeps the actions of our one pre-hook on it (autograd nodes carry a `metadata` dict).
_NODE_ACTIONS = "dashboard.capture.actions"


def _run_all(actions: list[Any]) -> None:
    for action in actions:
        action()


def _when_all_grads(tensors: list[Any], action: Any, register_multi_grad_hook: Any) -> None:
    """Call `action()` once the gradients of all `tensors` are computed."""
    if len(tensors) != 1:
        register_multi_grad_hook(tensors, lambda grads: action())
        return
    # The usual single tensor: a pre-hook on the node that consumes its gradient fires when that
    # gradient is complete, as a tensor hook does, for a third of the cost. One module's input is
    # usually the previous one's output, so one node gets several actions (that one's start, this
    # one's end, a parent's end): they share one pre-hook and run in the order they were added, as
    # tensor hooks would. A leaf (no node) or an older torch gets a tensor hook. The grads are untouched.
    tensor = tensors[0]
    node = tensor.grad_fn
    metadata = getattr(node, "metadata", None) if node is not None else None
    if metadata is None or not hasattr(node, "register_prehook"):
        tensor.register_hook(lambda grad: action())
        return
    actions = metadata.get(_NODE_ACTIONS)
    if actions is None:
        actions = metadata[_NODE_ACTIONS] = [action]
        node.register_prehook(lambda grads: _run_all(actions))
    else:
        actions.append(action)


class _BackwardSpan:
    __slots__ = ("closed", "flops_at_start", "key", "name", "range_id")

    def __init__(self, name: str, key: tuple) -> None:
        self.name = name
        self.key = key  # (layer, "backward", the forward call's input shapes)
        self.range_id: int | None = None
        self.flops_at_start: int | None = None
        self.closed = False


class LayerHooks:
    """Global torch module hooks feeding a RangeRecorder."""

    def __init__(self, ranges: RangeRecorder, count_flops: bool = True, flop_steps: int | None = 2,
                 per_module_backward: bool = True) -> None:
        self.ranges = ranges
        # False: backward hooks on the outermost module call only (one backward range per model call).
        self.per_module_backward = per_module_backward
        self.count_flops = count_flops
        self.flop_steps = flop_steps
        self.warnings: list[str] = []
        self.errors = 0
        self._names = ModuleNames()
        self._local = threading.local()
        self._handles: list[Any] = []
        self._flops: FlopSampler | None = None
        self._task_spans: dict[int, list[_BackwardSpan]] = {}
        self._open_spans: dict[int, _BackwardSpan] = {}  # range id -> open backward span
        self._lock = threading.Lock()
        self._active = False
        self._torch: Any = None
        self._multi_grad_hook: Any = None
        self._optimizer = OptimizerHooks(ranges)  # the optimizer pass (torch_optimizer_hooks)

    @property
    def counting_flops(self) -> bool:
        """True while FLOPs are measured or reused from measured steps."""
        return self._flops is not None

    # ---- lifecycle ---------------------------------------------------------
    def install(self) -> None:
        import torch
        from torch.autograd.graph import register_multi_grad_hook
        from torch.nn.modules import module as nn_module

        self._torch = torch
        self._multi_grad_hook = register_multi_grad_hook
        self._handles = [
            nn_module.register_module_forward_pre_hook(self._forward_pre),
            nn_module.register_module_forward_hook(self._forward_post, with_kwargs=True, always_call=True),
        ]
        self._optimizer.install()
        if self.count_flops:
            sampler = FlopSampler(self.flop_steps)
            try:
                sampler.start()
                self._flops = sampler
            except Exception as exc:
                self.warnings.append(f"FLOPs not counted: {exc}")
        self._active = True

    def uninstall(self) -> None:
        self._active = False
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._optimizer.uninstall()
        if self._flops is not None:
            self._flops.stop()
            self.warnings.extend(self._flops.warnings)
        if self.errors:
            self.warnings.append(f"{self.errors} layer hook errors (those layers may lack ranges)")

    # ---- helpers -------------------------------------------------------------
    def _calls(self) -> list[tuple[Any, int, int | None, str]]:
        try:
            return self._local.calls
        except AttributeError:
            calls = self._local.calls = []
            return calls

    def _tensors(self, tree: Any) -> list[Any]:
        from torch.utils._pytree import tree_flatten

        tensor_type = self._torch.Tensor
        return [t for t in tree_flatten(tree)[0] if isinstance(t, tensor_type)]

    def _flat_tensors(self, values: Any) -> list[Any] | None:
        """The tensors among `values`, or None when one of them is a container (pytree's job)."""
        tensor_type = self._torch.Tensor
        found = []
        for value in values:
            if isinstance(value, tensor_type):
                found.append(value)
            elif not isinstance(value, _LEAVES):
                return None
        return found

    def _inputs(self, args: tuple, kwargs: dict) -> list[Any]:
        found = self._flat_tensors(args)
        if found is not None and kwargs:
            more = self._flat_tensors(kwargs.values())
            found = None if more is None else found + more
        return found if found is not None else self._tensors((args, kwargs))

    def _outputs(self, output: Any) -> list[Any]:
        if isinstance(output, self._torch.Tensor):
            return [output]
        found = self._flat_tensors(output) if type(output) in (tuple, list) else None
        return found if found is not None else self._tensors(output)

    # ---- forward -------------------------------------------------------------
    def _forward_pre(self, module: Any, args: Any) -> None:
        if not self._active:
            return None
        try:
            calls = self._calls()
            flops = self._flops
            if not calls and flops is not None:
                flops.maybe_stop()  # between steps, on the thread that entered it
            name = self._names.name_of(module, calls[-1][0] if calls else None)
            range_id = self.ranges.open(name, "module", "forward", layer=name)
            calls.append((module, range_id, flops.snapshot() if flops is not None else None, name))
        except Exception:
            self.errors += 1
        return None

    def _forward_post(self, module: Any, args: Any, kwargs: Any, output: Any) -> None:
        if not self._active:
            return None
        try:
            calls = self._calls()
            if calls and calls[-1][0] is module:
                _module, range_id, flops_start, name = calls.pop()
            else:  # a call whose pre hook ran before the capture began, or one that raised
                for index in range(len(calls) - 2, -1, -1):
                    if calls[index][0] is module:
                        break
                else:
                    return None
                _module, range_id, flops_start, name = calls.pop(index)
            flops = self._flops
            grad = self._torch.is_grad_enabled()
            if flops is None and not grad:
                # Inference without FLOPs: finding the input tensors would be the only cost (~1.3 µs a call, ~10 %
                # of a hooked small module's call), so this range keeps no input shapes.
                self.ranges.close(range_id)
                return None
            inputs = self._inputs(args, kwargs)
            # Sizes and dtype objects only (text once per distinct tuple, at the end); one tensor is the usual case.
            if len(inputs) == 1:
                recorded: tuple = ((inputs[0].shape, inputs[0].dtype),)
            else:
                recorded = tuple([(t.shape, t.dtype) for t in inputs])
            if flops is not None:
                shapes = tuple(t.shape for t in inputs)
                self.ranges.close(range_id, flops=flops.flops(flops_start, (name, "forward", shapes)),
                                  inputs=recorded)
            else:
                shapes = ()
                self.ranges.close(range_id, inputs=recorded)
            if grad and (self.per_module_backward or not calls):
                self._watch_backward(name, shapes, inputs, output)
            elif not calls and flops is not None:
                flops.step_done()  # inference: a root forward is a step
        except Exception:
            self.errors += 1
        return None

    # ---- backward ------------------------------------------------------------
    def _watch_backward(self, name: str, shapes: tuple, inputs: list[Any], output: Any) -> None:
        outputs = [t for t in self._outputs(output) if t.requires_grad]
        if not outputs:
            return
        inputs_needing_grad = [t for t in inputs if t.requires_grad]
        if inputs_needing_grad and all(any(out is given for given in inputs_needing_grad) for out in outputs):
            # Pass-through or in-place (Identity, ReLU(inplace=True)): its output
            # *is* its input, so both hooks would sit on the tensor the previous
            # module hooks too and fire in the wrong order; its backward, if
            # any, is counted in its neighbour's / parent's range instead.
            return
        span = _BackwardSpan(name, (name, "backward", shapes))
        _when_all_grads(outputs, functools.partial(self._backward_start, span, None), self._multi_grad_hook)
        if inputs_needing_grad:
            _when_all_grads(inputs_needing_grad, functools.partial(self._backward_end, span, None),
                            self._multi_grad_hook)

    def _backward_start(self, span: _BackwardSpan, grads: Any) -> None:
        if not self._active or span.range_id is not None:
            return
        try:
            under = self._settle_open_backward(span.name)
            span.range_id = self.ranges.open(span.name, "module", "backward", layer=span.name, under=under)
            span.flops_at_start = self._flops.snapshot() if self._flops is not None else None
            with self._lock:
                self._open_spans[span.range_id] = span
            self._end_with_graph_task(span)
        except Exception:
            self.errors += 1

    def _settle_open_backward(self, name: str) -> int:
        """Make room for module `name`'s backward among the open backward ranges.

        Gradient hooks on one tensor fire in registration order, so a parent
        sharing its output with its last child starts *after* that child (it
        goes beneath it: returns how many ranges to place it under), and a
        module whose output is the next module's input starts *before* that
        one ends. On one autograd thread nodes run one at a time, so a module
        that is neither an ancestor nor a descendant of the one starting has
        finished its work: it ends now.
        """
        descendants = 0
        on_top = True  # still inside the run of descendants at the top
        for opened in reversed(self.ranges.open_stack()):
            if opened.category != "module" or opened.pass_ != "backward" or opened.layer is None:
                break
            if name.startswith(opened.layer + "."):
                break  # an ancestor: it and everything below it stay open
            if on_top and opened.layer.startswith(name + "."):
                descendants += 1
                continue
            on_top = False
            with self._lock:
                other = self._open_spans.get(opened.id)
            if other is not None:
                self._backward_end(other, None)
        return descendants

    def _backward_end(self, span: _BackwardSpan, grads: Any) -> None:
        if span.range_id is None or span.closed:
            return
        span.closed = True
        with self._lock:
            self._open_spans.pop(span.range_id, None)
        try:
            flops = self._flops.flops(span.flops_at_start, span.key) if self._flops is not None else None
            self.ranges.close(span.range_id, flops=flops)
        except Exception:
            self.errors += 1

    def _end_with_graph_task(self, span: _BackwardSpan) -> None:
        # A module whose inputs need no grad never sees its end hook: close it
        # when the backward call (the autograd graph task) finishes.
        torch = self._torch
        task = int(torch._C._current_graph_task_id())
        with self._lock:
            spans = self._task_spans.get(task)
            first = spans is None
            if first:
                spans = self._task_spans[task] = []
            spans.append(span)
        if first:
            torch.autograd.Variable._execution_engine.queue_callback(functools.partial(self._end_task, task))

    def _end_task(self, task: int) -> None:
        with self._lock:
            spans = self._task_spans.pop(task, [])
        for span in reversed(spans):  # innermost (latest opened) first
            self._backward_end(span, None)
        if self._flops is not None:
            self._flops.step_done()
