"""Team-server hardening over HTTP: security headers, CSP hashes, a clear 413, no reads outside a run."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import polars as pl
import pytest
from werkzeug.exceptions import NotFound

from dashboard import schema
from dashboard.app import create_app
from dashboard.server.security import SECURITY_HEADERS, resolve_inside, too_large_message
from dashboard.settings import Settings
from dashboard.store import RunStore
from tests.support.dash_requests import upload_payload
from tests.support.kernel_tables import kernel_tables

LIMIT_MB = 1


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    """An app with one run that has kernel tables, list columns and two source files."""
    root = tmp_path_factory.mktemp("served")
    sources = root / "inputs"
    (sources / "nested").mkdir(parents=True)
    (sources / "trace.json").write_text('{"traceEvents": []}')
    (sources / "nested" / "rank1.json").write_bytes(b"\x00\x01binary")
    (root / "secret.txt").write_text("outside the data folder")
    tables = kernel_tables(kernels_per_stream=5)
    tables["op_meta"] = schema.conform("op_meta", pl.DataFrame({
        "op_index": [0, 1], "inputs": [["%0", "%1"], []], "input_shapes": [["1x32"], None]}))
    store = RunStore(root / "data")
    run_id = store.write("served", tables, sources=[sources / "trace.json", sources / "nested"])
    app = create_app(Settings(data_dir=root / "data", seed_demo=False, max_upload_mb=LIMIT_MB, max_request_mb=LIMIT_MB))
    client = app.server.test_client()
    client.get("/")  # Dash finishes its setup (page router, inline scripts) on the first request
    return {"app": app, "client": client, "run_id": run_id, "root": root, "store": store, "tables": tables}


def router_payload(pathname: str, search: str = "") -> dict:
    """The request Dash's page router makes to render a page."""
    return {
        "output": ".._pages_content.children..._pages_store.data..",
        "outputs": [{"id": "_pages_content", "property": "children"}, {"id": "_pages_store", "property": "data"}],
        "inputs": [{"id": "_pages_location", "property": "pathname", "value": pathname},
                   {"id": "_pages_location", "property": "search", "value": search}],
        "state": [],
        "changedPropIds": ["_pages_location.pathname"],
    }


# ---- headers ---------------------------------------------------------------
@pytest.mark.parametrize("path", ["/", "/kernels?run=x", "/health", "/_dash-layout", "/_dash-dependencies",
                                  "/assets/dashboard.css", "/runs/nope/trace.json"])
def test_security_headers_on_every_response(served, path: str) -> None:
    response = served["client"].get(path)
    for header, value in SECURITY_HEADERS.items():
        assert response.headers[header] == value, (path, header)
    policy = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'self'" in policy
    assert "object-src 'none'" in policy


