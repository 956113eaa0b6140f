"""Runtime settings in one place: command line > environment > defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
DEFAULT_MAX_UPLOAD_MB = 2048
# Any other request body (a callback's state: never a file) is held in memory whole; this bounds it.
DEFAULT_MAX_REQUEST_MB = 16
# The budget of one ingest from the web: base + share per MB the parse reads (a gzip input measured by
# decompressing it as a stream, never from its trailer: dashboard/ingest/input_size.py).
# Measured here: a 52 MB Kineto trace parses in 1.2 s with a 250 MB peak (2 cores), so 1 s/MB and
# 10 MB/MB leave a slow machine or a heavier format ample room while a runaway parse is stopped.
DEFAULT_INGEST_SECONDS_BASE = 60.0
DEFAULT_INGEST_SECONDS_PER_MB = 1.0
DEFAULT_INGEST_MEMORY_MB_BASE = 1024.0
DEFAULT_INGEST_MEMORY_MB_PER_MB = 10.0
# Temporary disk of one ingest (its TMPDIR under the data folder and its staging folder): a gzip trace is
# decompressed to a file once (1x) beside its copy and its tables.
DEFAULT_INGEST_DISK_MB_BASE = 256.0
DEFAULT_INGEST_DISK_MB_PER_MB = 2.0
# A compressed input may expand to this many times its size (at least 64 MiB) before it is refused unread.
DEFAULT_INGEST_MAX_EXPANSION = 200.0


def _optional_float(name: str) -> float | None:
    value = os.environ.get(name, "").strip()
    return float(value) if value else None


def machine_memory_mb() -> float:
    """The machine's physical memory in MiB (4 GiB where it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    except (ValueError, OSError, AttributeError):
        return 4096.0


def worker_count() -> int:
    """How many server processes share the machine: DASHBOARD_WORKERS (set by server.worker), else gunicorn's
    WEB_CONCURRENCY, else 1."""
    for name in ("DASHBOARD_WORKERS", "WEB_CONCURRENCY"):
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


