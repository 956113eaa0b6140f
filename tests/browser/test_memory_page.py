"""/memory in a real browser: brushing, clicking, op types, zoom detail, URL restore, table and CSV."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import polars as pl
import pytest
from playwright.sync_api import Page, expect

from dashboard.analysis.memory import peaks
from dashboard.demo import tt_memory_log
from dashboard.ingest.pipeline import ingest_paths
from dashboard.store import RunStore
from tests.support.settled_click import click_centre

GRAPH = "#memory-curves .js-plotly-plot"
TRACKS = 4  # DRAM, L1, L1_SMALL and fragmentation (the demo has no TRACE region)


@pytest.fixture(scope="module")
def run_id(server, tmp_path_factory: pytest.TempPathFactory) -> str:
    sources = tt_memory_log.write(tmp_path_factory.mktemp("memory-sources"))
    return ingest_paths(RunStore(server.data_dir), sources, name="memory-page")


@pytest.fixture(scope="module")
def ops(server, run_id: str) -> pl.DataFrame:
    """One row per op of the run: op_index, op_type, mlir_op (what the page should name)."""
    run = RunStore(server.data_dir).open(run_id)
    return run.frame("op_memory").filter(pl.col("buffer_type") == "DRAM").select("op_index", "op_type", "mlir_op")


def query(page: Page) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}


def open_memory(page: Page, server, run_id: str, **params: str) -> None:
    extra = "".join(f"&{key}={value}" for key, value in params.items())
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{server.url}/memory?run={run_id}{extra}")
    expect(page.locator(f"{GRAPH} .main-svg").first).to_be_visible(timeout=20_000)
    expect(page.locator("#memory-table .ag-row").first).to_be_visible(timeout=15_000)
    page.wait_for_load_state("networkidle")
    # The responsive graph resizes itself once after the first draw; its relayout event goes to the
    # server too. Acting before it settles races it (Dash sends only the latest relayoutData).
    page.wait_for_function(f"() => {{ const p = document.querySelector('{GRAPH}'); "
                           "return Math.abs(p._fullLayout.width - p.getBoundingClientRect().width) < 2; }")
    page.wait_for_timeout(400)
    page.wait_for_load_state("networkidle")


def plot(page: Page, expression: str):
    """Evaluate `expression` with `p` bound to the curves' plotly element."""
    return page.evaluate(f"() => {{ const p = document.querySelector('{GRAPH}'); return {expression}; }}")


def highlighted(page: Page) -> list[list[int]]:
    return plot(page, "p._fullData.filter(t => t.name === 'highlighted ops').map(t => Array.from(t.x || []))")


def first_row_op(page: Page) -> int:
    cell = page.locator("#memory-table .ag-center-cols-container .ag-row[row-index='0']")
    expect(cell).to_be_visible()
    return int(page.locator("#memory-table .ag-pinned-left-cols-container .ag-row[row-index='0'] "
                            "[col-id='op_index']").inner_text())


