"""/kernels at many ranks: the whole-run view comes from the per-rank summaries, never the kernel rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dashboard.analysis import summary_views
from dashboard.store import RunStore
from dashboard.store import runs as store_module
from dashboard.views import run_views
from tests.support.rank_runs import partitioned_run, rank_traces

RANKS = summary_views.SUMMARY_MIN_RANKS + 2
EXACT = ["group", "key", "label", "count", "total_ns", "share", "mean_ns"]


@pytest.fixture(scope="module")
def many_rank_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("many")
    store = RunStore(root / "data")
    return root / "data", partitioned_run(store, rank_traces(root / "ranks", RANKS, kernels=400), "many")


def _raw_view(run: Any, monkeypatch: pytest.MonkeyPatch) -> run_views.KernelView:
    with monkeypatch.context() as patched:
        patched.setattr(summary_views, "SUMMARY_MIN_RANKS", 10_000)  # as if the run had few ranks: rows
        run_views.clear_caches()
        view = run_views.kernel_view(run, None, None, "name")
    run_views.clear_caches()
    return view


def test_summary_numbers_equal_those_from_the_kernel_rows(many_rank_run: tuple[Path, str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    data, run_id = many_rank_run
    run = RunStore(data).open(run_id)
    raw = _raw_view(run, monkeypatch)
    view = run_views.kernel_view(run, None, None, "name")
    assert view.source == summary_views.SUMMARY_SOURCE and raw.source == ""
    assert view.summary.select(EXACT).equals(raw.summary.select(EXACT))
    assert (view.launches, view.gpu_time_ns) == (raw.launches, raw.gpu_time_ns)
    assert view.spread is not None and raw.spread is not None
    assert view.spread.sort("group").equals(raw.spread.sort("group"))
    assert view.summary.get_column("median_ns").null_count() == view.summary.height  # needs rows: left empty
    assert run_views.kernel_ranks(run) == tuple(range(RANKS))
    firsts = [run.scan(t).select(pl.col("start_ns").min()).collect().item() for t in ("kernels", "memcpy", "ranges")]
    origin = min(first for first in firsts if first is not None)
    run_views.clear_caches()
    assert run_views.run_origin_ns(run) == origin
    # One rank, a window or another grouping still read the rows (and their medians).
    assert run_views.kernel_view(run, 3, None, "name").source == ""
    assert run_views.kernel_view(run, None, None, "op").source == ""


def test_opening_kernels_on_a_many_rank_run_reads_no_kernel_row(many_rank_run: tuple[Path, str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from dashboard.app import create_app
    from dashboard.settings import Settings

    data, run_id = many_rank_run
    app = create_app(Settings(data_dir=data, seed_demo=False))
    run_views.clear_caches()
    store_module._open_cached.cache_clear()  # a fresh Run: nothing read by another test is held in it
    read: list[str] = []
    for reader in ("scan_parquet", "read_parquet"):
        original = getattr(pl, reader)

        def recording(source: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            read.append(str(source))
            return _original(source, *args, **kwargs)

        monkeypatch.setattr(pl, reader, recording)
    response = app.server.test_client().get("/_dash-layout",
                                            headers={"Referer": f"http://localhost/kernels?run={run_id}"})
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    assert "kernels-page" in text and "per-rank kernel summaries" in text
    assert json.loads(text)  # a whole layout came back
    assert any("summary_kernels" in path for path in read)
    assert not [path for path in read if "/kernels/" in path or Path(path).name == "kernels.parquet"], read
