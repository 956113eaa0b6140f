"""/compiler in a real browser on the demo's compiler run: pick a step, read its diff, map Python to IR."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from dashboard.store import RunStore
from tests.support.native_select import choose


@pytest.fixture(autouse=True)
def patient_expect() -> Iterator[None]:
    expect.set_options(timeout=20_000)
    yield
    expect.set_options(timeout=5_000)


def demo_compiler(server) -> str:
    """The demo's compiler run by name: other tests add runs of their own to the shared server, and /compiler
    opens the newest run with compiler evidence when the address names none."""
    runs = [info.id for info in RunStore(server.data_dir).list_runs() if info.name == "demo-compiler"]
    assert runs, "the demo has no demo-compiler run"
    return runs[0]


def query(page: Page) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}


def test_step_diff_and_python_lines_across_stages(page: Page, server, console_errors: list[str]) -> None:
    # Compile #0 of the demo is add_kernel with BLOCK 1024 (real Triton or the generated log alike).
    page.goto(f"{server.url}/compiler?run={demo_compiler(server)}&compile=0")
    expect(page.locator("#compiler-ir .code-line").first).to_be_visible(timeout=60_000)
    expect(page.locator("#compiler-pass-chart g.trace.bars g.point").first).to_be_visible()

    # Pick the first TTGIR step: its IR was rewritten by ConvertTritonToTritonGPU.
    choose(page.locator("#compiler-step"), re.compile(r"· ttgir · before TritonGPUCoalesce"))
    expect(page).to_have_url(re.compile(r"step=[1-9]\d*"))  # the page starts at step 0
    step = int(query(page)["step"])
    expect(page.locator("#compiler-diff-note")).to_contain_text(
        re.compile(rf"#0 step {step - 1} \(ConvertTritonToTritonGPU\) → #0 step {step} \(TritonGPUCoalesce\)"))
    expect(page.locator("#compiler-diff .d-add").first).to_be_visible()
    expect(page.locator("#compiler-diff .d-del").first).to_be_visible()

    # Click the Python line that loads x: its IR lines light up here and in every stage.
    load = page.locator("#compiler-python [data-py-line]", has_text="tl.load(x_ptr").first
    py_line = load.get_attribute("data-py-line")
    load.click()
    expect(page).to_have_url(re.compile(rf"pyline={py_line}(&|$)"))
    expect(load).to_have_class(re.compile(r"\bhl\b"))
    expect(page.locator("#compiler-ir .code-line.hl").first).to_be_visible()
    stages = page.locator("#compiler-stages .ir-excerpt:has(.code-line.hl)")
    expect(stages.nth(1)).to_be_visible()
    lit_stages = set(stages.evaluate_all("els => els.map(e => e.dataset.stage)"))
    assert len(lit_stages) >= 2 and "ttir" in lit_stages

    # Click a lit IR line of another stage: it maps back to the same Python line.
    page.locator("#compiler-stages .ir-excerpt[data-stage=ttir] .code-line.hl").first.click()
    expect(page.locator("#compiler-stages-note")).to_contain_text(f"Python line {py_line}")

    # The address restores the whole view.
    page.goto(page.url)
    expect(page.locator("#compiler-step")).to_contain_text("TritonGPUCoalesce")
    expect(page.locator(f"#compiler-python [data-py-line='{py_line}']")).to_have_class(re.compile(r"\bhl\b"))
    expect(page.locator("#compiler-stages .ir-excerpt:has(.code-line.hl)").nth(1)).to_be_visible()
    expect(page.locator("#compiler-diff .d-add").first).to_be_visible()
    assert console_errors == []


def test_compare_the_same_pass_of_two_compiles(page: Page, server, console_errors: list[str]) -> None:
    page.goto(f"{server.url}/compiler?run={demo_compiler(server)}&compile=0&step=2")
    expect(page.locator("#compiler-ir .code-line").first).to_be_visible(timeout=60_000)
    choose(page.locator("#compiler-compare"), re.compile(r"same pass in #1 add_kernel"))
    expect(page).to_have_url(re.compile(r"cmp=1%3A2(&|$)"))
    expect(page.locator("#compiler-diff-note")).to_contain_text("#1 step 2")
    expect(page.locator("#compiler-diff")).to_contain_text("2048")  # BLOCK 2048 against 1024
    page.get_by_text("side by side").click()
    expect(page.locator("#compiler-diff .ir-side .side-row").first).to_be_visible()
    expect(page).to_have_url(re.compile(r"view=side"))
    assert console_errors == []


def test_a_step_change_replaces_the_code_the_page_was_drawn_with(page: Page, server,
                                                                 console_errors: list[str]) -> None:
    # The panels come with the layout (HtmlPanel, tests/test_initial_layout.py) and their stores start
    # empty: the panel callback must leave that code in place, then write each later step's over it.
    page.goto(f"{server.url}/compiler?run={demo_compiler(server)}&compile=0")
    expect(page.locator("#compiler-ir .code-line").first).to_be_visible(timeout=60_000)
    first = page.locator("#compiler-ir").inner_text()
    choose(page.locator("#compiler-step"), re.compile(r"· ttgir · before TritonGPUCoalesce"))
    expect(page).to_have_url(re.compile(r"step=[1-9]\d*"))
    expect(page.locator("#compiler-ir")).not_to_have_text(first, use_inner_text=True)
    expect(page.locator("#compiler-ir")).to_contain_text("ttg.")  # the TTGIR step's lines
    assert console_errors == []
