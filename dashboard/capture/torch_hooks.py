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

No torch.cuda.synchronize anywhere: each range's id is pushed as a CUPTI
external correlation id while it is open, so kernels are attributed to
layers by CUPTI itself and keep their real GPU times.

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
import weakref
from collections import Counter
from typing import Any

from dashboard.capture.optimizer_hooks import OptimizerHooks
from dashboard.capture.ranges import RangeRecorder

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


class _ModuleNames:
    """Qualified names (`Model.blocks.0.attn`) for modules, found once per root."""

    def __init__(self) -> None:
        self._names: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._roots: Counter[str] = Counter()

    def name_of(self, module: Any, parent: Any | None) -> str:
        name = self._names.get(module)
        if name is not None:
            return name
        parent_name = self._names.get(parent) if parent is not None else None
        if parent_name is not None:
            # Created after its parent was walked (or not a registered child).
            name = f"{parent_name}.{type(module).__name__}"
        else:
            base = type(module).__name__
            self._roots[base] += 1
            name = base if self._roots[base] == 1 else f"{base}#{self._roots[base]}"
        self._names[module] = name
        for child_name, child in module.named_modules():
            if child_name and child not in self._names:
                self._names[child] = f"{name}.{child_name}"
        return name


def _when_all_grads(tensors: list[Any], hook: Any, register_multi_grad_hook: Any) -> None:
    """Call `hook(None)` once the gradients of all `tensors` are computed."""
    if len(tensors) == 1:
        # The usual single tensor: a plain tensor hook is several times cheaper
        # than torch's multi-grad machinery. It returns None: the grad is untouched.
        tensors[0].register_hook(lambda grad: hook(None))
    else:
        register_multi_grad_hook(tensors, hook)


class _BackwardSpan:
    __slots__ = ("closed", "flops_at_start", "key", "name", "range_id")

    def __init__(self, name: str, key: tuple) -> None:
        self.name = name
        self.key = key  # (layer, "backward", the forward call's input shapes)
        self.range_id: int | None = None
        self.flops_at_start: int | None = None
        self.closed = False


class FlopSampler:
    """FlopCounterMode for the first `steps` steps, then each (layer, pass, input
    shapes) reuses the FLOPs measured for it; a combination never measured gets
    null. A step ends with each backward call (or each no-grad root forward).

    Counting routes every op through a Python dispatch mode (tens of us per op),
    so stopping after a few steps keeps the rest of the capture undisturbed.
    `steps=None` counts every step.
    """

    def __init__(self, steps: int | None = 2) -> None:
        self.steps = steps
        self.steps_seen = 0
        self.warnings: list[str] = []
        self._counter: Any = None
        self._thread: int | None = None
        self._cache: dict[tuple, float | None] = {}

    @property
    def counting(self) -> bool:
        return self._counter is not None

    def start(self) -> None:
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
        counter.__enter__()
        self._counter, self._thread = counter, threading.get_ident()

    def snapshot(self) -> int | None:
        """The running total, when this thread's ops are being counted."""
        counter = self._counter
        if counter is None:
            return None
        try:
            from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

            if counter.mode not in _get_current_dispatch_mode_stack():
                return None
        except Exception:
            pass
        return counter.get_total_flops()

    def flops(self, start: int | None, key: tuple) -> float | None:
        """FLOPs since `start` (measured and remembered), else the remembered ones for `key`."""
        now = self.snapshot() if start is not None else None
        if now is None:
            return self._cache.get(key)
        value = float(now - start) if now > start else None  # no counted op: unknown, not 0
        self._cache[key] = value
        return value

    def step_done(self) -> None:
        self.steps_seen += 1

    def maybe_stop(self) -> None:
        """Leave the dispatch mode once enough steps were counted (only where it was entered, only if on top)."""
        if self._counter is None or self.steps is None or self.steps_seen < self.steps:
            return
        if threading.get_ident() != self._thread:
            return
        try:
            from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

            stack = _get_current_dispatch_mode_stack()
            if not stack or stack[-1] is not self._counter.mode:
                return  # another mode entered after ours: popping now would pop that one
        except Exception:
            return
        self.stop()

    def stop(self) -> None:
        counter, self._counter = self._counter, None
        if counter is None:
            return
        try:
            counter.__exit__(None, None, None)
        except Exception as exc:  # entered on another thread, or already gone
            self.warnings.append(f"FLOP counter did not close cleanly: {exc}")


