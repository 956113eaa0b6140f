"""Optional login: off by default; when on, every route but /health needs it, callbacks included."""

from __future__ import annotations

import base64
import os
import re
import time
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import dashboard.server.auth as auth
from dashboard.app import create_app, serve
from dashboard.cli.main import cli
from dashboard.server.auth import UsersError, UserTable, make_user_line, parse_users
from dashboard.settings import Settings
from dashboard.store import RunStore

ALICE, ALICE_PASSWORD = "alice", "correct horse battery staple"
BOB, BOB_PASSWORD = "bob", "s3cret:with:colons"


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.fixture(scope="module")
def lines() -> dict[str, str]:
    # Hashing is slow on purpose (scrypt): make each line once.
    return {ALICE: make_user_line(ALICE, ALICE_PASSWORD), BOB: make_user_line(BOB, BOB_PASSWORD)}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, lines: dict[str, str]):
    """An app with login on: alice from the users file, bob from DASHBOARD_USERS."""
    root = tmp_path_factory.mktemp("guarded")
    (root / "inputs").mkdir()
    (root / "inputs" / "k.txt").write_text("source bytes")
    run_id = RunStore(root / "data").write(
        "guarded", {"kernels": pl.DataFrame({"name": ["k"], "start_ns": [1], "end_ns": [9]})},
        sources=[root / "inputs" / "k.txt"])
    users_file = root / "users.txt"
    users_file.write_text(f"# team\n{lines[ALICE]}\n\n")
    app = create_app(Settings(data_dir=root / "data", seed_demo=False, users_file=users_file, users=lines[BOB]))
    client = app.server.test_client()
    index = client.get("/", headers=basic(ALICE, ALICE_PASSWORD)).get_data(as_text=True)
    suite = re.search(r'src="(/_dash-component-suites/[^"]+)"', index).group(1)
    joined = re.search(r'src="(/_bundles/[^"]+)"', index).group(1)  # the app's own scripts, joined
    return {"client": client, "run_id": run_id, "suite": suite, "joined": joined, "users_file": users_file,
            "root": root}


def protected_requests(guarded) -> list[tuple[str, str, dict | None]]:
    run_id = guarded["run_id"]
    router = {
        "output": ".._pages_content.children..._pages_store.data..",
        "outputs": [{"id": "_pages_content", "property": "children"}, {"id": "_pages_store", "property": "data"}],
        "inputs": [{"id": "_pages_location", "property": "pathname", "value": "/"},
                   {"id": "_pages_location", "property": "search", "value": ""}],
        "state": [], "changedPropIds": ["_pages_location.pathname"],
    }
    return [
        ("GET", "/", None),
        ("GET", f"/kernels?run={run_id}", None),
        ("GET", "/_dash-layout", None),
        ("GET", "/_dash-dependencies", None),
        ("POST", "/_dash-update-component", router),
        ("GET", "/assets/dashboard.css", None),
        ("GET", guarded["suite"], None),
        ("GET", guarded["joined"], None),
        ("GET", "/_favicon.ico", None),
        ("GET", "/_reload-hash", None),
        ("GET", f"/runs/{run_id}/trace.json", None),
        ("GET", f"/runs/{run_id}/tables/kernels.csv", None),
        ("GET", f"/runs/{run_id}/source/k.txt", None),
        ("GET", "/static/anything.js", None),
        ("GET", "/no/such/page", None),
    ]


def send(client, method: str, path: str, body: dict | None, headers: dict | None = None):
    if method == "POST":
        return client.post(path, json=body, headers=headers or {})
    return client.get(path, headers=headers or {})


def test_every_route_but_health_requires_the_login(guarded) -> None:
    client = guarded["client"]
    for method, path, body in protected_requests(guarded):
        response = send(client, method, path, body)
        assert response.status_code == 401, path
        assert response.headers["WWW-Authenticate"].startswith('Basic realm="dashboard"')
        assert b"source bytes" not in response.data and b"traceEvents" not in response.data
        if path in ("/", "/_dash-update-component", f"/runs/{guarded['run_id']}/trace.json"):
            wrong = send(client, method, path, body, basic(ALICE, "wrong"))  # each costs a full scrypt
            assert wrong.status_code == 401, path
    health = client.get("/health")
    assert health.status_code == 200 and health.get_json()["status"] == "ok"


