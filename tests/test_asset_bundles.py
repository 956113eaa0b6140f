"""The app's own scripts and style sheets come as one file of each kind (server/asset_bundles.py)."""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

from dashboard.app import PACKAGE_DIR, create_app
from dashboard.server.asset_bundles import SEPARATE, build_bundles, with_bundle
from dashboard.settings import Settings
from tests.support.page_scripts import page_scripts

ASSETS = PACKAGE_DIR / "assets"


def _own_files(kind: str) -> list[str]:
    return sorted(path.name for path in ASSETS.glob(f"*.{kind}") if not SEPARATE.match(path.name))


def test_every_page_gets_one_script_and_one_style_sheet_for_the_apps_assets(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    client = app.server.test_client()
    for path in ("/", "/kernels", "/planner", "/compiler/"):
        page = client.get(path).get_data(as_text=True)
        scripts = re.findall(r'<script src="([^"]+)"', page)
        sheets = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page)
        assert [src for src in scripts if "/assets/" in src] == [
            next(src for src in scripts if "/assets/plotly-dashboard-" in src)], path  # the one file kept apart
        assert len([src for src in scripts if "/_bundles/" in src]) == 1 and len(sheets) == 1, path
        assert "/_bundles/" in sheets[0]
        # The joined script runs where Dash put the first asset: before plotly.js and the renderer.
        joined = next(i for i, src in enumerate(scripts) if "/_bundles/" in src)
        assert joined < next(i for i, src in enumerate(scripts) if "plotly-dashboard-" in src)
        assert joined < next(i for i, src in enumerate(scripts) if "dash_renderer" in src)
    # Every file, in Dash's order, each whole.
    scripts = page_scripts(client, "/kernels")
    assert [src for src in scripts if src.startswith("/assets/") and "plotly-dashboard-" not in src] == [
        f"/assets/{name}" for name in _own_files("js")]
    sheet = re.findall(r'<link rel="stylesheet" href="([^"]+)"', client.get("/kernels").get_data(as_text=True))[0]
    css = client.get(sheet).get_data()
    positions = [css.index((ASSETS / name).read_bytes()) for name in _own_files("css")]
    assert _own_files("css")[0].startswith("0-bootstrap") and positions == sorted(positions)


def test_the_joined_files_are_gzipped_cached_a_year_and_unknown_names_are_not_found(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    client = app.server.test_client()
    page = client.get("/kernels").get_data(as_text=True)
    for url, kind in ((re.search(r'<script src="([^"]*/_bundles/[^"]+)"', page)[1], "javascript"),
                      (re.search(r'<link rel="stylesheet" href="([^"]+)"', page)[1], "css")):
        response = client.get(url, headers={"Accept-Encoding": "gzip"})
        assert response.status_code == 200 and response.headers["Content-Encoding"] == "gzip"
        assert kind in response.headers["Content-Type"]
        assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert gzip.decompress(response.get_data()) == client.get(url).get_data()
    assert client.get("/_bundles/js-0000000000000000.js").status_code == 404


def test_the_url_follows_the_content_and_a_list_that_differs_keeps_dashs_tags(tmp_path: Path) -> None:
    folder = tmp_path / "assets"
    shutil.copytree(ASSETS, folder)
    before = build_bundles(folder)
    (folder / "upload.js").write_text((folder / "upload.js").read_text() + "\n// changed\n")
    after = build_bundles(folder)
    assert after["js"].file_name != before["js"].file_name and after["css"].file_name == before["css"].file_name
    assert "plotly-dashboard-4.1.1.min.js" not in after["js"].members
    tags = "".join(f'<script src="/p/assets/{name}?m=1.5"></script>\n' for name in after["js"].members)
    joined = with_bundle('<script src="/p/x.js"></script>\n' + tags, after["js"], "/p/")
    assert joined == f'<script src="/p/x.js"></script>\n<script src="/p/_bundles/{after["js"].file_name}"></script>\n'
    one_more = tags + '<script src="/p/assets/new.js?m=2"></script>'
    assert with_bundle(one_more, after["js"], "/p/") == one_more


def test_debug_mode_serves_each_asset_as_dash_does_for_its_hot_reload(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False, debug=True))
    page = app.server.test_client().get("/kernels").get_data(as_text=True)
    assert "/_bundles/" not in page
    assert all(f"/assets/{name}?m=" in page for name in _own_files("js") + _own_files("css"))
