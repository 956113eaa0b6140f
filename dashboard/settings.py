"""Runtime settings in one place: command line > environment > defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
DEFAULT_MAX_UPLOAD_MB = 2048


@dataclass(frozen=True)
class Settings:
    data_dir: Path = Path("data")
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    debug: bool = False
    # Uploads above this many MiB are refused with a clear message (HTTP 413).
    max_upload_mb: int = DEFAULT_MAX_UPLOAD_MB
    # Ingest the bundled demo into an empty data folder on start.
    seed_demo: bool = True
    # Login (HTTP basic auth) is on when either names users: a file of `user:<werkzeug hash>`
    # lines, and/or DASHBOARD_USERS="alice:<hash>,bob:<hash>" (see dashboard/auth.py).
    users_file: Path | None = None
    users: str = ""

    @classmethod
    def from_env(cls) -> Settings:
        """Settings from DASHBOARD_* environment variables, defaults elsewhere."""
        return cls(
            data_dir=Path(os.environ.get("DASHBOARD_DATA", "data")),
            host=os.environ.get("DASHBOARD_HOST", DEFAULT_HOST),
            port=int(os.environ.get("DASHBOARD_PORT", DEFAULT_PORT)),
            debug=os.environ.get("DASHBOARD_DEBUG", "") not in ("", "0", "false"),
            max_upload_mb=int(os.environ.get("DASHBOARD_MAX_UPLOAD_MB", DEFAULT_MAX_UPLOAD_MB)),
            seed_demo=os.environ.get("DASHBOARD_SEED_DEMO", "1") not in ("0", "false"),
            users_file=Path(os.environ["DASHBOARD_USERS_FILE"]) if os.environ.get("DASHBOARD_USERS_FILE") else None,
            users=os.environ.get("DASHBOARD_USERS", ""),
        )
