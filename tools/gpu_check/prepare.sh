#!/usr/bin/env bash
# Prepares what travels to a GPU machine that has no network: the wheels the device check needs and
# the machine lacks, for its Python (3.12, x86-64 manylinux), in tools/gpu_check/wheels/ (git-ignored;
# name it in the device tool's `carry`). Prints the size of everything carried; fails over 60 MiB.
#
#   bash tools/gpu_check/prepare.sh
#
# The device has torch (with nvidia-cuda-cupti and cuda-bindings), numpy, pyarrow and click. It lacks:
#   polars 1.30.0   the oldest polars pyproject allows, one 36 MB abi3 wheel (2.x needs a 54 MB runtime);
#                   capture and the kineto / snapshot / Triton ingests give the same tables on it
#   msgspec, lark   the trace decoder and the DOT grammar every ingest loads
#   cupti-python    the same CUDA minor as the device's libcupti: torch 2.11 cu130 brings
#                   nvidia-cuda-cupti 13.0.x, so 13.0.1 (its records are laid out as that libcupti
#                   writes them; 13.4 also wants a newer libcupti and 5 MB more)
# GPU_CHECK_PYTHON_VERSION and GPU_CHECK_CUPTI change the Python and the cupti-python pin.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
dest=tools/gpu_check/wheels
python_version=${GPU_CHECK_PYTHON_VERSION:-3.12}
wheels=("polars==1.30.0" "msgspec==0.22.0" "lark==1.3.1" "${GPU_CHECK_CUPTI:-cupti-python==13.0.1}")

rm -rf "$dest"
mkdir -p "$dest"
for wheel in "${wheels[@]}"; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$python_version" \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d "$dest" "$wheel"
done
ls -l "$dest"
python3 tools/gpu_check/carried.py --limit-mib 60