def test_csp_allows_exactly_the_inline_scripts_dash_serves(served) -> None:
    response = served["client"].get("/")
    # Scripts inside comments (Dash's old-IE warning) never run.
    html = re.sub(r"<!--.*?-->", "", response.get_data(as_text=True), flags=re.S)
    inline = re.findall(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>(.*?)</script>", html, re.S)
    assert len(inline) >= 2  # the clientside callbacks and the renderer bootstrap
    script_src = next(part for part in response.headers["Content-Security-Policy"].split("; ")
                      if part.startswith("script-src "))
    allowed = set(script_src.split()[1:])
    for script in inline:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in allowed
    # Nothing allows arbitrary inline code or eval.
    assert "'unsafe-inline'" not in allowed and "'unsafe-eval'" not in allowed


# ---- upload limit ------------------------------------------------------------
def test_oversized_callback_post_gets_413_with_a_clear_message(served) -> None:
    body = upload_payload(os.urandom(2 * 1024 * 1024))  # 2 MiB file, ~2.7 MiB request
    response = served["client"].post("/_dash-update-component", json=body)
    assert response.status_code == 413
    message = response.get_json()["error"]
    assert re.fullmatch(r"upload too large: 2\.\d MiB > limit 1 MiB", message), message
    assert response.get_json()["limit_bytes"] == LIMIT_MB * 1024 * 1024
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_oversized_request_elsewhere_gets_a_text_413(served) -> None:
    # Refused on the declared length, whatever the route and before anything reads the body.
    response = served["client"].post("/kernels", data=io.BytesIO(b"x" * (3 * 1024 * 1024)),
                                     content_type="application/octet-stream", headers={"Accept": "text/html"})
    assert response.status_code == 413
    assert response.mimetype == "text/plain"
    assert response.get_data(as_text=True).strip() == "upload too large: 3 MiB > limit 1 MiB"


def test_callbacks_under_the_limit_still_work(served) -> None:
    response = served["client"].post("/_dash-update-component", json=router_payload("/"))
    assert response.status_code == 200
    assert "runs-grid" in response.get_data(as_text=True)


def test_too_large_message_without_a_length() -> None:
    assert too_large_message(None, 5 * 1024 * 1024) == "upload too large: more than the limit of 5 MiB"
    assert too_large_message(3 * 1024 * 1024 + 1, 1024 * 1024) == "upload too large: 3 MiB > limit 1 MiB"


# ---- downloads ---------------------------------------------------------------
def test_source_files_download_byte_for_byte(served) -> None:
    client, run_id = served["client"], served["run_id"]
    response = client.get(f"/runs/{run_id}/source/trace.json")
    assert response.status_code == 200 and response.data == b'{"traceEvents": []}'
    assert response.headers["Content-Disposition"].startswith("attachment")
    assert response.mimetype == "application/octet-stream"
    nested = client.get(f"/runs/{run_id}/source/nested/rank1.json")
    assert nested.status_code == 200 and nested.data == b"\x00\x01binary"


def test_table_csv_matches_the_table(served) -> None:
    client, run_id, tables = served["client"], served["run_id"], served["tables"]
    response = client.get(f"/runs/{run_id}/tables/kernels.csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert f'filename="{run_id}.kernels.csv"' in response.headers["Content-Disposition"]
    parsed = pl.read_csv(io.BytesIO(response.data), schema=schema.schema_of("kernels"))
    assert parsed.equals(tables["kernels"].sort("start_ns"))
    # List columns have no CSV form: their items are joined with ';' (an empty list stays apart from null).
    meta = pl.read_csv(io.BytesIO(client.get(f"/runs/{run_id}/tables/op_meta.csv").data))
    assert meta.get_column("inputs").to_list() == ["%0;%1", ""]
    assert meta.get_column("input_shapes").to_list() == ["1x32", None]


def test_trace_json_downloads(served) -> None:
    response = served["client"].get(f"/runs/{served['run_id']}/trace.json")
    assert response.status_code == 200 and response.mimetype == "application/json"
    events = response.get_json()["traceEvents"]
    assert sum(e["ph"] == "X" and e["cat"] == "kernel" for e in events) == served["tables"]["kernels"].height


REFUSED = [
    "/runs/{run}/source/../run.json",
    "/runs/{run}/source/%2e%2e/run.json",
    "/runs/{run}/source/%2E%2E/%2E%2E/%2E%2E/secret.txt",
    "/runs/{run}/source/nested/..%2f..%2frun.json",
    "/runs/{run}/source/%2fetc%2fpasswd",
    "/runs/{run}/source//etc/passwd",
    "/runs/{run}/source/./trace.json",
    "/runs/{run}/source/nested\\..\\..\\run.json",
    "/runs/{run}/source/trace.json%00.txt",
    "/runs/{run}/source/nested",
    "/runs/{run}/source/missing.json",
    "/runs/..%2f..%2fsecret.txt/trace.json",
    "/runs/%2e%2e/source/secret.txt",
    "/runs/%2e%2e/tables/kernels.csv",
    "/runs/{run}/tables/..%2frun.csv",
    "/runs/{run}/tables/memcpy2.csv",
    "/runs/{run}/tables/ws_ops.csv",
    "/runs/no-such-run/trace.json",
    "/runs/{run}/source/",
]


@pytest.mark.parametrize("template", REFUSED)
def test_traversal_and_unknown_paths_are_404(served, template: str) -> None:
    response = served["client"].get(template.format(run=served["run_id"]))
    assert response.status_code == 404, template
    assert b"outside the data folder" not in response.data and b"row_counts" not in response.data


def test_symlinks_leading_outside_the_run_are_404(served) -> None:
    run_path = served["store"].run_path(served["run_id"])
    secret = served["root"] / "secret.txt"
    (run_path / "source" / "leak.txt").symlink_to(secret)
    (run_path / "source" / "leakdir").symlink_to(served["root"])
    (run_path / "source" / "runjson").symlink_to(run_path / "run.json")  # inside the run, outside source/
    (run_path / "source" / "alias.json").symlink_to(run_path / "source" / "trace.json")
    client, run_id = served["client"], served["run_id"]
    for relative in ("leak.txt", "leakdir/secret.txt", "runjson"):
        response = client.get(f"/runs/{run_id}/source/{relative}")
        assert response.status_code == 404, relative
    assert client.get(f"/runs/{run_id}/source/alias.json").data == b'{"traceEvents": []}'


def test_a_run_folder_symlinked_from_outside_is_not_a_run(served, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "run.json").write_text("{}")
    (served["store"].runs_dir / "planted").symlink_to(outside)
    assert served["client"].get("/runs/planted/tables/kernels.csv").status_code == 404


def test_resolve_inside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f.txt").write_text("x")
    (tmp_path / "out.txt").write_text("y")
    (root / "out").symlink_to(tmp_path / "out.txt")
    assert resolve_inside(root, "a/f.txt") == (root / "a" / "f.txt").resolve()
    for bad in ("", "/etc/passwd", "a/../a/f.txt", "../out.txt", "a", "out", "a//f.txt", "a\\f.txt", "nope"):
        with pytest.raises(NotFound):
            resolve_inside(root, bad)
    # The root itself must lie inside the jail.
    with pytest.raises(NotFound):
        resolve_inside(root / "a", "f.txt", jail=tmp_path / "elsewhere")


def _links(component) -> list[tuple[str, str, str]]:
    """(class, href, download name) of every link in a component tree."""
    found = []
    if getattr(component, "href", None) and getattr(component, "download", None):
        found.append((component.className, component.href, component.download))
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, str):
            found.extend(_links(child))
    return found


def test_run_downloads_menu_links_to_routes_that_serve(served) -> None:
    from dashboard.layouts import server_state
    from dashboard.layouts.downloads import download_links, run_downloads

    server_state.configure(Settings(data_dir=served["root"] / "data", seed_demo=False))
    run_id, client = served["run_id"], served["client"]
    links = _links(run_downloads(run_id))
    classes = " ".join(cls for cls, _href, _name in links)
    assert "download-trace" in classes and "download-csv-kernels" in classes and "download-csv-op_meta" in classes
    assert sum("download-source" in cls for cls, _href, _name in links) >= 2  # trace.json and nested/rank1.json
    for _cls, href, name in links:
        response = client.get(href)
        assert response.status_code == 200, href
        assert name in response.headers["Content-Disposition"]
    assert _links(run_downloads("no-such-run")) == [] and _links(run_downloads(None)) == []
    cell = download_links(served["store"].open(run_id).info)
    assert cell == [{"text": "trace.json", "href": f"/runs/{run_id}/trace.json"},
                    {"text": "kernels.csv", "href": f"/runs/{run_id}/tables/kernels.csv"}]


# ---- malformed requests are 4xx, never 500 -------------------------------------------------------
@pytest.mark.parametrize("path", ["/_dash-component-suites/unknown_pkg/x.js", "/_dash-component-suites/dash/nope.js",
                                  "/_dash-component-suites/dash/dcc/nope.v1m1.js",
                                  "/_dash-component-suites/os/x.js"])
def test_unknown_component_suite_files_are_404(served, path: str) -> None:
    assert served["client"].get(path).status_code == 404


INGEST_OUTPUT = "..ingest-job.data...ingest-poll.disabled...ingest-message.children...ingest-progress.style.."
MALFORMED_CALLBACKS = [
    b"", b"not json", b"[]", b"{}", b"null", b'"text"', b'{"output": 1}',
    json.dumps({"output": "..nope.children..", "outputs": [], "inputs": [], "state": []}).encode(),
    json.dumps({"output": INGEST_OUTPUT, "outputs": "x", "inputs": "y"}).encode(),
    json.dumps({"output": INGEST_OUTPUT, "outputs": [], "inputs": []}).encode(),
    json.dumps({"output": INGEST_OUTPUT, "outputs": [{"id": "a"}], "inputs": [{"x": 1}], "state": None}).encode(),
    json.dumps({"output": INGEST_OUTPUT, "outputs": [{"id": "a", "property": "b"}],
                "inputs": [{"id": "upload", "property": "contents", "value": 5}], "state": []}).encode(),
    json.dumps({**router_payload("/"), "inputs": [{"id": "_pages_location", "property": "pathname"}]}).encode(),
    json.dumps({**router_payload("/"), "changedPropIds": [1, 2]}).encode(),
    json.dumps({**router_payload("/"), "outputs": [[{"id": 1, "property": None}]]}).encode(),
]


@pytest.mark.parametrize("body", MALFORMED_CALLBACKS)
def test_malformed_callback_requests_are_400(served, body: bytes) -> None:
    response = served["client"].post("/_dash-update-component", data=body, content_type="application/json")
    assert response.status_code == 400, response.data[:300]
    assert response.get_json()["error"].startswith("malformed callback request: ")


def chunked_post(client, path: str, body: bytes, content_type: str = "application/json"):
    # What the development server and gunicorn hand on for `Transfer-Encoding: chunked`: no length.
    return client.post(path, input_stream=io.BytesIO(body), content_type=content_type,
                       headers={"Transfer-Encoding": "chunked"}, environ_overrides={"wsgi.input_terminated": True})


def test_an_oversized_chunked_body_is_413_and_a_small_one_still_works(served) -> None:
    big = chunked_post(served["client"], "/_dash-update-component",
                       json.dumps(upload_payload(os.urandom(2 * 1024 * 1024))).encode())
    assert big.status_code == 413
    assert big.get_json()["error"] == "upload too large: more than the limit of 1 MiB"
    small = chunked_post(served["client"], "/_dash-update-component", json.dumps(router_payload("/")).encode())
    assert small.status_code == 200 and "runs-grid" in small.get_data(as_text=True)


def test_downloads_are_never_kept_by_a_cache(served) -> None:
    client, run_id = served["client"], served["run_id"]
    for path in (f"/runs/{run_id}/source/trace.json", f"/runs/{run_id}/tables/kernels.csv",
                 f"/runs/{run_id}/trace.json", "/runs/nope/trace.json"):
        assert client.get(path).headers["Cache-Control"] == "no-store", path


def test_the_development_server_names_no_versions(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    process = subprocess.Popen([sys.executable, "-m", "dashboard.app", "--data", str(tmp_path / "data"), "--no-demo",
                                "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                    server = response.headers["Server"]
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=20)
    assert server == "dashboard"


def test_a_callback_that_prevents_its_update_answers_204_not_400() -> None:
    """PreventUpdate is a CallbackException, but it is a callback's normal "no change": Dash's 204.

    The guard that turns ill-fitting callback requests into 400s once caught it too, and every page
    that declines an update (the kernels page when its inputs echo what is drawn) showed a console error.
    """
    import dash
    from dash import Input, Output, html
    from dash.exceptions import PreventUpdate

    from dashboard.app import web_app
    from dashboard.server.security import install_security

    app = dash.Dash(__name__)
    app.layout = html.Div([html.Button(id="b"), html.Div(id="out")])

    @app.callback(Output("out", "children"), Input("b", "n_clicks"))
    def never(_clicks: int | None) -> str:
        raise PreventUpdate

    install_security(web_app(app))
    client = app.server.test_client()
    client.get("/")
    body = {"output": "out.children", "outputs": {"id": "out", "property": "children"},
            "inputs": [{"id": "b", "property": "n_clicks", "value": 1}], "changedPropIds": ["b.n_clicks"]}
    response = client.post("/_dash-update-component", json=body)
    assert response.status_code == 204
