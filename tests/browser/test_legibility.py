"""Issue 15 items 4, 5 and 7 in a real browser at 1440 x 900: tick labels never overlap, the runs table's
headers are whole, every number's definition is on the page, copies without bytes say so, and /layers
without FLOPs says why there is no throughput chart."""

from __future__ import annotations

import polars as pl
import pytest
from playwright.sync_api import Page, expect

from dashboard import schema
from dashboard.store import RunStore
from tests.support.layered_run import DEVICE_METADATA, layered_tables

VIEWPORT = {"width": 1440, "height": 900}

# Per chart: every tick label's box, grouped by the axis that draws it (g.xtick, g.x2tick, g.ytick ...),
# and the pairs of boxes of one axis that overlap by more than a pixel.
OVERLAPS_JS = """(selector) => {
    const found = [];
    for (const plot of document.querySelectorAll(selector + ' .js-plotly-plot')) {
        const axes = {};
        for (const text of plot.querySelectorAll('g[class$="tick"] > text')) {
            const box = text.getBoundingClientRect();
            if (!text.textContent.trim() || box.width === 0 || getComputedStyle(text).display === 'none') continue;
            const axis = text.parentElement.getAttribute('class');
            (axes[axis] = axes[axis] || []).push({t: text.textContent, l: box.left, r: box.right, u: box.top,
                                                  d: box.bottom});
        }
        let count = 0;
        for (const [axis, boxes] of Object.entries(axes)) {
            count += boxes.length;
            for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
                const a = boxes[i], b = boxes[j];
                if (Math.min(a.r, b.r) - Math.max(a.l, b.l) > 1 && Math.min(a.d, b.d) - Math.max(a.u, b.u) > 1) {
                    found.push(`${plot.parentElement.id} ${axis}: "${a.t}" overlaps "${b.t}"`);
                }
            }
        }
        found.push(`#labels ${plot.parentElement.id} ${count}`);
    }
    return found;
}"""


@pytest.fixture
def wide(page: Page) -> Page:
    page.set_viewport_size(VIEWPORT)
    return page


def demo_run(server, prefix: str) -> str:
    runs = [info.id for info in RunStore(server.data_dir).list_runs() if info.id.startswith(prefix)]
    assert runs, f"the demo has no {prefix} run"
    return runs[0]


def overlaps(page: Page, selector: str) -> tuple[list[str], dict[str, int]]:
    found = page.evaluate(OVERLAPS_JS, selector)
    counts = {line.split()[1]: int(line.split()[2]) for line in found if line.startswith("#labels")}
    return [line for line in found if not line.startswith("#labels")], counts


def test_runs_table_headers_are_whole_at_1440(wide: Page, server, console_errors) -> None:
    wide.goto(server.url + "/")
    expect(wide.locator(".runs-grid .ag-row").first).to_be_visible(timeout=20_000)
    headers = wide.evaluate("""() => {
        const grid = document.querySelector('.runs-grid .ag-root-wrapper').getBoundingClientRect();
        return Array.from(document.querySelectorAll('.runs-grid .ag-header-cell')).map(cell => {
            const text = cell.querySelector('.ag-header-cell-text');
            const box = cell.getBoundingClientRect();
            return {id: cell.getAttribute('col-id'), text: text ? text.textContent : '',
                    cut: text ? text.scrollWidth > text.clientWidth : false, inside: box.right <= grid.right + 1};
        }); }""")
    named = {h["id"]: h for h in headers if h["text"]}
    assert {"rows", "size", "parse_s"} <= set(named)
    assert [h for h in named.values() if h["cut"] or not h["inside"]] == []
    # The numbers themselves are whole too (they read "3…" before).
    cells = wide.locator('.runs-grid .ag-center-cols-container [col-id="rows"]').first
    assert wide.evaluate("(cell) => cell.scrollWidth <= cell.clientWidth", cells.element_handle())
    assert console_errors == []