def test_users_from_the_file_and_the_environment_get_in(guarded) -> None:
    client = guarded["client"]
    for user, password in ((ALICE, ALICE_PASSWORD), (BOB, BOB_PASSWORD)):
        for method, path, body in protected_requests(guarded):
            response = send(client, method, path, body, basic(user, password))
            assert response.status_code != 401, (user, path)
    update = send(client, *protected_requests(guarded)[4], basic(BOB, BOB_PASSWORD))
    assert update.status_code == 200 and "runs-grid" in update.get_data(as_text=True)
    download = client.get(f"/runs/{guarded['run_id']}/source/k.txt", headers=basic(ALICE, ALICE_PASSWORD))
    assert download.data == b"source bytes"


@pytest.mark.parametrize("header", [
    "Basic !!!not-base64", "Basic " + base64.b64encode(b"no-colon").decode(), "Bearer abc.def",
    "Basic", "Digest username=alice", "Basic " + base64.b64encode(b"\xff\xfe:\xff").decode(),
])
def test_malformed_credentials_are_401_not_500(guarded, header: str) -> None:
    response = guarded["client"].get("/_dash-layout", headers={"Authorization": header})
    assert response.status_code == 401


def test_security_headers_also_on_401(guarded) -> None:
    response = guarded["client"].get("/")
    assert response.status_code == 401 and response.headers["X-Frame-Options"] == "SAMEORIGIN"


def test_login_is_off_by_default(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False))
    client = app.server.test_client()
    assert client.get("/").status_code == 200
    assert client.get("/_dash-layout").status_code == 200


def test_settings_read_users_from_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DASHBOARD_USERS_FILE", str(tmp_path / "users"))
    monkeypatch.setenv("DASHBOARD_USERS", "carol:pbkdf2:sha256:1$x$y")
    settings = Settings.from_env()
    assert settings.users_file == tmp_path / "users" and settings.users == "carol:pbkdf2:sha256:1$x$y"
    monkeypatch.delenv("DASHBOARD_USERS_FILE")
    monkeypatch.delenv("DASHBOARD_USERS")
    assert Settings.from_env().users_file is None and Settings.from_env().users == ""


def test_parse_users_refuses_what_is_not_a_hash() -> None:
    assert parse_users(["# comment", "", "a:scrypt:1:2:3$salt$hash"], "f") == {"a": "scrypt:1:2:3$salt$hash"}
    with pytest.raises(UsersError, match="not a werkzeug password hash"):
        parse_users(["alice:hunter2"], "users.txt")
    with pytest.raises(UsersError, match="expected 'user:<password hash>'"):
        parse_users(["justaname"], "users.txt")
    with pytest.raises(UsersError, match="user name"):
        make_user_line("a:b", "pw")


def test_a_bad_or_empty_users_file_stops_the_server(tmp_path: Path) -> None:
    users = tmp_path / "users.txt"
    users.write_text("alice:plaintext\n")
    with pytest.raises(UsersError):
        create_app(Settings(data_dir=tmp_path / "data", seed_demo=False, users_file=users))
    users.write_text("# nobody yet\n")
    with pytest.raises(UsersError, match="names no user"):
        UserTable(users)
    with pytest.raises(UsersError, match="cannot read users file"):
        UserTable(tmp_path / "missing.txt")
    # What `python -m dashboard.app --users-file …` runs: the command line serving through the app's `serve`.
    result = CliRunner().invoke(cli, ["--data", str(tmp_path / "data"), "--no-demo", "--users-file", str(users)],
                                obj={"serve": serve})
    assert result.exit_code == 1 and "names no user" in result.output


def test_users_file_is_reread_when_it_changes(tmp_path: Path, lines: dict[str, str]) -> None:
    users = tmp_path / "users.txt"

    def rewrite(text: str, second: int) -> None:
        users.write_text(text)
        os.utime(users, ns=(second * 10**9, second * 10**9))  # a distinct mtime, whatever the file system

    rewrite(lines[ALICE] + "\n", 1)
    table = UserTable(users)
    assert table.check(ALICE, ALICE_PASSWORD) and not table.check(BOB, BOB_PASSWORD)
    rewrite(lines[BOB] + "\n", 2)
    assert table.check(BOB, BOB_PASSWORD) and not table.check(ALICE, ALICE_PASSWORD)
    rewrite("bob:oops-plain\n", 3)  # a bad edit keeps the last good table
    assert table.check(BOB, BOB_PASSWORD)


def test_a_verified_password_is_not_rehashed_on_every_request(monkeypatch, lines: dict[str, str]) -> None:
    table = UserTable(None, lines[ALICE])
    calls = []
    real = auth.check_password_hash
    monkeypatch.setattr(auth, "check_password_hash", lambda h, p: calls.append(p) or real(h, p))
    assert all(table.check(ALICE, ALICE_PASSWORD) for _ in range(5))
    assert len(calls) == 1
    assert not table.check(ALICE, "wrong") and not table.check("mallory", ALICE_PASSWORD)
    assert len(calls) == 3  # failures are always checked in full, unknown users too


