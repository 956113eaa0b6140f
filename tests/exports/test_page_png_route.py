"""The page-PNG export's pieces that need no browser: options, view state, the server's own address."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from dashboard.exports.page_png import (
    DEFAULT_WIDTH,
    MAX_WIDTH,
    MIN_WIDTH,
    PageExportFailed,
    export_options,
    local_base_url,
    page_query,
    page_url,
)


def test_export_options_are_clamped_and_bad_values_fall_back() -> None:
    assert export_options({}) == (DEFAULT_WIDTH, 1)
    assert export_options({"export_width": "1280", "export_scale": "2"}) == (1280, 2)
    assert export_options({"export_width": "99999", "export_scale": "7"}) == (MAX_WIDTH, 1)
    assert export_options({"export_width": "10", "export_scale": "1.2"}) == (MIN_WIDTH, 1)
    assert export_options({"export_width": "wide", "export_scale": "x"}) == (DEFAULT_WIDTH, 1)


def test_the_page_gets_its_view_state_not_the_exports_parameters() -> None:
    state = page_query({"export_width": "1280", "export_scale": "2", "top": "5", "sel": "a|b", "run": "other"}, "r1")
    assert state == {"top": "5", "sel": "a|b", "run": "r1"}  # the route's run wins over the query's
    assert page_url("http://127.0.0.1:8050", "/kernels", state) == (
        "http://127.0.0.1:8050/kernels?top=5&sel=a%7Cb&run=r1")


def test_the_page_is_loaded_from_the_connections_local_address_never_the_host_header() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            served, _ = listener.accept()
            with served:
                environ = {"werkzeug.socket": served, "HTTP_HOST": "attacker.example:80", "SERVER_NAME": "0.0.0.0",
                           "wsgi.url_scheme": "http"}
                environ["SCRIPT_NAME"] = "@127.0.0.1:1"  # gunicorn takes it from a header: never used
                assert local_base_url(environ) == f"http://127.0.0.1:{port}"
            assert client  # kept open until the server side was read
    # Without a socket: the bind address, the unspecified one meaning this machine.
    assert local_base_url({"SERVER_NAME": "0.0.0.0", "SERVER_PORT": "8050"}) == "http://127.0.0.1:8050"
    assert local_base_url({"SERVER_NAME": "::", "SERVER_PORT": "8050"}) == "http://[::1]:8050"
    with pytest.raises(PageExportFailed, match="own address"):
        local_base_url({"SERVER_NAME": "dashboard.example.org", "SERVER_PORT": "80"})


def test_the_png_route_refuses_unknown_pages_and_runs(tmp_path: Path) -> None:
    from dashboard.app import create_app
    from dashboard.settings import Settings
    from dashboard.store import RunStore

    store = RunStore(tmp_path / "data")
    run_id = store.write("r", {}, metadata={})
    client = create_app(Settings(data_dir=store.data_dir, seed_demo=False)).server.test_client()
    assert client.get(f"/runs/{run_id}/export/bogus.png").status_code == 404
    assert client.get("/runs/nope/export/kernels.png").status_code == 404


def test_the_export_origin_comes_from_the_settings_never_the_request() -> None:
    from dashboard.exports.page_png import origin_of, own_base_url

    environ = {"SERVER_NAME": "0.0.0.0", "SERVER_PORT": "8050", "SCRIPT_NAME": "@10.0.0.1:80",
               "HTTP_HOST": "attacker.example", "wsgi.url_scheme": "https"}
    assert own_base_url("", environ) == "http://127.0.0.1:8050"
    assert own_base_url("https://prof.example.org/dash/", environ) == "https://prof.example.org/dash"
    assert own_base_url("https://prof.example.org/dash?x=1#y", environ) == "https://prof.example.org/dash"
    for bad in ("ftp://prof.example.org", "https://user:pw@prof.example.org", "prof.example.org", "https:///x"):
        with pytest.raises(PageExportFailed):
            own_base_url(bad, environ)
    with pytest.raises(PageExportFailed):
        page_url("http://127.0.0.1:8050", "//elsewhere.example/x", {})
    assert origin_of("http://127.0.0.1/kernels") == origin_of("http://127.0.0.1:80/x") == "http://127.0.0.1:80"
    assert origin_of("http://127.0.0.1:8050@127.0.0.1:18997/k") == "http://127.0.0.1:18997"


def test_the_exported_query_is_the_pages_parsed_state(tmp_path: Path) -> None:
    from dashboard.exports.page_figures import page_state
    from dashboard.store import RunStore
    from tests.support.kernel_tables import kernel_tables

    store = RunStore(tmp_path / "data")
    run = store.open(store.write("r", kernel_tables(5)))
    state = page_state("kernels", run, {"top": "5", "evil": "@10.0.0.1", "group": "<script>", "run": run.id})
    assert state.get("top") == "5" and "evil" not in state and state.get("group", "") != "<script>"