def test_kernels_page_ticks_apart_and_definitions_written(wide: Page, server, console_errors) -> None:
    run = demo_run(server, "demo-training")
    wide.goto(f"{server.url}/kernels?run={run}")
    expect(wide.locator("#kernels-bar g.trace.bars g.point").first).to_be_visible(timeout=20_000)
    expect(wide.locator("#kernels-table .ag-header-cell").first).to_be_visible(timeout=20_000)
    found, counts = overlaps(wide, "#kernels-page")
    assert found == [] and counts["kernels-bar"] > 5 and counts["kernels-scatter"] > 5
    # One definition, written in the axis and in the column of the same name (demo: 2 ranks).
    expect(wide.locator("#kernels-bar .xtitle")).to_have_text("total time, mean per rank (ms)")
    headers = wide.locator("#kernels-table .ag-header-cell-text").all_text_contents()
    assert "total time, mean per rank (ms)" in headers and "total time, sum over 2 ranks (ms)" in headers
    # Log ticks: a decade carries its unit.
    ticks = wide.locator("#kernels-scatter .ytick text").all_text_contents()
    assert any(t.endswith(" ms") or t.endswith(" µs") for t in ticks)
    # GPU busy share beside the kernel time, with its definition.
    expect(wide.locator("#kernels-totals")).to_contain_text("of kernel time · GPU busy")
    expect(wide.locator("#kernels-busy-definition")).to_contain_text("union of its kernel, memcpy and memset")
    assert console_errors == []


def test_compare_ticks_and_ratio_column_keep_apart(wide: Page, server, console_errors) -> None:
    run = demo_run(server, "demo-training")
    wide.goto(f"{server.url}/compare?run={run}")
    expect(wide.locator("#compare-delta g.trace.bars g.point").first).to_be_visible(timeout=20_000)
    found, counts = overlaps(wide, "#compare-page")
    assert found == [] and counts["compare-delta"] > 5 and counts["compare-scatter"] > 5
    # The B / A column stands right of the plot: no ratio text box meets a kernel name's box.
    clash = wide.evaluate("""() => {
        const plot = document.querySelector('#compare-delta .js-plotly-plot');
        const names = Array.from(plot.querySelectorAll('g.ytick > text')).map(t => t.getBoundingClientRect());
        const ratios = Array.from(plot.querySelectorAll('g.y2tick > text')).map(t => t.getBoundingClientRect());
        return ratios.length > 5 && names.some(n => ratios.some(r => Math.min(n.right, r.right) >
            Math.max(n.left, r.left) && Math.min(n.bottom, r.bottom) > Math.max(n.top, r.top))); }""")
    assert clash is False
    assert console_errors == []


def test_timeline_ticks_apart(wide: Page, server, console_errors) -> None:
    run = demo_run(server, "demo-training")
    wide.goto(f"{server.url}/timeline?run={run}")
    expect(wide.locator("#timeline-graph .js-plotly-plot .main-svg").first).to_be_visible(timeout=20_000)
    wide.wait_for_load_state("networkidle")
    found, counts = overlaps(wide, "#timeline-graph")
    assert found == [] and counts["timeline-graph"] > 10
    expect(wide.locator("#timeline-graph .legendtext").filter(has_text="memcpy HtoD")).to_have_count(1)
    assert console_errors == []


@pytest.fixture(scope="module")
def no_byte_copies_run(server) -> str:
    """Kernels and copies whose byte counts are missing, as AMD traces give them."""
    kernels = schema.conform("kernels", pl.DataFrame({
        "rank": [0, 0], "device": [0, 0], "stream": [7, 7], "correlation": [1, 2], "name": ["k<float>", "k<float>"],
        "start_ns": [1_000_000, 1_500_000], "end_ns": [1_400_000, 1_900_000]}))
    memcpy = schema.conform("memcpy", pl.DataFrame({
        "rank": [0, 0], "device": [0, 0], "stream": [9, 9], "kind": ["HtoD", "HtoD"], "bytes": [None, 0],
        "start_ns": [1_100_000, 1_600_000], "end_ns": [1_200_000, 1_650_000]}))
    return RunStore(server.data_dir).write("amd-like-copies", {"kernels": kernels, "memcpy": memcpy})


def test_timeline_copies_without_bytes_say_bytes_unknown(wide: Page, server, no_byte_copies_run: str,
                                                         console_errors) -> None:
    wide.goto(f"{server.url}/timeline?run={no_byte_copies_run}")
    expect(wide.locator("#timeline-graph .js-plotly-plot .main-svg").first).to_be_visible(timeout=20_000)
    expect(wide.locator("#timeline-graph .annotation-text").filter(has_text="bytes unknown")).to_have_count(1)
    expect(wide.locator("#timeline-graph .legendtext").filter(has_text="memcpy HtoD: bytes unknown")).to_have_count(1)
    assert console_errors == []


@pytest.fixture(scope="module")
def no_flops_run(server) -> str:
    tables = layered_tables()
    tables["kernels"] = tables["kernels"].with_columns(pl.lit(None, pl.Float64).alias("flops"))
    tables["ranges"] = tables["ranges"].with_columns(pl.lit(None, pl.Float64).alias("flops"))
    return RunStore(server.data_dir).write("layers-no-flops", tables, metadata=DEVICE_METADATA)


