"""Tests that need real Triton: its compiler output, which the demo's compiler run also comes from.

Without Triton the demo writes a small generated log of add_kernel (`dashboard.demo.triton_ir_text`),
which has no pass that grows the IR within a stage, so no IR-growth finding to follow.
"""

from __future__ import annotations

import importlib.util

import pytest

# find_spec, not importorskip: importing Triton in the test process would only print nanobind leak
# reports at exit; it runs in child processes.
TRITON_INSTALLED = importlib.util.find_spec("triton") is not None

requires_triton = pytest.mark.skipif(not TRITON_INSTALLED, reason="Triton is not installed")
requires_triton_demo = pytest.mark.skipif(
    not TRITON_INSTALLED,
    reason="Triton is not installed: the demo's compiler run is a generated log without an IR-growth finding")
