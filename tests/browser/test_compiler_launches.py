"""/compiler's launches section in a real browser: a tritonparse trace's launches per compile and the
autotuner's verdict, following the compile picked in the page."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support.fuzz_shapes import tritonparse_records
from tests.support.native_select import choose


@pytest.fixture(autouse=True)
def patient_expect() -> Iterator[None]:
    expect.set_options(timeout=20_000)
    yield
    expect.set_options(timeout=5_000)


def test_launches_and_the_autotune_winner_follow_the_compile(page: Page, server, console_errors: list[str],
                                                             tmp_path: Path) -> None:
    trace = tmp_path / "dedicated_log_triton_trace_x.ndjson"
    trace.write_bytes(tritonparse_records())  # add_kernel: compile 0 (BLOCK 256) 3 launches, compile 1 4 launches
    done = subprocess.run([sys.executable, "-m", "dashboard.app", "ingest", str(trace), "--name", "tp-launches",
                           "--data", str(server.data_dir)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip().splitlines()[-1]
    page.goto(f"{server.url}/compiler?run={run_id}&compile=1")
    section = page.locator("#compiler-launches")
    expect(section).to_contain_text("This compile ran 4 times")
    expect(section.locator("tbody tr").first).to_contain_text("(4, 1, 1)")
    expect(section).to_contain_text("x_ptr: float32[4096] cuda:0, n: int = 4096")
    chosen = section.locator("tr.table-success")
    expect(chosen).to_have_count(1)
    expect(chosen).to_contain_text(re.compile(r"BLOCK: 1024, num_warps: 8.*0\.012.*chosen"))
    choose(page.locator("#compiler-compile"), re.compile(r"^#0 add_kernel"))
    expect(section).to_contain_text("This compile ran 3 times")
    expect(section.locator("tbody tr").first).to_contain_text("(16, 1, 1)")
    assert console_errors == []
