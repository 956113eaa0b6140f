"""Optional login: HTTP basic auth in front of every route except /health.

Users come from a file of `user:<werkzeug password hash>` lines
(`--users-file` / DASHBOARD_USERS_FILE) and/or DASHBOARD_USERS
("alice:<hash>,bob:<hash>"); `python -m dashboard.app hash-password` makes a
line. Login is off when neither names a user.

Why a Flask `before_request` and not dash-auth's BasicAuth: dash-auth 2.3
(its last release, 2024) makes Dash's scripts, component suites, assets,
`_dash-layout` and `_dash-dependencies` public as soon as any public route is
declared (and /health must be one), answers a malformed Authorization header
with a 500, and writes a Flask session on every request. Werkzeug (already
under Flask) parses the header and checks the hashes; the hook below is the
whole policy, so it is easy to audit.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
from collections.abc import Iterable
from pathlib import Path

from flask import Flask, Response, request
from werkzeug.security import check_password_hash, generate_password_hash

log = logging.getLogger("dashboard.auth")

# Paths that answer without a login: a load balancer's health check.
OPEN_PATHS = frozenset({"/health"})
REALM = "dashboard"
_HASH_METHODS = ("scrypt:", "pbkdf2:")
# Checking a scrypt hash costs ~0.1 s: far too slow for every callback of
# every page, so a successful check is remembered (per process, keyed by an
# HMAC of the password under a random per-process key, never the password).
_VERIFIED_CACHE_SIZE = 1024
# Compared against when the user is unknown, so a wrong name costs as much as a wrong password.
_DUMMY_HASH = generate_password_hash(secrets.token_hex(8))


class UsersError(ValueError):
    """The users file or DASHBOARD_USERS is malformed: the server must not start open."""


def make_user_line(user: str, password: str) -> str:
    """One `user:<hash>` line for a users file (or, comma-joined, for DASHBOARD_USERS)."""
    user = user.strip()
    if not user or any(c in user for c in ":,\n\r\t ") or not password:
        raise UsersError("a user name must be non-empty without ':', ',' or spaces, and the password non-empty")
    return f"{user}:{generate_password_hash(password)}"


def parse_users(entries: Iterable[str], origin: str) -> dict[str, str]:
    """user -> password hash from `user:<hash>` entries; blank entries and # comments are skipped."""
    users: dict[str, str] = {}
    for number, raw in enumerate(entries, start=1):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        user, sep, password_hash = entry.partition(":")
        user, password_hash = user.strip(), password_hash.strip()
        if not sep or not user or not password_hash:
            raise UsersError(f"{origin}, entry {number}: expected 'user:<password hash>'")
        if not password_hash.startswith(_HASH_METHODS) or "$" not in password_hash:
            # A plain-text password here would be a password anyone with the file can read.
            raise UsersError(f"{origin}, entry {number} ({user}): not a werkzeug password hash; "
                             "make the line with `python -m dashboard.app hash-password`")
        users[user] = password_hash
    return users


class UserTable:
    """The users allowed in; the file is re-read when it changes, so adding a user needs no restart."""

    def __init__(self, users_file: Path | None, users_env: str = "") -> None:
        self.users_file = users_file
        self.env_users = parse_users(users_env.split(","), "DASHBOARD_USERS") if users_env.strip() else {}
        self._file_users: dict[str, str] = {}
        self._file_stamp: int | None = None
        self._verified: dict[tuple[str, bytes], str] = {}
        self._key = secrets.token_bytes(32)
        self._lock = threading.Lock()
        if users_file is not None:
            self._reload_file(strict=True)
        if not self.users():
            raise UsersError(f"login is on but names no user ({users_file or 'DASHBOARD_USERS'} is empty)")

    def _reload_file(self, strict: bool = False) -> None:
        assert self.users_file is not None
        try:
            stamp = self.users_file.stat().st_mtime_ns
            if stamp == self._file_stamp:
                return
            users = parse_users(self.users_file.read_text(encoding="utf-8").splitlines(), str(self.users_file))
        except (OSError, UnicodeDecodeError, UsersError) as exc:
            if strict:
                raise UsersError(f"cannot read users file {self.users_file}: {exc}") from None
            # A bad edit of a running server's file keeps the last good table (and says so).
            log.error("users file %s not reloaded: %s", self.users_file, exc)
            return
        self._file_users, self._file_stamp = users, stamp

    def users(self) -> dict[str, str]:
        if self.users_file is not None:
            self._reload_file()
        return {**self._file_users, **self.env_users}

    def check(self, user: str, password: str) -> bool:
        """True if `password` is `user`'s; constant work for unknown users."""
        stored = self.users().get(user)
        key = (user, hmac.new(self._key, password.encode("utf-8", "surrogatepass"), hashlib.sha256).digest())
        with self._lock:
            if stored is not None and self._verified.get(key) == stored:
                return True
        if not check_password_hash(stored or _DUMMY_HASH, password) or stored is None:
            return False
        with self._lock:
            if len(self._verified) >= _VERIFIED_CACHE_SIZE:
                self._verified.clear()
            self._verified[key] = stored
        return True


def login_required() -> Response:
    return Response("login required\n", status=401, mimetype="text/plain",
                    headers={"WWW-Authenticate": f'Basic realm="{REALM}", charset="UTF-8"'})


def install_login(server: Flask, users_file: Path | None, users_env: str = "") -> UserTable | None:
    """Require a login on every route but OPEN_PATHS when users are configured; None when off."""
    if users_file is None and not users_env.strip():
        return None
    table = UserTable(users_file, users_env)

    def require_login() -> Response | None:
        if request.path in OPEN_PATHS:
            return None
        credentials = request.authorization  # None for a missing or malformed header
        if (credentials is None or credentials.type != "basic" or credentials.username is None
                or credentials.password is None or not table.check(credentials.username, credentials.password)):
            return login_required()
        return None

    # First in line: nothing else (Dash's own setup, the page router) runs for a stranger.
    server.before_request_funcs.setdefault(None, []).insert(0, require_login)
    log.info("login required for %d user(s)%s", len(table.users()),
             f" from {users_file}" if users_file else "")
    return table
