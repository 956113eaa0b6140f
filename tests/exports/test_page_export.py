"""Every page's charts export as real PNGs: from the catalog, the CLI and the page's zip route."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from dashboard.cli.main import cli
from dashboard.exports.page_figures import PAGES, page_figures, pages_for
from dashboard.exports.png import CAPTION_HEIGHT, DEFAULT_HEIGHT
from dashboard.exports.routes import view_caption
from dashboard.store import RunStore
from tests.support.demo_copy import demo_copy


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> RunStore:
    return RunStore(demo_copy(demo_template, tmp_path_factory.mktemp("export") / "data"))


def assert_real_png(data: bytes, min_width: int = 1000) -> None:
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG"
        assert image.width >= min_width and image.height >= 400
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colours is not None and len(colours) > 20, "the image is blank or nearly so"


def test_every_page_has_charts_for_the_demo(demo_store: RunStore) -> None:
    covered = set()
    for info in demo_store.list_runs():
        run = demo_store.open(info.id)
        for page in pages_for(run):
            figures = page_figures(page, run, {})
            assert figures, f"{page} drew nothing for {info.id}"
            assert all(len(figure.data) > 0 for figure in figures.values())
            covered.add(page)
    assert covered == set(PAGES)


def test_view_state_reaches_the_charts(demo_store: RunStore) -> None:
    run = demo_store.open(next(i.id for i in demo_store.list_runs() if "memory" in i.evidence))
    per_bank = page_figures("memory", run, {})["memory-curves"]
    device = page_figures("memory", run, {"unit": "device"})["memory-curves"]
    assert per_bank.layout.yaxis.title.text != device.layout.yaxis.title.text


def test_cli_export_writes_every_chart_as_png(demo_store: RunStore, tmp_path: Path) -> None:
    run_id = next(i.id for i in demo_store.list_runs() if "planner" in i.evidence)
    result = CliRunner().invoke(cli, ["export", run_id, "--data", str(demo_store.data_dir), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    written = [Path(line) for line in result.stdout.split()]
    assert len(written) == 4 and all(path.parent == tmp_path for path in written)
    for path in written:
        assert_real_png(path.read_bytes())


def test_cli_export_rejects_unknown_run_and_page(demo_store: RunStore) -> None:
    result = CliRunner().invoke(cli, ["export", "nope", "--data", str(demo_store.data_dir)])
    assert result.exit_code != 0 and "no run named 'nope'" in result.stderr
    run_id = demo_store.list_runs()[0].id
    result = CliRunner().invoke(cli, ["export", run_id, "--page", "bogus", "--data", str(demo_store.data_dir)])
    assert result.exit_code != 0 and "unknown page" in result.stderr


def test_page_zip_route(demo_store: RunStore) -> None:
    from dashboard.app import create_app
    from dashboard.settings import Settings

    app = create_app(Settings(data_dir=demo_store.data_dir, seed_demo=False))
    client = app.server.test_client()
    run_id = next(i.id for i in demo_store.list_runs() if "memory" in i.evidence)
    response = client.get(f"/runs/{run_id}/export/memory.zip?unit=device")
    assert response.status_code == 200
    assert response.headers["Content-Disposition"].startswith("attachment")
    archive = zipfile.ZipFile(io.BytesIO(response.data))
    assert sorted(archive.namelist()) == [f"{run_id}-memory-memory-curves.png", f"{run_id}-memory-top-growth.png"]
    figures = page_figures("memory", demo_store.open(run_id), {"unit": "device"})
    for name in archive.namelist():
        assert_real_png(archive.read(name))
        # Each chart at 2x with its caption strip (run and view) below it.
        figure = figures[name.removeprefix(f"{run_id}-memory-").removesuffix(".png")]
        with Image.open(io.BytesIO(archive.read(name))) as image:
            assert image.height == 2 * ((figure.layout.height or DEFAULT_HEIGHT) + CAPTION_HEIGHT)
    assert view_caption(run_id, "memory", {"unit": "device", "run": run_id}) == f"run {run_id} · /memory · unit=device"
    assert client.get(f"/runs/{run_id}/export/bogus.zip").status_code == 404
    assert client.get(f"/runs/{run_id}/export/planner.zip").status_code == 404  # nothing to draw there


ASSETS = Path(__file__).resolve().parents[2] / "dashboard" / "assets"
# The banner tools/plotly-bundle/build.js writes: "plotly.js (dashboard: bar, box, ... - minified) v4.1.1".
BANNER = re.compile(r"plotly\.js \(dashboard: (?P<traces>[a-z0-9, ]+) - minified\) v(?P<version>\S+)")


def _bundle() -> tuple[Path, re.Match[str]]:
    bundles = sorted(ASSETS.glob("plotly-*.min.js"))
    assert len(bundles) == 1, bundles
    banner = BANNER.search(bundles[0].read_text(encoding="utf-8")[:400])
    assert banner, "the plotly.js bundle in assets/ was not built by tools/plotly-bundle/build.js"
    return bundles[0], banner


def test_browsers_get_a_bundle_of_plotlys_own_plotly_js_version() -> None:
    import plotly

    bundle, banner = _bundle()
    full = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    full_version = full.read_text(encoding="utf-8", errors="replace")[:400].split(" v", 1)[1].split()[0]
    assert banner["version"] == full_version
    assert bundle.name == f"plotly-dashboard-{full_version}.min.js"


def test_the_bundle_is_one_function_called_at_once() -> None:
    # V8 compiles a parenthesised function that is called at once in one pass; plotly.js's dist files
    # hand the library to a UMD factory that is pre-parsed, then parsed again (~4x the first-visit
    # evaluation time, see tools/plotly-bundle/README.md).
    bundle, _ = _bundle()
    code = bundle.read_text(encoding="utf-8")
    body = code[code.index("*/") + 2:].lstrip()
    assert body.startswith('"use strict";var Plotly=(()=>{'), body[:80]
    assert code.rstrip().endswith("window.Plotly = Plotly;")


def test_the_bundle_asks_v8_to_compile_every_function_with_it() -> None:
    # V8's explicit compile hint, on the file's first line: Chrome's code cache for a returning visitor then
    # holds plotly's drawing code, compiled otherwise on every page load when the first chart is drawn.
    bundle, _ = _bundle()
    assert bundle.read_text(encoding="utf-8").startswith("//# allFunctionsCalledOnLoad\n/**\n")


def test_every_chart_uses_only_trace_types_of_the_bundle(demo_store: RunStore) -> None:
    used = set()
    for info in demo_store.list_runs():
        run = demo_store.open(info.id)
        for page in pages_for(run):
            for figure in page_figures(page, run, {}).values():
                used |= {trace.type for trace in figure.data}
    bundled = {trace.strip() for trace in _bundle()[1]["traces"].split(",")}
    assert used and used <= bundled, used - bundled


# Every plotly trace class the figures construct, e.g. "go.Scattergl(" or "go.Bar(".
TRACE_CLASS = re.compile(r"\bgo\.(?P<name>[A-Z][A-Za-z0-9]*)\(")
NOT_TRACES = {"Figure", "Layout", "FigureWidget"}


def test_no_figure_module_builds_a_trace_the_bundle_lacks() -> None:
    # The demo's pages do not draw every figure (a Tenstorrent compare, say); the source does name them.
    source = Path(__file__).resolve().parents[2] / "dashboard"
    bundled = {trace.strip() for trace in _bundle()[1]["traces"].split(",")}
    built = {(path.name, match["name"].lower()) for path in source.rglob("*.py")
             for match in TRACE_CLASS.finditer(path.read_text(encoding="utf-8"))
             if match["name"] not in NOT_TRACES}
    assert built, "no trace classes found: the pattern no longer matches the source"
    assert {pair for pair in built if pair[1] not in bundled} == set()
