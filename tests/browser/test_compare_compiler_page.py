"""/compare on two compiler runs in a real browser: the first differing pass, its diff, a pass picked in the URL.

Its own server over a data folder holding only compile logs written here (BLOCK 1024, BLOCK 2048, and BLOCK 1024
with one more pass).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.browser.conftest import Server, start_server
from tests.collectors.triton_ir_fixtures import compile_log, with_extra_pass
from tests.support.native_select import choose


@pytest.fixture(scope="module")
def compiler_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("compare-compiler")
    store = RunStore(root / "data")
    ids = {}
    for name, text in (("small", compile_log("add_kernel", 1024)), ("large", compile_log("add_kernel", 2048)),
                       ("extra", with_extra_pass("add_kernel", 1024))):
        (root / f"{name}.txt").write_text(text)
        ids[name] = ingest_paths(store, [root / f"{name}.txt"], name=f"compile-{name}")
    running = start_server(root / "data", root / "server.log")
    running.extra.update(ids)
    yield running
    running.stop()


def test_first_differing_pass_and_its_diff(page: Page, compiler_server, console_errors) -> None:
    small, large = compiler_server.extra["small"], compiler_server.extra["large"]
    page.goto(f"{compiler_server.url}/compare?run={small}&other={large}")
    first = page.locator("#compare-compiler-first")
    expect(first).to_contain_text("First pass where the IR differs: InlinerPass", timeout=20_000)
    expect(first).to_contain_text("step 0 of A and step 0 of B")
    diff = page.locator("#compare-compiler-diff")
    expect(diff).to_contain_text("tensor<2048xi32>")
    expect(diff).to_contain_text("tensor<1024xi32>")
    expect(page.locator("#compare-compiler-diff-note")).to_contain_text("−3 / +3 lines")
    expect(page.locator("#compare-compiler-passes tbody tr")).to_have_count(9)
    expect(page.locator("#compare-kernel-section")).to_be_hidden()  # no kernels on either side
    # Another pass: the LLVM-dialect canonicalize, whose IR is the same on both sides; kept in the URL.
    choose(page.locator("#compare-ir-pass"), "8 · llvm-mlir · CanonicalizerPass")
    note = page.locator("#compare-compiler-diff-note")
    expect(note).to_contain_text("−0 / +0 lines")
    expect(page).to_have_url(re.compile(r"ir_pass=8"))
    page.reload()
    expect(note).to_contain_text("−0 / +0 lines", timeout=20_000)
    expect(page.locator("#compare-compiler-diff")).to_contain_text("(no difference)")
    assert console_errors == []


def test_a_pass_on_one_side_only(page: Page, compiler_server, console_errors) -> None:
    small, extra = compiler_server.extra["small"], compiler_server.extra["extra"]
    page.goto(f"{compiler_server.url}/compare?run={small}&other={extra}")
    expect(page.locator("#compare-compiler-summary")).to_contain_text("only in B: LoopUnrollPass", timeout=20_000)
    expect(page.locator("#compare-compiler-first")).to_contain_text("The IR is the same at every pass")
    only_b = page.locator("#compare-compiler-passes tbody tr.table-success")
    expect(only_b).to_have_count(1)
    expect(only_b).to_contain_text("LoopUnrollPass")
    assert console_errors == []