def test_layers_without_flops_say_why_instead_of_an_empty_chart(wide: Page, server, no_flops_run: str,
                                                               console_errors) -> None:
    wide.goto(f"{server.url}/layers?run={no_flops_run}")
    expect(wide.locator("#layers-runtime g.trace.boxes path.box").first).to_be_visible(timeout=20_000)
    expect(wide.locator("#layers-no-throughput")).to_be_visible()
    expect(wide.locator("#layers-no-throughput")).to_contain_text("FLOPs are unknown for every layer")
    expect(wide.locator("#layers-throughput-card")).to_be_hidden()
    assert console_errors == []


def test_layers_with_flops_keep_the_chart(wide: Page, server, console_errors) -> None:
    run = RunStore(server.data_dir).write("layers-flops", layered_tables(), metadata=DEVICE_METADATA)
    wide.goto(f"{server.url}/layers?run={run}")
    expect(wide.locator("#layers-throughput g.trace.boxes path.box").first).to_be_visible(timeout=20_000)
    expect(wide.locator("#layers-no-throughput")).to_be_hidden()
    # A selected layer's kernels: the chart's axis and the table's column carry the same definition.
    wide.goto(f"{server.url}/layers?run={run}&layer=blocks.0.mlp&pass=backward")
    expect(wide.locator("#layers-kernels-bar .xtitle")).to_have_text("total time, sum over 2 ranks (ms)",
                                                                      timeout=20_000)
    expect(wide.locator("#layers-kernels-table .ag-header-cell-text").filter(
        has_text="total time, sum over 2 ranks (ms)")).to_have_count(1)
    expect(wide.locator("#layers-busy")).to_contain_text("GPU busy")
    wide.goto(f"{server.url}/layers?run={run}&layer=blocks.0.mlp&pass=backward&rank=1")
    expect(wide.locator("#layers-kernels-bar .xtitle")).to_have_text("total time (ms)", timeout=20_000)
    assert console_errors == []


def test_kernels_csv_carries_full_names_not_chart_labels(wide: Page, server, tmp_path, console_errors) -> None:
    from tests.support.layered_run import ADD, NORM

    run = RunStore(server.data_dir).write("kernel-csv-names", layered_tables(), metadata=DEVICE_METADATA)
    wide.goto(f"{server.url}/kernels?run={run}")
    expect(wide.locator("#kernels-table .ag-center-cols-container .ag-row").first).to_be_visible(timeout=20_000)
    for group in ("name", "op"):  # the CSV's columns follow the grouping's columns
        if group == "op":
            wide.locator("#kernels-group").get_by_text("launching op").click()
            expect(wide.locator('#kernels-table .ag-header-cell[col-id="label"] .ag-header-cell-text')).to_have_text(
                "Launching op")
        with wide.expect_download() as download:
            wide.locator("#kernels-csv").click()
        path = tmp_path / f"{group}.csv"
        download.value.save_as(path)
        table = pl.read_csv(path)
        assert "full name" in table.columns and "Kernel" not in table.columns and "Launching op" not in table.columns
        if group == "name":
            assert {ADD, NORM} <= set(table.get_column("full name").to_list())  # whole, never cut with "…"
            assert not any("…" in name for name in table.get_column("full name").to_list())
            assert "total time, sum over 2 ranks (ms)" in table.columns
        else:
            assert "aten::addmm" in table.get_column("full name").to_list()
            assert "distinct kernels" in table.columns
    assert console_errors == []