@dataclass(frozen=True)
class Settings:
    data_dir: Path = Path("data")
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    debug: bool = False
    # Uploads above this many MiB are refused with a clear message (HTTP 413).
    max_upload_mb: int = DEFAULT_MAX_UPLOAD_MB
    # Any other request's body (callbacks), in MiB: held in memory, so small (HTTP 413 above it).
    max_request_mb: int = DEFAULT_MAX_REQUEST_MB
    # Ingest the bundled demo into an empty data folder on start.
    seed_demo: bool = True
    # Login (HTTP basic auth) is on when either names users: a file of `user:<werkzeug hash>`
    # lines, and/or DASHBOARD_USERS="alice:<hash>,bob:<hash>" (see dashboard/server/auth.py).
    users_file: Path | None = None
    users: str = ""
    # Ingest budget of an upload (see dashboard/ingest/budget.py): a fixed limit when set
    # (DASHBOARD_INGEST_MAX_SECONDS / DASHBOARD_INGEST_MAX_MEMORY_MB, the same variables the
    # CLI's `ingest --max-seconds / --max-memory-mb` read; 0 = no limit), else base + per MB.
    ingest_max_seconds: float | None = None
    ingest_max_memory_mb: float | None = None
    ingest_seconds_base: float = DEFAULT_INGEST_SECONDS_BASE
    ingest_seconds_per_mb: float = DEFAULT_INGEST_SECONDS_PER_MB
    ingest_memory_mb_base: float = DEFAULT_INGEST_MEMORY_MB_BASE
    ingest_memory_mb_per_mb: float = DEFAULT_INGEST_MEMORY_MB_PER_MB
    ingest_max_disk_mb: float | None = None
    ingest_disk_mb_base: float = DEFAULT_INGEST_DISK_MB_BASE
    ingest_disk_mb_per_mb: float = DEFAULT_INGEST_DISK_MB_PER_MB
    ingest_max_expansion: float = DEFAULT_INGEST_MAX_EXPANSION
    # The URL users reach this server at (DASHBOARD_PUBLIC_URL, e.g. https://prof.example.org/dash when
    # a proxy serves it under a prefix). A page-PNG export's browser loads pages from it and from
    # nowhere else; unset, from the address the server is bound on.
    public_url: str = ""
    # Memory of one server process (a gunicorn worker), MiB (DASHBOARD_WORKER_MEMORY_MB): its caches of run
    # tables and view results are cut to fit it. Unset: 60 % of the machine's memory shared among the
    # workers (DASHBOARD_WORKERS, which server.worker sets, else WEB_CONCURRENCY, else 1).
    worker_memory_mb: float | None = None
    # The caches' share of it, MiB (DASHBOARD_CACHE_MB). Unset: the worker's budget less what the process
    # holds once started and a reserve for the page being computed (a quarter, at least 256 MiB).
    cache_mb: float | None = None
    # `dot` processes at once for the whole server, every worker together (figures/graphviz_runner.py).
    graphviz_running: int = 2

    def worker_memory_bytes(self) -> int:
        mb = self.worker_memory_mb or machine_memory_mb() * 0.6 / worker_count()
        return int(mb * 2**20)

    def cache_bytes(self, started_bytes: int) -> int:
        """The caches' budget, given what the process holds once started."""
        if self.cache_mb:
            return int(self.cache_mb * 2**20)
        worker = self.worker_memory_bytes()
        return max(64 * 2**20, worker - started_bytes - max(256 * 2**20, worker // 4))

    @classmethod
    def from_env(cls) -> Settings:
        """Settings from DASHBOARD_* environment variables, defaults elsewhere."""
        return cls(
            data_dir=Path(os.environ.get("DASHBOARD_DATA", "data")),
            host=os.environ.get("DASHBOARD_HOST", DEFAULT_HOST),
            port=int(os.environ.get("DASHBOARD_PORT", DEFAULT_PORT)),
            debug=os.environ.get("DASHBOARD_DEBUG", "") not in ("", "0", "false"),
            max_upload_mb=int(os.environ.get("DASHBOARD_MAX_UPLOAD_MB", DEFAULT_MAX_UPLOAD_MB)),
            max_request_mb=int(os.environ.get("DASHBOARD_MAX_REQUEST_MB", DEFAULT_MAX_REQUEST_MB)),
            seed_demo=os.environ.get("DASHBOARD_SEED_DEMO", "1") not in ("0", "false"),
            users_file=Path(os.environ["DASHBOARD_USERS_FILE"]) if os.environ.get("DASHBOARD_USERS_FILE") else None,
            users=os.environ.get("DASHBOARD_USERS", ""),
            ingest_max_seconds=_optional_float("DASHBOARD_INGEST_MAX_SECONDS"),
            ingest_max_memory_mb=_optional_float("DASHBOARD_INGEST_MAX_MEMORY_MB"),
            ingest_seconds_base=float(os.environ.get("DASHBOARD_INGEST_SECONDS_BASE", DEFAULT_INGEST_SECONDS_BASE)),
            ingest_seconds_per_mb=float(os.environ.get("DASHBOARD_INGEST_SECONDS_PER_MB",
                                                       DEFAULT_INGEST_SECONDS_PER_MB)),
            ingest_memory_mb_base=float(os.environ.get("DASHBOARD_INGEST_MEMORY_MB_BASE",
                                                       DEFAULT_INGEST_MEMORY_MB_BASE)),
            ingest_memory_mb_per_mb=float(os.environ.get("DASHBOARD_INGEST_MEMORY_MB_PER_MB",
                                                         DEFAULT_INGEST_MEMORY_MB_PER_MB)),
            ingest_max_disk_mb=_optional_float("DASHBOARD_INGEST_MAX_DISK_MB"),
            ingest_disk_mb_base=float(os.environ.get("DASHBOARD_INGEST_DISK_MB_BASE", DEFAULT_INGEST_DISK_MB_BASE)),
            ingest_disk_mb_per_mb=float(os.environ.get("DASHBOARD_INGEST_DISK_MB_PER_MB",
                                                       DEFAULT_INGEST_DISK_MB_PER_MB)),
            ingest_max_expansion=float(os.environ.get("DASHBOARD_INGEST_MAX_EXPANSION", DEFAULT_INGEST_MAX_EXPANSION)),
            public_url=os.environ.get("DASHBOARD_PUBLIC_URL", "").strip(),
            graphviz_running=int(os.environ.get("DASHBOARD_GRAPHVIZ_RUNNING", 2)),
            worker_memory_mb=_optional_float("DASHBOARD_WORKER_MEMORY_MB"),
            cache_mb=_optional_float("DASHBOARD_CACHE_MB"),
        )