def test_hash_password_command_makes_a_working_line() -> None:
    result = CliRunner().invoke(cli, ["hash-password", "dave", "--password-stdin"], input="pa ss\n")
    assert result.exit_code == 0, result.output
    line = result.stdout.strip()
    assert line.startswith("dave:scrypt:")
    table = UserTable(None, line)
    assert table.check("dave", "pa ss") and not table.check("dave", "pass")


# ---- failed logins are rate-limited; answers behind the login are private -------------------------
@pytest.fixture
def limited(tmp_path: Path, lines: dict[str, str]):
    users_file = tmp_path / "users.txt"
    users_file.write_text(f"{lines[ALICE]}\n{lines[BOB]}\n")
    app = create_app(Settings(data_dir=tmp_path / "data", seed_demo=False, users_file=users_file))
    return app.server.test_client()


def from_client(client, address: str, user: str, password: str):
    return client.get("/_dash-layout", headers=basic(user, password), environ_base={"REMOTE_ADDR": address})


def test_failed_logins_are_limited_per_client_and_per_user(limited, monkeypatch) -> None:
    limit = auth.FAILED_LOGINS_PER_WINDOW
    for attempt in range(limit):
        assert from_client(limited, "10.0.0.1", ALICE, f"guess{attempt}").status_code == 401
    hashes: list[str] = []
    real_check = auth.check_password_hash
    monkeypatch.setattr(auth, "check_password_hash", lambda *a: hashes.append(a[0]) or real_check(*a))
    locked = from_client(limited, "10.0.0.1", ALICE, ALICE_PASSWORD)
    assert locked.status_code == 429 and 0 < int(locked.headers["Retry-After"]) <= 60
    assert locked.get_data(as_text=True).startswith("too many failed logins; try again in ")
    assert hashes == []  # refused before any password hash is computed, even the right one
    # Per user: alice's name is locked from every other address too ...
    assert from_client(limited, "10.0.0.2", ALICE, ALICE_PASSWORD).status_code == 429
    # ... per client: this address is locked for every user, another address is not.
    assert from_client(limited, "10.0.0.1", BOB, BOB_PASSWORD).status_code == 429
    assert from_client(limited, "10.0.0.2", BOB, BOB_PASSWORD).status_code == 200
    # A login that already succeeded in this process still gets in: guessing at bob does not lock him out.
    for attempt in range(limit):
        assert from_client(limited, "10.0.0.3", BOB, f"guess{attempt}").status_code == 401
    assert from_client(limited, "10.0.0.4", BOB, "one more guess").status_code == 429
    assert from_client(limited, "10.0.0.4", BOB, BOB_PASSWORD).status_code == 200
    # Unknown names are counted per client only (nothing to protect, and no memory spent on them).
    for attempt in range(limit + 1):
        assert from_client(limited, f"10.1.0.{attempt}", "mallory", "x").status_code == 401


def test_failed_login_window_expires_and_stays_bounded() -> None:
    window = auth.FailedLogins(limit=2, window_s=0.2, max_keys=3)
    window.record("a")
    assert window.wait_seconds("a") == 0
    window.record("a")
    assert 0 < window.wait_seconds("a") <= 0.2
    time.sleep(0.25)
    assert window.wait_seconds("a") == 0
    for key in "bcde":
        window.record(key)
    assert len(window._failures) == 3 and "b" not in window._failures  # least recently failed dropped


def test_every_answer_behind_the_login_is_private(guarded) -> None:
    client, run_id = guarded["client"], guarded["run_id"]
    for method, path, body in protected_requests(guarded):
        response = send(client, method, path, body, basic(BOB, BOB_PASSWORD))
        cache = response.headers.get("Cache-Control", "")
        assert "public" not in cache and ("private" in cache or "no-store" in cache), (path, cache)
    suite = client.get(guarded["suite"], headers=basic(BOB, BOB_PASSWORD))
    assert suite.cache_control.private and suite.cache_control.max_age == 31536000  # the browser may keep it
    for download in (f"/runs/{run_id}/source/k.txt", f"/runs/{run_id}/trace.json",
                     f"/runs/{run_id}/tables/kernels.csv"):
        assert client.get(download, headers=basic(BOB, BOB_PASSWORD)).headers["Cache-Control"] == "no-store"
    assert "private" not in client.get("/health").headers.get("Cache-Control", "")
