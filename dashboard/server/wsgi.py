"""The WSGI entry point for a team server: `gunicorn -w 4 -b 0.0.0.0:8050 dashboard.server.wsgi:server`.

Settings come from DASHBOARD_* environment variables (DASHBOARD_DATA,
DASHBOARD_MAX_UPLOAD_MB, DASHBOARD_USERS_FILE, DASHBOARD_USERS,
DASHBOARD_SEED_DEMO, the ingest budget DASHBOARD_INGEST_*: see settings.py);
gunicorn's own -b decides the address, so DASHBOARD_HOST / DASHBOARD_PORT
are not read here (and its `Server:` header says only "gunicorn", no
version). Uploads are parsed in child processes (dashboard/ingest/budget.py),
so a slow parse holds no worker. Each worker builds its own
app on the shared data folder: what a worker caches (opened runs, keyed by
run.json's mtime) is checked against the disk, ingest job status lives in
files, and demo seeding takes a file lock. Do not use gunicorn's --preload:
polars' thread pool does not survive a fork.
"""

from __future__ import annotations

from dashboard.app import create_app
from dashboard.settings import Settings

app = create_app(Settings.from_env())
server = app.server
