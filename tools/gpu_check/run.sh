#!/usr/bin/env bash
# The device check: our live CUPTI capture against the PyTorch profiler on this machine's GPU.
#
#   bash tools/gpu_check/run.sh               # results in $OUT (default ./gpu-check-out)
#   bash tools/gpu_check/run.sh --dry-run     # the stages and the carried size; runs nothing
#   bash tools/gpu_check/run.sh --steps 30    # any option of tools/gpu_check/check.py
#
# Installs the wheels tools/gpu_check/prepare.sh downloaded (only those this Python lacks) into
# /tmp/gpu-check/site-packages, points LD_LIBRARY_PATH at nvidia-cuda-cupti's libcupti when it finds
# one, then runs check.py with its output also in $OUT/check.log. The exit status is check.py's:
# 0 when every check passed. PYTHON picks the interpreter (default python3).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo" || exit 2
py=${PYTHON:-python3}
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"

if [[ "${1:-}" == "--dry-run" ]]; then
    exec "$py" tools/gpu_check/check.py "$@"
fi

if [[ -n "${OUT:-}" ]]; then
    # A device tool's $OUT comes back file by file: runs and scratch stay outside it.
    work=${GPU_CHECK_WORK:-$(mktemp -d /tmp/gpu-check-work.XXXXXX)}
else
    OUT="$repo/gpu-check-out"
    work=${GPU_CHECK_WORK:-$OUT/work}
fi
mkdir -p "$OUT"
site=/tmp/gpu-check/site-packages

{
    started=$(date +%s)
    if compgen -G "tools/gpu_check/wheels/*.whl" >/dev/null; then
        "$py" tools/gpu_check/wheels.py install tools/gpu_check/wheels "$site" \
            || echo "run.sh: installing the carried wheels failed; going on with what is installed"
    fi
    export PYTHONPATH="$site:$PYTHONPATH"
    if cupti_lib=$("$py" tools/gpu_check/wheels.py cupti-lib 2>/dev/null); then
        export LD_LIBRARY_PATH="$cupti_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    echo "run.sh: set-up took $(( $(date +%s) - started )) s; libcupti: ${cupti_lib:-not found}"
    "$py" tools/gpu_check/check.py --out "$OUT" --work "$work" "$@"
} 2>&1 | tee "$OUT/check.log"
exit "${PIPESTATUS[0]}"
