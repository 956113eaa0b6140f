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
    # `dot` processes at once for the whole server, every worker together (figures/graphviz_runner.py).
    graphviz_running: int = 2

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
        )
