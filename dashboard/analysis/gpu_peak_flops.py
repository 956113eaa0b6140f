"""GPU peak dense FLOP/s per dtype (published figures) and the run's GPU, to put a layer's TFLOP/s in proportion.

Numbers are NVIDIA's published *dense* (no structured sparsity) tensor-core
peaks for the SXM / default variant unless the name says otherwise, in
TFLOP/s. Where we cannot state a number with confidence it is absent and the
page says "peak unknown" rather than guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")
DTYPE_LABELS = {"bf16": "BF16", "fp16": "FP16", "fp8": "FP8", "tf32": "TF32", "fp32": "FP32 (no tensor cores)"}

# (substring of the device name, lower case) -> {dtype: dense TFLOP/s}. Most specific first.
PEAK_TFLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("b200", {"bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0, "tf32": 1100.0}),
    ("h200 nvl", {"bf16": 835.0, "fp16": 835.0, "fp8": 1670.0, "tf32": 418.0, "fp32": 60.0}),
    ("h200", {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.0, "fp32": 67.0}),
    ("h100 nvl", {"bf16": 835.0, "fp16": 835.0, "fp8": 1670.0, "tf32": 418.0, "fp32": 60.0}),
    ("h100 pcie", {"bf16": 756.0, "fp16": 756.0, "fp8": 1513.0, "tf32": 378.0, "fp32": 51.0}),
    ("h100", {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.0, "fp32": 67.0}),
    ("gh200", {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.0, "fp32": 67.0}),
    ("a100", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    ("v100 pcie", {"fp16": 112.0, "fp32": 14.0}),
    ("v100", {"fp16": 125.0, "fp32": 15.7}),
)


def peak_flops(device_name: str | None, dtype: str) -> float | None:
    """Peak dense FLOP/s of a device for a dtype, or None when we do not know it."""
    if not device_name:
        return None
    lowered = device_name.lower()
    for fragment, peaks in PEAK_TFLOPS:
        if fragment in lowered:
            value = peaks.get(dtype)
            return value * 1e12 if value is not None else None
    return None


def _devices_in(value: Any) -> Iterable[str]:
    """Device names anywhere in run metadata: kineto `deviceProperties`, nsys `gpus`, or a `device` dict."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in ("deviceProperties", "gpus", "devices") and isinstance(item, list):
                for device in item:
                    named = isinstance(device, Mapping) and isinstance(device.get("name"), str)
                    if named and device.get("active", True):  # nsys lists idle GPUs too
                        yield device["name"]
            else:
                yield from _devices_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _devices_in(item)


def device_name(metadata: Mapping[str, Any]) -> str | None:
    """The GPU the run ran on, when its metadata says (the first one named)."""
    return next(iter(_devices_in(metadata)), None)
