"""GPU peak dense FLOP/s: which device the run ran on, which dtype its kernels compute in, and the peak.

The device comes from the trace (Kineto `deviceProperties`: name, `numSms`,
`computeMajor` / `computeMinor`; Nsight Systems' `gpus`), the dtype from the
names of the kernels that ran (`volta_sgemm` is FP32, `ampere_bf16_s16816gemm`
BF16, `…h884…` FP16 on tensor cores: DTYPE_PATTERNS, weighted by kernel
time), and the peak from PEAK_TABLE: vendors' datasheet figures, *dense* (no
structured sparsity: datasheets that print "with sparsity" are halved), with
FP32 accumulation on GeForce cards (what frameworks use). Where no number can
be stated with confidence it is absent, and the page says why rather than
guess; a user can always set the peak themselves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from dashboard.analysis.units import format_flops_rate

DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")
AUTO = "auto"  # the dtype the kernels compute in
DTYPE_LABELS = {"bf16": "BF16", "fp16": "FP16", "fp8": "FP8", "tf32": "TF32", "fp32": "FP32 (no tensor cores)",
                AUTO: "auto (the kernels' dtype)"}
DTYPE_SHORT = {"bf16": "BF16", "fp16": "FP16", "fp8": "FP8", "tf32": "TF32", "fp32": "FP32"}


@dataclass(frozen=True)
class PeakEntry:
    label: str  # the product the numbers are for
    pattern: str  # regex on the device name (case-insensitive)
    tflops: dict[str, float]  # dtype -> dense TFLOP/s
    sms: int | None = None  # when set, the entry also needs this SM count (variants sharing a name)


# Most specific first. Sources (dense; "with sparsity" figures halved):
# - V100: NVIDIA Tesla V100 datasheet: SXM2 15.7 FP32 / 125 tensor FP16; PCIe 14 / 112; V100S PCIe 16.4 / 130.
#   The DGX Station's V100-DGXS runs the SXM2 clocks (DGX Station datasheet: 500 tensor TFLOPS for 4 GPUs).
# - A100: NVIDIA A100 datasheet (SXM and PCIe alike): FP32 19.5, TF32 156, BF16 / FP16 312; no FP8.
# - H100 / H200: NVIDIA H100 and H200 datasheets: SXM FP32 67, TF32 494, BF16 / FP16 989, FP8 1979;
#   PCIe (114 SMs) 51 / 378 / 756 / 1513; NVL 60 / 418 / 835 / 1670 (H200 NVL the same as H100 NVL).
# - B200: NVIDIA HGX B200 datasheet, per GPU of 8: FP32 75, TF32 1100, BF16 / FP16 2250, FP8 4500.
# - L4: NVIDIA L4 datasheet: FP32 30.3, TF32 60, BF16 / FP16 121, FP8 242.
# - RTX 30 / 40: NVIDIA Ampere GA102 and Ada AD102 whitepapers, FP32 accumulate: RTX 3090 FP32 35.6, TF32 35.6,
#   BF16 / FP16 71; RTX 3080 29.8 / 29.8 / 59.5; RTX 4090 FP32 82.6, TF32 82.6, BF16 / FP16 165.2, FP8 330.3;
#   RTX 4080 48.7 / 48.7 / 97.5, FP8 194.9.
# - MI250X / MI250: AMD Instinct MI250X / MI250 datasheets: FP32 matrix 95.7 / 90.5 (what MFMA GEMMs reach),
#   BF16 / FP16 383 / 362.1; no TF32, no FP8.
# - MI300X: AMD Instinct MI300X datasheet: FP32 163.4, TF32 653.7, BF16 / FP16 1307.4, FP8 2614.9.
_HOPPER_SXM = {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.0, "fp32": 67.0}
_HOPPER_PCIE = {"bf16": 756.0, "fp16": 756.0, "fp8": 1513.0, "tf32": 378.0, "fp32": 51.0}
_HOPPER_NVL = {"bf16": 835.0, "fp16": 835.0, "fp8": 1670.0, "tf32": 418.0, "fp32": 60.0}
_V100_SXM2 = {"fp16": 125.0, "fp32": 15.7}
PEAK_TABLE: tuple[PeakEntry, ...] = (
    PeakEntry("B200", r"\bB200\b", {"bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0, "tf32": 1100.0, "fp32": 75.0}),
    PeakEntry("H200 NVL", r"H200.*NVL", _HOPPER_NVL),
    PeakEntry("H200 SXM", r"\bH200\b", _HOPPER_SXM),
    PeakEntry("H100 NVL", r"H100.*NVL", _HOPPER_NVL),
    PeakEntry("H100 PCIe", r"H100.*PCIe", _HOPPER_PCIE),
    PeakEntry("H100 PCIe", r"\bH100\b", _HOPPER_PCIE, sms=114),
    PeakEntry("H100 SXM", r"\bH100\b", _HOPPER_SXM),
    PeakEntry("GH200", r"\bGH200\b", _HOPPER_SXM),
    PeakEntry("A100", r"\bA100\b", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    PeakEntry("V100S PCIe", r"V100S", {"fp16": 130.0, "fp32": 16.4}),
    PeakEntry("V100 PCIe", r"V100.*PCIe", {"fp16": 112.0, "fp32": 14.0}),
    PeakEntry("V100 SXM2", r"\bV100", _V100_SXM2),
    PeakEntry("L4", r"\bL4\b", {"bf16": 121.0, "fp16": 121.0, "fp8": 242.0, "tf32": 60.0, "fp32": 30.3}),
    PeakEntry("RTX 4090", r"RTX 4090", {"bf16": 165.2, "fp16": 165.2, "fp8": 330.3, "tf32": 82.6, "fp32": 82.6}),
    PeakEntry("RTX 4080", r"RTX 4080", {"bf16": 97.5, "fp16": 97.5, "fp8": 194.9, "tf32": 48.7, "fp32": 48.7}),
    PeakEntry("RTX 3090", r"RTX 3090", {"bf16": 71.0, "fp16": 71.0, "tf32": 35.6, "fp32": 35.6}),
    PeakEntry("RTX 3080", r"RTX 3080", {"bf16": 59.5, "fp16": 59.5, "tf32": 29.8, "fp32": 29.8}),
    PeakEntry("MI300X", r"MI300X", {"bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9, "tf32": 653.7, "fp32": 163.4}),
    PeakEntry("MI250X", r"MI250X", {"bf16": 383.0, "fp16": 383.0, "fp32": 95.7}),
    PeakEntry("MI250", r"MI250\b", {"bf16": 362.1, "fp16": 362.1, "fp32": 90.5}),
)

# Kernel-name evidence of a dtype, checked in this order (bf16 before fp16: `bf16` holds `f16`).
DTYPE_PATTERNS: tuple[tuple[str, str], ...] = (
    ("fp8", r"(?i)e4m3|e5m2|fp8|f8f8"),
    ("bf16", r"(?i)bf16|bfloat16"),
    ("fp16", r"(?i)fp16|f16f16|half|h884|h1688|h16816|hgemm|hcudnn|_h\d{3,5}gemm"),
    ("tf32", r"(?i)tf32|s1688|s16816|xmma.*f32f32_f32"),
    ("fp32", r"(?i)sgemm|scudnn|float|fp32|f32f32"),
)


# Where the FLOPs are: GEMMs and convolutions. Their names decide the dtype; other kernels only when none ran.
MATMUL_PATTERN = r"(?i)gemm|conv|cudnn|cutlass|xmma|matmul|mma|wgrad|dgrad|fprop"


@dataclass(frozen=True)
class Device:
    name: str
    sms: int | None = None
    compute_capability: tuple[int, int] | None = None

    @property
    def text(self) -> str:
        parts = [self.name]
        if self.sms:
            parts.append(f"{self.sms} SMs")
        if self.compute_capability:
            parts.append(f"sm_{self.compute_capability[0]}{self.compute_capability[1]}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Peak:
    """The peak a page compares throughput with, and everything a label needs to say which it is."""

    value: float | None  # FLOP/s; None: no % of peak
    dtype: str  # the dtype it is for
    dtype_reason: str  # why that dtype ("61% of the kernel time is FP32", "chosen")
    device: Device | None
    entry: str | None  # the PEAK_TABLE product, "set by you" for an override
    why_none: str | None = None  # when value is None: why

    @property
    def short(self) -> str:
        """`V100 SXM2 FP32` (a datasheet peak) or `set by you`: what a chart's peak line is labelled."""
        return "set by you" if self.entry == "set by you" else f"{self.entry} {DTYPE_SHORT[self.dtype]}"

    @property
    def label(self) -> str:
        """`V100 SXM2 FP32 15.7 TFLOP/s (datasheet, dense)` or why there is none."""
        if self.value is None:
            return f"no % of peak: {self.why_none}"
        source = "" if self.entry == "set by you" else " (datasheet, dense)"
        return f"{self.short} {format_flops_rate(self.value)}{source}"


