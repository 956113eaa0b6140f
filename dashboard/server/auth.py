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

Behind a login every answer is `Cache-Control: private` (a `public` one, such
as Dash's year-long asset caching, is made private): a shared cache must not
keep what needed a password. Downloads are `no-store` (security.py).

Failed logins are rate-limited per client address and per user: past
`FAILED_LOGINS_PER_WINDOW` failures in `FAILED_LOGIN_WINDOW_S` the answer is
429 with Retry-After, before any password hash is computed (a check costs
~0.1 s of CPU, so an unlimited stream of guesses is also a denial of service).
Why a small window here and not Flask-Limiter: the count must be of *failed*
checks only, decided before the costly check, with a per-user key that exists
only once the header is parsed; that is this hook, in 40 lines, with memory
bounded (`_MAX_TRACKED_CLIENTS` addresses, least recently failed dropped
first; users only if they exist). The window is per process: a gunicorn with
W workers allows up to W times the limit, still a few hundred guesses an hour
against one user instead of tens of thousands. A user who logged in with the
same password in this process before is let in even while their name is
locked, so guessing at a name does not lock its owner out of a running session.
Behind a reverse proxy every client has the proxy's address: the per-client
limit then applies to all of them together (the per-user one still holds).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable
from pathlib import Path

from flask import Flask, Response, request
from werkzeug.security import check_password_hash, generate_password_hash

log = logging.getLogger("dashboard.server.auth")

# Paths that answer without a login: a load balancer's health check (without a query: `?verbose`
# tells the worker's memory and needs the login).
OPEN_PATHS = frozenset({"/health"})
REALM = "dashboard"
_HASH_METHODS = ("scrypt:", "pbkdf2:")
# Checking a scrypt hash costs ~0.1 s: far too slow for every callback of
# every page, so a successful check is remembered (per process, keyed by an
# HMAC of the password under a random per-process key, never the password).
_VERIFIED_CACHE_SIZE = 1024
# Compared against when the user is unknown, so a wrong name costs as much as a wrong password.
_DUMMY_HASH = generate_password_hash(secrets.token_hex(8))
FAILED_LOGINS_PER_WINDOW = 10
FAILED_LOGIN_WINDOW_S = 60.0
_MAX_TRACKED_CLIENTS = 4096


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

    def recently_verified(self, user: str, password: str) -> bool:
        """True if this exact login succeeded before in this process (no hash computed)."""
        stored = self.users().get(user)
        with self._lock:
            return stored is not None and self._verified.get(self._cache_key(user, password)) == stored

    def _cache_key(self, user: str, password: str) -> tuple[str, bytes]:
        return (user, hmac.new(self._key, password.encode("utf-8", "surrogatepass"), hashlib.sha256).digest())

    def check(self, user: str, password: str) -> bool:
        """True if `password` is `user`'s; constant work for unknown users."""
        stored = self.users().get(user)
        key = self._cache_key(user, password)
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


class FailedLogins:
    """Failures per key in a sliding window; at most `max_keys` keys are remembered."""

    def __init__(self, limit: int = FAILED_LOGINS_PER_WINDOW, window_s: float = FAILED_LOGIN_WINDOW_S,
                 max_keys: int = _MAX_TRACKED_CLIENTS) -> None:
        self.limit, self.window_s, self.max_keys = limit, window_s, max_keys
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def wait_seconds(self, key: str) -> float:
        """How long `key` must wait before its next try (0: it may try now)."""
        now = time.monotonic()
        with self._lock:
            failures = self._failures.get(key)
            while failures and now - failures[0] >= self.window_s:
                failures.popleft()
            if not failures or len(failures) < self.limit:
                return 0.0
            return self.window_s - (now - failures[0])

    def record(self, key: str) -> None:
        with self._lock:
            failures = self._failures.pop(key, None) or deque(maxlen=self.limit)
            failures.append(time.monotonic())
            self._failures[key] = failures  # most recently failed last
            while len(self._failures) > self.max_keys:
                self._failures.popitem(last=False)


def too_many_failures(wait_s: float) -> Response:
    seconds = max(1, round(wait_s + 0.5))
    return Response(f"too many failed logins; try again in {seconds} s\n", status=429, mimetype="text/plain",
                    headers={"Retry-After": str(seconds)})


def login_required() -> Response:
    return Response("login required\n", status=401, mimetype="text/plain",
                    headers={"WWW-Authenticate": f'Basic realm="{REALM}", charset="UTF-8"'})


def install_login(server: Flask, users_file: Path | None, users_env: str = "") -> UserTable | None:
    """Require a login on every route but OPEN_PATHS when users are configured; None when off."""
    if users_file is None and not users_env.strip():
        return None
    table = UserTable(users_file, users_env)
    by_client, by_user = FailedLogins(), FailedLogins()

    def require_login() -> Response | None:
        if request.path in OPEN_PATHS and not request.query_string:  # `/health?verbose` says more: a login
            return None
        credentials = request.authorization  # None for a missing or malformed header
        if (credentials is None or credentials.type != "basic" or credentials.username is None
                or credentials.password is None):
            return login_required()  # no login tried (a browser's first request): not a failure
        user, password = credentials.username, credentials.password
        client = f"client:{request.remote_addr}"
        known_user = f"user:{user}" if user in table.users() else None
        wait = max(by_client.wait_seconds(client), by_user.wait_seconds(known_user) if known_user else 0.0)
        if wait > 0 and not table.recently_verified(user, password):
            return too_many_failures(wait)
        if not table.check(user, password):
            by_client.record(client)
            if known_user:
                by_user.record(known_user)
            log.warning("failed login for %r from %s", user, request.remote_addr)
            return login_required()
        return None

    def keep_private(response: Response) -> Response:
        # What needed a login must not be kept by a shared cache.
        if request.path in OPEN_PATHS or "no-store" in response.headers.get("Cache-Control", ""):
            return response
        response.cache_control.public = False
        response.cache_control.private = True
        return response

    # First in line: nothing else (Dash's own setup, the page router) runs for a stranger.
    server.before_request_funcs.setdefault(None, []).insert(0, require_login)
    server.after_request(keep_private)
    log.info("login required for %d user(s)%s", len(table.users()),
             f" from {users_file}" if users_file else "")
    return table