class LayerHooks:
    """Global torch module hooks feeding a RangeRecorder."""

    def __init__(self, ranges: RangeRecorder, count_flops: bool = True, flop_steps: int | None = 2) -> None:
        self.ranges = ranges
        self.count_flops = count_flops
        self.flop_steps = flop_steps
        self.warnings: list[str] = []
        self.errors = 0
        self._names = _ModuleNames()
        self._local = threading.local()
        self._handles: list[Any] = []
        self._flops: FlopSampler | None = None
        self._task_spans: dict[int, list[_BackwardSpan]] = {}
        self._open_spans: dict[int, _BackwardSpan] = {}  # range id -> open backward span
        self._lock = threading.Lock()
        self._active = False
        self._torch: Any = None
        self._optimizer = OptimizerHooks(ranges)  # the optimizer pass (torch_optimizer_hooks)

    @property
    def counting_flops(self) -> bool:
        """True while FLOPs are measured or reused from measured steps."""
        return self._flops is not None

    # ---- lifecycle ---------------------------------------------------------
    def install(self) -> None:
        import torch
        from torch.nn.modules import module as nn_module

        self._torch = torch
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
    def _calls(self) -> list[tuple[Any, int, int | None]]:
        calls = getattr(self._local, "calls", None)
        if calls is None:
            calls = self._local.calls = []
        return calls

    def _snapshot(self) -> int | None:
        return self._flops.snapshot() if self._flops is not None else None

    def _measured(self, start: int | None, key: tuple) -> float | None:
        return self._flops.flops(start, key) if self._flops is not None else None

    def _tensors(self, tree: Any) -> list[Any]:
        from torch.utils._pytree import tree_flatten

        tensor_type = self._torch.Tensor
        return [t for t in tree_flatten(tree)[0] if isinstance(t, tensor_type)]

    # ---- forward -------------------------------------------------------------
    def _forward_pre(self, module: Any, args: Any) -> None:
        if not self._active:
            return None
        try:
            calls = self._calls()
            if not calls and self._flops is not None:
                self._flops.maybe_stop()  # between steps, on the thread that entered it
            name = self._names.name_of(module, calls[-1][0] if calls else None)
            range_id = self.ranges.open(name, "module", "forward", layer=name)
            calls.append((module, range_id, self._snapshot()))
        except Exception:
            self.errors += 1
        return None

    def _forward_post(self, module: Any, args: Any, kwargs: Any, output: Any) -> None:
        if not self._active:
            return None
        try:
            calls = self._calls()
            for index in range(len(calls) - 1, -1, -1):
                if calls[index][0] is module:
                    break
            else:
                return None
            _module, range_id, flops_start = calls.pop(index)
            name = self._names.name_of(module, None)
            inputs = self._tensors((args, kwargs))
            shapes = tuple(tuple(t.shape) for t in inputs)
            self.ranges.close(range_id, flops=self._measured(flops_start, (name, "forward", shapes)))
            if self._torch.is_grad_enabled():
                self._watch_backward(name, shapes, inputs, output)
            elif not calls and self._flops is not None:
                self._flops.step_done()  # inference: a root forward is a step
        except Exception:
            self.errors += 1
        return None

    # ---- backward ------------------------------------------------------------
    def _watch_backward(self, name: str, shapes: tuple, inputs: list[Any], output: Any) -> None:
        outputs = [t for t in self._tensors(output) if t.requires_grad]
        if not outputs:
            return
        inputs_needing_grad = [t for t in inputs if t.requires_grad]
        if all(any(out is given for given in inputs_needing_grad) for out in outputs):
            # Pass-through or in-place (Identity, ReLU(inplace=True)): its output
            # *is* its input, so both hooks would sit on the tensor the previous
            # module hooks too and fire in the wrong order; its backward, if
            # any, is counted in its neighbour's / parent's range instead.
            return
        from torch.autograd.graph import register_multi_grad_hook

        span = _BackwardSpan(name, (name, "backward", shapes))
        _when_all_grads(outputs, functools.partial(self._backward_start, span), register_multi_grad_hook)
        if inputs_needing_grad:
            _when_all_grads(inputs_needing_grad, functools.partial(self._backward_end, span), register_multi_grad_hook)

    def _backward_start(self, span: _BackwardSpan, grads: Any) -> None:
        if not self._active or span.range_id is not None:
            return
        try:
            under = self._settle_open_backward(span.name)
            span.range_id = self.ranges.open(span.name, "module", "backward", layer=span.name, under=under)
            span.flops_at_start = self._snapshot()
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
            self.ranges.close(span.range_id, flops=self._measured(span.flops_at_start, span.key))
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