def _entry(device: Device) -> PeakEntry | None:
    name = device.name[:200]  # a trace's text: bounded, so a `.*` in a pattern stays cheap on a hostile name
    for entry in PEAK_TABLE:
        if re.search(entry.pattern, name, re.IGNORECASE) and (entry.sms is None or entry.sms == device.sms):
            return entry
    return None


def peak_flops(device_name: str | None, dtype: str, sms: int | None = None) -> float | None:
    """Peak dense FLOP/s of a device for a dtype, or None when we do not know it."""
    if not device_name:
        return None
    entry = _entry(Device(device_name, sms))
    value = entry.tflops.get(dtype) if entry else None
    return value * 1e12 if value is not None else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _device(raw: Mapping[str, Any]) -> Device:
    sms = _int(raw.get("numSms")) or _int(raw.get("smCount")) or _int(raw.get("multiProcessorCount"))
    major, minor = _int(raw.get("computeMajor")), _int(raw.get("computeMinor"))
    capability = (major, minor or 0) if major is not None else None
    if capability is None and isinstance(raw.get("computeCapability"), str):
        found = re.match(r"(\d+)\.(\d+)", raw["computeCapability"])
        capability = (int(found.group(1)), int(found.group(2))) if found else None
    return Device(raw["name"], sms, capability)