def test_planner_liveness_op_ticks_in_view_and_graph_labels_hidden_at_fit(wide: Page, server,
                                                                        console_errors) -> None:
    run = demo_run(server, "demo-planner")
    wide.goto(f"{server.url}/planner?run={run}")
    expect(wide.locator("#planner-smem-timeline g.trace.bars").first).to_be_visible(timeout=20_000)
    # The timeline sits in a scroll box: its op ids must be readable without scrolling it.
    seen = wide.evaluate("""() => {
        const plot = document.querySelector('#planner-smem-timeline');
        const box = plot.parentElement.getBoundingClientRect();
        return Array.from(plot.querySelectorAll('g[class$="tick"] > text'))
            .filter(t => /^x/.test(t.parentElement.getAttribute('class')) && t.textContent.trim())
            .filter(t => { const r = t.getBoundingClientRect(); return r.top >= box.top && r.bottom <= box.bottom; })
            .map(t => t.textContent); }""")
    assert len(seen) >= 3 and all(text.isdigit() for text in seen)
    found, _ = overlaps(wide, "#planner-page")
    assert found == []
    # At fit zoom every op shows its short label at a readable size (not an empty box: issue 34 item 6);
    # zoomed in, the full label replaces it (level of detail, assets/planner-lod.js).
    wide.wait_for_function("() => { const el = document.querySelector('#planner-graph');"
                           " return el && el._cyreg && el._cyreg.cy.nodes('.op').length > 0; }", timeout=20_000)
    # Cytoscape has replaced the graph's preview: from its first frame on, the labels are sized for the zoom.
    expect(wide.locator("#planner-graph-preview")).to_have_attribute("data-covered", "true", timeout=20_000)
    fit = wide.evaluate("""() => {
        const cy = document.querySelector('#planner-graph')._cyreg.cy;
        const op = cy.nodes('.op')[0];
        return {zoom: cy.zoom(), font: parseFloat(op.style('font-size')), label: op.style('label'),
                short: op.data('short'), min: parseFloat(op.style('min-zoomed-font-size'))}; }""")
    assert fit["label"] == fit["short"] and fit["short"].startswith("[")
    assert fit["font"] * fit["zoom"] >= 8.5 > fit["min"] - 0.1  # drawn, at 8.5 px or more on screen
    # A block body: `cy.zoom(level)` returns the Cytoscape core, which Playwright would serialize whole as the
    # result (9-27 s, most of the test's time).
    wide.evaluate("() => { document.querySelector('#planner-graph')._cyreg.cy.zoom(1.2); }")
    wide.wait_for_function("""() => { const cy = document.querySelector('#planner-graph')._cyreg.cy;
        const op = cy.nodes('.op')[0]; return op.hasClass('detail') && op.style('label') === op.data('label'); }""",
                           timeout=5_000)
    assert console_errors == []


# Every page of the demo at 1440 x 900, its default view (issue 34's done-when): no chart title, axis title,
# tick label, legend entry or annotation overlaps another or is clipped, a kernel label takes two lines at
# most, and the page is no wider than the window.
SETTLED = """() => {
    const drawn = document.querySelector('#_pages_content > *') !== null
        && !document.querySelector('._dash-loading, [data-dash-is-loading="true"], [data-after-charts="waiting"]')
        && [...document.querySelectorAll('.dash-graph')].every(g => g.querySelector('.main-svg'));
    const height = document.documentElement.scrollHeight;
    if (!drawn || window.__legibleHeight !== height) {
        window.__legibleHeight = height; window.__legibleSince = performance.now(); return false;
    }
    return performance.now() - window.__legibleSince > 800;
}"""
GROWN_MARGINS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(plot => {
    const full = plot._fullLayout, given = {...((full.template || {}).layout || {}).margin,
                                            ...((plot.layout || {}).margin || {})};
    return ['l', 'r', 't', 'b'].filter(side => given[side] !== undefined && full._size[side] > given[side] + 0.5)
        .map(side => `${plot.parentElement.id}: margin ${side} ${given[side]} grew to ${full._size[side]}`);
})"""
DEMO_PAGES = [("/insights", "demo-training"), ("/kernels", "demo-training"), ("/layers", "demo-training"),
              ("/timeline", "demo-training"), ("/ranks", "demo-training"), ("/memory", "demo-memory"),
              ("/memory", "demo-training"), ("/planner", "demo-planner"), ("/compiler", "demo-compiler"),
              ("/compare", "demo-training"), ("/history", "demo-training"), ("/", None)]


@pytest.mark.parametrize(("path", "demo"), DEMO_PAGES, ids=[f"{p}:{d}" for p, d in DEMO_PAGES])
def test_every_demo_page_reads(wide: Page, server, path: str, demo: str | None, console_errors) -> None:
    from tests.support.legibility import legibility

    # The demo's runs by name: other tests add runs to the shared server.
    run = next((info.id for info in RunStore(server.data_dir).list_runs() if info.name == demo), None)
    wide.goto(f"{server.url}{path}" + (f"?run={run}" if run else ""))
    wide.wait_for_function(SETTLED, timeout=60_000, polling=100)
    problems, counts = legibility(wide)
    assert problems == []
    assert path == "/" or (counts["charts"] >= 1 and counts["texts"] >= 5)  # something was measured
    # Each chart reserved the room its labels, legends and colour bars need (figures.text_width): plotly's
    # automargin had nothing to grow, so the chart was drawn once, not drawn, measured and drawn again.
    assert wide.evaluate(GROWN_MARGINS_JS) == []
    assert wide.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    assert console_errors == []