def test_brushing_a_range_filters_the_table_and_statistics(page: Page, server, run_id: str,
                                                           console_errors: list[str]) -> None:
    open_memory(page, server, run_id)
    expect(page.locator("#memory-stats-title")).to_have_text("Whole run")
    before = page.locator("#memory-table-count").inner_text()
    drag = page.locator(f"{GRAPH} .nsewdrag[data-subplot='xy']").first.bounding_box()
    assert drag is not None
    y = drag["y"] + drag["height"] * 0.5
    page.mouse.move(drag["x"] + drag["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(drag["x"] + drag["width"] * 0.5, y, steps=6)
    page.mouse.up()
    expect(page).to_have_url(re.compile(r"ops=\d+-\d+"), timeout=15_000)
    start, end = (int(v) for v in query(page)["ops"].split("-"))
    assert 0 < start < end
    expect(page.locator("#memory-stats-title")).to_have_text(f"Ops {start:,}–{end:,}")
    expect(page.locator("#memory-table-count")).to_contain_text(f"ops {start:,}–{end:,}")
    assert page.locator("#memory-table-count").inner_text() != before
    expect(page.locator("#memory-range-text")).to_have_text(f"ops {start:,}–{end:,}")
    page.wait_for_load_state("networkidle")
    assert start <= first_row_op(page) <= end
    # The brushed band is drawn on every track, and the growth bars only name ops in the range.
    bands = plot(page, f"p.layout.shapes.filter(s => s.type === 'rect' && s.x0 === {start - 0.5}).length")
    assert bands == TRACKS
    growth_ops = page.evaluate("() => document.querySelector('#memory-growth .js-plotly-plot')._fullData"
                               ".flatMap(t => Array.from(t.customdata || []).map(c => c[0]))")
    assert growth_ops and all(start <= op <= end for op in growth_ops)
    page.locator("#memory-range-clear").click()
    expect(page).not_to_have_url(re.compile(r"ops="), timeout=15_000)
    expect(page.locator("#memory-stats-title")).to_have_text("Whole run")
    assert console_errors == []


def test_clicking_an_op_opens_its_detail_and_marks_it(page: Page, server, run_id: str, ops: pl.DataFrame,
                                                      console_errors: list[str]) -> None:
    open_memory(page, server, run_id)
    target = 120
    where = plot(page, f"""(() => {{
        const t = p._fullData[0], i = Array.from(t.x).indexOf({target});
        const xa = p._fullLayout.xaxis, ya = p._fullLayout.yaxis, box = p.getBoundingClientRect();
        return {{x: box.left + xa._offset + xa.l2p({target}), y: box.top + ya._offset + ya.l2p(t.y[i])}};
    }})()""")
    page.mouse.move(where["x"], where["y"])
    page.mouse.click(where["x"], where["y"])
    expect(page).to_have_url(re.compile(rf"op={target}\b"), timeout=15_000)
    mlir_op = ops.filter(pl.col("op_index") == target)["mlir_op"][0]
    expect(page.locator("#memory-detail-op")).to_have_text(mlir_op)
    expect(page.locator("#memory-detail")).to_contain_text("output shapes")
    lines = plot(page, f"p.layout.shapes.filter(s => s.type === 'line' && s.x0 === {target} "
                       f"&& s.x1 === {target}).length")
    assert lines == TRACKS  # the selected op is marked on every track
    page.locator("#memory-op-clear").click()
    expect(page).not_to_have_url(re.compile(r"[?&]op="), timeout=15_000)
    # A peak card's button opens the op that allocated the peak (op i-1 of the peak snapshot i).
    run = RunStore(server.data_dir).open(run_id)
    culprit = peaks(run.frame("op_memory")).filter(pl.col("buffer_type") == "L1")["culprit_op_index"][0]
    page.locator("#memory-peak-cards .memory-peak-card").nth(1).locator("button").click()
    expect(page).to_have_url(re.compile(rf"op={culprit}\b"), timeout=15_000)
    expect(page.locator("#memory-detail-op")).to_have_text(ops.filter(pl.col("op_index") == culprit)["mlir_op"][0])
    assert console_errors == []


def test_selecting_an_op_type_highlights_its_ops(page: Page, server, run_id: str, ops: pl.DataFrame,
                                                 console_errors: list[str]) -> None:
    open_memory(page, server, run_id)
    assert all(len(x) == 0 for x in highlighted(page))
    page.locator("#memory-optype-summary").click()  # opens the checklist
    page.locator("#memory-optype label", has_text=re.compile(r"^MatmulOp \(")).click()
    expect(page.locator("#memory-optype-summary")).to_have_text(re.compile(r"^MatmulOp \("))
    page.locator("#memory-optype-summary").click()  # and closes it
    expect(page).to_have_url(re.compile(r"optype=MatmulOp"), timeout=15_000)
    matmuls = set(ops.filter(pl.col("op_type") == "MatmulOp")["op_index"])
    page.wait_for_function(f"() => document.querySelector('{GRAPH}')._fullData"
                           ".some(t => t.name === 'highlighted ops' && t.x && t.x.length > 0)")
    marked = highlighted(page)
    assert len(marked) == TRACKS - 1 and all(set(x) == matmuls for x in marked)
    expect(page.locator("#memory-table-count")).to_have_text(f"{len(matmuls)} ops · type MatmulOp")
    # Clicking a growth bar picks its op and its op type.
    bar = page.locator("#memory-growth .bars .point path").first
    click_centre(page, bar)
    expect(page).to_have_url(re.compile(r"[?&]op=\d+"), timeout=15_000)
    picked = int(query(page)["op"])
    op_type = ops.filter(pl.col("op_index") == picked)["op_type"][0]
    assert query(page)["optype"] == op_type
    expect(page.locator("#memory-optype-summary")).to_contain_text(op_type)
    expect(page.locator("#memory-optype input:checked")).to_have_count(1)
    assert console_errors == []


def test_a_url_with_state_restores_the_view(page: Page, server, run_id: str, ops: pl.DataFrame,
                                           console_errors: list[str]) -> None:
    open_memory(page, server, run_id, ops="100-150", op="120", optype="LinearOp", unit="device",
                peaks="profiler")
    expect(page.locator("#memory-stats-title")).to_have_text("Ops 100–150")
    expect(page.locator("#memory-range-chip")).to_be_visible()
    expect(page.locator("#memory-detail-op")).to_have_text(ops.filter(pl.col("op_index") == 120)["mlir_op"][0])
    expect(page.locator("#memory-unit input[value='device']")).to_be_checked()
    expect(page.locator("#memory-peaks input[value='profiler']")).to_be_checked()
    assert plot(page, "p.layout.yaxis.title.text") == "GiB (device)"
    linears = set(ops.filter(pl.col("op_type") == "LinearOp")["op_index"])
    marked = highlighted(page)
    assert marked and all(x and set(x) == linears for x in marked)
    assert plot(page, "p.layout.shapes.filter(s => s.type === 'rect' && s.x0 === 99.5).length") == TRACKS
    expect(page.locator("#memory-table-count")).to_have_text(re.compile(r"^\d+ ops · ops 100–150 · type LinearOp$"))
    assert 100 <= first_row_op(page) <= 150
    # The profiler's view skips the snapshot before the deallocate that holds the true L1 peak.
    expect(page.locator("#memory-peak-cards")).not_to_contain_text("ttnn.deallocate")
    assert query(page) == {"run": run_id, "ops": "100-150", "op": "120", "optype": "LinearOp", "unit": "device",
                           "peaks": "profiler"}
    assert console_errors == []


def test_zooming_shows_every_op_and_units_toggle(page: Page, server, run_id: str,
                                                 console_errors: list[str]) -> None:
    open_memory(page, server, run_id)
    page.evaluate(f"() => Plotly.relayout(document.querySelector('{GRAPH}'), "
                  "{'xaxis.range[0]': 99.6, 'xaxis.range[1]': 140.2})")
    expect(page).to_have_url(re.compile(r"ops=100-140"), timeout=15_000)
    page.wait_for_function(f"() => document.querySelector('{GRAPH}')._fullData[0].x.length < 50")
    assert plot(page, "Array.from(p._fullData[0].x)") == list(range(99, 142))  # the window at full detail
    assert plot(page, "p._fullLayout.xaxis.range") == [99.6, 140.2]  # the zoom is kept
    page.locator("#memory-unit label:has-text('device total')").click()
    expect(page).to_have_url(re.compile(r"unit=device"), timeout=15_000)
    page.wait_for_function(f"() => document.querySelector('{GRAPH}').layout.yaxis.title.text === 'GiB (device)'")
    assert plot(page, "Array.from(p._fullData[0].x)") == list(range(99, 142))
    # Clearing the range with the button hands the axes back to the whole run too.
    page.locator("#memory-range-clear").click()
    expect(page).not_to_have_url(re.compile(r"ops="), timeout=15_000)
    page.wait_for_function(f"() => document.querySelector('{GRAPH}')._fullData[0].x.length > 300")
    page.wait_for_function(f"() => document.querySelector('{GRAPH}')._fullLayout.xaxis.range[1] > 300")
    # A double-click (autorange) after a zoom does the same.
    page.evaluate(f"() => Plotly.relayout(document.querySelector('{GRAPH}'), "
                  "{'xaxis.range[0]': 200, 'xaxis.range[1]': 240})")
    expect(page).to_have_url(re.compile(r"ops=200-240"), timeout=15_000)
    page.wait_for_function(f"() => document.querySelector('{GRAPH}')._fullData[0].x.length < 50")
    page.evaluate(f"() => Plotly.relayout(document.querySelector('{GRAPH}'), {{'xaxis.autorange': true}})")
    expect(page).not_to_have_url(re.compile(r"ops="), timeout=15_000)
    page.wait_for_function(f"() => document.querySelector('{GRAPH}')._fullData[0].x.length > 300")
    assert console_errors == []


def test_table_click_and_csv_download(page: Page, server, run_id: str, ops: pl.DataFrame,
                                      console_errors: list[str]) -> None:
    open_memory(page, server, run_id, ops="200-260")
    cell = page.locator("#memory-table .ag-center-cols-container .ag-row[row-index='3'] [col-id='mlir_op']")
    name = cell.inner_text()
    cell.click()
    expect(page).to_have_url(re.compile(r"[?&]op=\d+"), timeout=15_000)
    picked = int(query(page)["op"])
    assert 200 <= picked <= 260 and ops.filter(pl.col("op_index") == picked)["mlir_op"][0] == name
    expect(page.locator("#memory-detail-op")).to_have_text(name)
    with page.expect_download() as download_info:
        page.locator("#memory-csv").click()
    download = download_info.value
    assert download.suggested_filename == f"{run_id}-memory-ops-200-260.csv"
    lines = download.path().read_text(encoding="utf-8").splitlines()
    assert "DRAM_delta_bytes_per_bank" in lines[0].split(",")
    count = int(page.locator("#memory-table-count").inner_text().split()[0])
    assert len(lines) == count + 1
    assert console_errors == []