def _devices_in(value: Any) -> Iterable[Device]:
    """Devices anywhere in run metadata: kineto `deviceProperties`, nsys `gpus`, or a `devices` list."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in ("deviceProperties", "gpus", "devices") and isinstance(item, list):
                for device in item:
                    named = isinstance(device, Mapping) and isinstance(device.get("name"), str)
                    if named and device.get("active", True):  # nsys lists idle GPUs too
                        yield _device(device)
            else:
                yield from _devices_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _devices_in(item)


def run_device(metadata: Mapping[str, Any]) -> Device | None:
    """The GPU the run ran on, when its metadata says (the first one named)."""
    return next(iter(_devices_in(metadata)), None)


def device_name(metadata: Mapping[str, Any]) -> str | None:
    device = run_device(metadata)
    return device.name if device else None


def kernel_dtype(kernel_time: pl.DataFrame) -> tuple[str | None, float]:
    """(the dtype most GEMM / convolution time is in, its share of the time whose dtype the names tell) from
    `kernel_time` (name, time_ns; all kernels when none is a GEMM or convolution); (None, 0) when no kernel
    name tells a dtype."""
    if kernel_time.height == 0:
        return None, 0.0
    matmuls = kernel_time.filter(pl.col("name").str.contains(MATMUL_PATTERN))
    kernel_time = matmuls if matmuls.height else kernel_time
    dtype: pl.Expr = pl.lit(None, pl.String)
    for name, pattern in reversed(DTYPE_PATTERNS):
        dtype = pl.when(pl.col("name").str.contains(pattern)).then(pl.lit(name)).otherwise(dtype)
    per = kernel_time.with_columns(dtype.alias("dtype")).drop_nulls("dtype").group_by("dtype").agg(
        pl.col("time_ns").sum()).sort("time_ns", "dtype", descending=[True, False])
    total = per.get_column("time_ns").sum()
    if per.height == 0 or not total:
        return None, 0.0
    return per.item(0, "dtype"), per.item(0, "time_ns") / total


def _default_dtype(device: Device | None) -> str:
    """Without kernel evidence: what the device's tensor cores take first (FP32 before Volta)."""
    if device and device.compute_capability and device.compute_capability < (7, 0):
        return "fp32"
    if device and device.compute_capability and device.compute_capability < (8, 0):
        return "fp16"
    return "bf16"


def choose_peak(metadata: Mapping[str, Any], kernel_time: pl.DataFrame, dtype: str = AUTO,
                override_tflops: float | None = None) -> Peak:
    """The peak to compare with: the user's own (`override_tflops`), else the device's for `dtype` (AUTO: the
    dtype the kernels compute in, see kernel_dtype)."""
    device = run_device(metadata)
    if dtype == AUTO:
        found, share = kernel_dtype(kernel_time)
        chosen = found or _default_dtype(device)
        reason = (f"{share:.0%} of the GEMM / convolution time is {DTYPE_SHORT[chosen]} (kernel names)" if found
                  else f"no kernel name tells its dtype: {DTYPE_SHORT[chosen]}, the device's first tensor-core type")
    else:
        chosen, reason = dtype, "chosen"
    if override_tflops is not None and override_tflops > 0:
        return Peak(override_tflops * 1e12, chosen, reason, device, "set by you")
    if device is None:
        return Peak(None, chosen, reason, None, None, "the trace names no GPU (no deviceProperties); set the peak "
                                                      "to compare with")
    entry = _entry(device)
    if entry is None:
        return Peak(None, chosen, reason, device, None, f"{device.name} is not in the peak table; set its peak")
    value = entry.tflops.get(chosen)
    if value is None:
        return Peak(None, chosen, reason, device, entry.label,
                    f"{entry.label} has no {DTYPE_SHORT[chosen]} peak (no such tensor cores)")
    return Peak(value * 1e12, chosen, reason, device, entry.label)
