"""/ranks in a real browser: the heatmap of a multi-rank run, and a click on a cell opens the timeline there."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from dashboard.analysis import rank_steps
from dashboard.store import RunStore
from tests.support.rank_runs import partitioned_run, rank_traces

RANKS, STEPS = 9, 3  # more than MANY_RANKS: the timeline indexes the clicked rank alone


@pytest.fixture(scope="module")
def rank_run(server, tmp_path_factory: pytest.TempPathFactory) -> str:
    inputs = rank_traces(tmp_path_factory.mktemp("ranks") / "ranks", RANKS, kernels=2000 * STEPS)
    return partitioned_run(RunStore(server.data_dir), inputs, "many-ranks")


def test_ranks_heatmap_click_opens_that_rank_and_step_on_the_timeline(page: Page, server, rank_run: str,
                                                                         console_errors) -> None:
    page.goto(f"{server.url}/ranks?run={rank_run}")
    cells = page.locator("#ranks-heatmap .nsewdrag").first
    expect(cells).to_be_visible(timeout=20_000)
    expect(page.locator("#ranks-definition")).to_contain_text(f"{RANKS} ranks × {STEPS} steps")
    expect(page.locator("#ranks-definition")).to_contain_text("per-rank summaries stored at ingest")
    expect(page.locator("#ranks-slowest tbody tr")).to_have_count(min(RANKS, 10))
    expect(page.locator("#ranks-differing tbody tr").first).to_be_visible()
    box = cells.bounding_box()
    assert box is not None
    rank, step = 2, 1  # ranks run top to bottom, steps left to right
    page.mouse.click(box["x"] + (step + 0.5) * box["width"] / STEPS, box["y"] + (rank + 0.5) * box["height"] / RANKS)
    expect(page).to_have_url(re.compile(r"/timeline\?"), timeout=20_000)
    expect(page.locator("#timeline-page")).to_be_visible(timeout=20_000)
    query = {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}
    run = RunStore(server.data_dir).open(rank_run)
    start, end = rank_steps.step_window(rank_steps.step_matrix(run), rank, step)  # type: ignore[misc]
    assert query["run"] == rank_run and query["rank"] == str(rank)
    assert query["window"] == f"{start}-{end}"
    expect(page.locator("#timeline-rank")).to_contain_text(f"rank {rank}")
    assert console_errors == []


def test_timeline_of_a_many_rank_run_opens_on_one_rank(page: Page, server, rank_run: str, console_errors) -> None:
    page.goto(f"{server.url}/timeline?run={rank_run}")
    expect(page.locator("#timeline-page .js-plotly-plot").first).to_be_visible(timeout=20_000)
    expect(page.locator("#timeline-rank")).to_contain_text("rank 0")
    lanes = page.evaluate("() => document.querySelector('#timeline-graph .js-plotly-plot').layout.yaxis.ticktext")
    # One rank's lanes (passes, two GPU streams, the CPU threads), not 9 ranks' worth.
    assert lanes is not None and lanes.count("GPU0 s7") == 1 and len(lanes) < 10, lanes
    assert console_errors == []


def test_kernel_names_read_short_and_a_one_rank_run_has_no_table_of_zeros(page: Page, server, tmp_path,
                                                                         console_errors) -> None:
    """Issue 34 items 2 and 8: FBGEMM-long kernel names took 20-30 lines a row; one rank drew ±0 ns rows."""
    import polars as pl

    from tests.support.kernel_tables import kernel_tables

    long_name = ("void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<float, "
                 "float, int, 64, 1>(at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>, "
                 + ", ".join(f"at::GenericPackedTensorAccessor<long, {i}ul, at::RestrictPtrTraits, int>"
                             for i in range(1, 12)) + ")")
    tables = kernel_tables(seed=8)
    tables["kernels"] = tables["kernels"].with_columns(
        pl.when(pl.int_range(pl.len()) % 3 == 0).then(pl.lit(long_name)).otherwise(pl.col("name")).alias("name"))
    store = RunStore(server.data_dir)
    two = store.write("long-kernel-names", tables)
    page.goto(f"{server.url}/ranks?run={two}")
    cell = page.locator("#ranks-differing td.kernel-name", has_text="split_embedding_backward").first
    expect(cell).to_be_visible(timeout=20_000)
    assert cell.get_attribute("title") == long_name  # the full demangled name on hover
    assert "GenericPackedTensorAccessor" not in cell.inner_text()
    line = float(page.evaluate("(el) => parseFloat(getComputedStyle(el).lineHeight)", cell.element_handle()))
    assert cell.bounding_box()["height"] <= 2 * line + 8  # never more than two lines
    from dashboard.demo.kineto_trace import write_trace
    from dashboard.ingest.pipeline import ingest_paths

    trace = tmp_path / "one_rank.pt.trace.json"
    write_trace(trace, rank=0, world_size=1)  # three profiler steps on one GPU
    one = ingest_paths(store, [trace], name="one-rank")
    page.goto(f"{server.url}/ranks?run={one}")
    expect(page.locator("#ranks-one-rank")).to_contain_text("One rank: there is no other rank", timeout=20_000)
    expect(page.locator("#ranks-definition")).to_contain_text("1 rank ×")
    assert page.locator("#ranks-differing table").count() == 0 and "±0" not in page.locator("#ranks-page").inner_text()
    assert console_errors == []
