"""Peak FLOP/s from the trace's device and the kernels' dtype: the table, the dtype evidence, the reasons."""

from __future__ import annotations

import polars as pl
import pytest

from dashboard.analysis.gpu_peak_flops import AUTO, choose_peak, kernel_dtype, peak_flops, run_device


def _meta(name: str, **extra: object) -> dict:
    return {"kineto": {"files": [{"rank": 0, "deviceProperties": [{"id": 0, "name": name, **extra}]}]}}


def _kernels(*rows: tuple[str, int]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"name": pl.String, "time_ns": pl.Int64}, orient="row")


@pytest.mark.parametrize(("device", "sms", "dtype", "tflops"), [
    ("Tesla V100-SXM2-16GB", 80, "fp32", 15.7), ("Tesla V100-DGXS-32GB", 80, "fp16", 125.0),
    ("Tesla V100-PCIE-32GB", 80, "fp32", 14.0), ("Tesla V100S-PCIE-32GB", 80, "fp16", 130.0),
    ("NVIDIA A100-SXM4-80GB", 108, "tf32", 156.0), ("NVIDIA A100-PCIE-40GB", 108, "bf16", 312.0),
    ("NVIDIA H100 80GB HBM3", 132, "fp8", 1979.0), ("NVIDIA H100 PCIe", 114, "bf16", 756.0),
    ("NVIDIA H100", 114, "tf32", 378.0),  # a bare name: the SM count tells the PCIe card
    ("NVIDIA H100 NVL", 132, "bf16", 835.0), ("NVIDIA H200", 132, "bf16", 989.0),
    ("NVIDIA H200 NVL", 132, "fp8", 1670.0), ("NVIDIA B200", 148, "fp8", 4500.0), ("NVIDIA B200", 148, "fp32", 75.0),
    ("NVIDIA L4", 58, "fp16", 121.0), ("NVIDIA GeForce RTX 3090", 82, "tf32", 35.6),
    ("NVIDIA GeForce RTX 3080", 68, "bf16", 59.5), ("NVIDIA GeForce RTX 4090", 128, "fp8", 330.3),
    ("NVIDIA GeForce RTX 4080", 76, "fp32", 48.7), ("AMD Instinct MI250X", 220, "bf16", 383.0),
    ("AMD Instinct MI250", 208, "fp16", 362.1), ("AMD Instinct MI300X", 304, "fp8", 2614.9),
])
def test_the_table_names_every_listed_gpu(device: str, sms: int, dtype: str, tflops: float) -> None:
    assert peak_flops(device, dtype, sms) == pytest.approx(tflops * 1e12)


def test_what_a_device_lacks_is_unknown_not_zero() -> None:
    assert peak_flops("NVIDIA A100-SXM4-80GB", "fp8") is None
    assert peak_flops("Tesla V100-SXM2-16GB", "bf16") is None
    assert peak_flops("NVIDIA L40S", "bf16") is None  # not the L4
    assert peak_flops("AMD Instinct MI250X", "tf32") is None


def test_device_properties_give_name_sms_and_compute_capability() -> None:
    device = run_device(_meta("Tesla V100-DGXS-32GB", numSms=80, computeMajor=7, computeMinor=0))
    assert device is not None and device.text == "Tesla V100-DGXS-32GB, 80 SMs, sm_70"


def test_kernel_names_tell_the_dtype_by_gemm_and_conv_time() -> None:
    resnet = _kernels(("volta_sgemm_128x64_nn", 150), ("volta_scudnn_128x64_relu_interior_nn_v1", 500),
                      ("void at::native::vectorized_elementwise_kernel<4, c10::Half>", 900))
    assert kernel_dtype(resnet) == ("fp32", 1.0)  # the elementwise kernel is no GEMM: it does not vote
    mixed = _kernels(("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", 700), ("volta_sgemm_128x64_nn", 300))
    assert kernel_dtype(mixed) == ("bf16", 0.7)
    assert kernel_dtype(_kernels(("volta_h884cudnn_256x64_sliced1x2_ldg8_relu", 10))) == ("fp16", 1.0)
    assert kernel_dtype(_kernels(("my_kernel", 10))) == (None, 0.0)


def test_a_v100_fp32_trace_compares_with_fp32_not_bf16() -> None:
    """The 2021 ResNet-50 on a V100-DGXS: once compared with an A100's BF16 312 TFLOP/s."""
    metadata = _meta("Tesla V100-DGXS-32GB", numSms=80, computeMajor=7, computeMinor=0)
    peak = choose_peak(metadata, _kernels(("volta_sgemm_128x64_nn", 150), ("volta_scudnn_128x64", 500)))
    assert (peak.value, peak.dtype, peak.entry) == (15.7e12, "fp32", "V100 SXM2")
    assert peak.label == "V100 SXM2 FP32 15.7 TFLOP/s (datasheet, dense)"
    assert peak.dtype_reason == "100% of the GEMM / convolution time is FP32 (kernel names)"
    # Chosen by hand: FP16 tensor cores.
    assert choose_peak(metadata, _kernels(), "fp16").value == 125e12


def test_no_kernel_evidence_takes_the_devices_first_tensor_core_dtype() -> None:
    volta = choose_peak(_meta("Tesla V100-SXM2-16GB", computeMajor=7, computeMinor=0), _kernels(("k", 1)))
    assert (volta.dtype, volta.value) == ("fp16", 125e12)
    hopper = choose_peak(_meta("NVIDIA H100 80GB HBM3", numSms=132, computeMajor=9), _kernels())
    assert (hopper.dtype, hopper.value) == ("bf16", 989e12)


def test_an_unknown_device_gives_no_percent_of_peak_and_says_why() -> None:
    unknown = choose_peak(_meta("NVIDIA GeForce GTX 1080"), _kernels(), AUTO)
    assert unknown.value is None and unknown.label == ("no % of peak: NVIDIA GeForce GTX 1080 is not in the peak "
                                                       "table; set its peak")
    nothing = choose_peak({}, _kernels())
    assert nothing.value is None and "names no GPU" in nothing.label
    lacking = choose_peak(_meta("NVIDIA A100-SXM4-80GB"), _kernels(), "fp8")
    assert lacking.label == "no % of peak: A100 has no FP8 peak (no such tensor cores)"


def test_the_users_own_peak_wins() -> None:
    mine = choose_peak(_meta("NVIDIA GeForce GTX 1080"), _kernels(), AUTO, override_tflops=8.9)
    assert (mine.value, mine.label) == (8.9e12, "set by you 8.9 TFLOP/s")
