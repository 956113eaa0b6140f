"""The store the running app serves, reachable from page callbacks."""

from __future__ import annotations

from dash import ctx

from dashboard.jobs import IngestJobs
from dashboard.settings import Settings
from dashboard.store import RunStore

_state: dict[str, object] = {}


def configure(settings: Settings) -> RunStore:
    store = RunStore(settings.data_dir)
    _state["settings"] = settings
    _state["store"] = store
    _state["jobs"] = IngestJobs(store, settings)
    return store


def current_store() -> RunStore:
    store = _state.get("store")
    if not isinstance(store, RunStore):
        raise RuntimeError("the app is not configured: call dashboard.app.create_app first")
    return store


def current_jobs() -> IngestJobs:
    jobs = _state.get("jobs")
    if not isinstance(jobs, IngestJobs):
        raise RuntimeError("the app is not configured: call dashboard.app.create_app first")
    return jobs


def current_settings() -> Settings:
    settings = _state.get("settings")
    if not isinstance(settings, Settings):
        raise RuntimeError("the app is not configured: call dashboard.app.create_app first")
    return settings


def fired_ids() -> frozenset[str]:
    """The ids of every input that fired this callback call.

    When inputs change while a call is queued (a rank picked while the chart's
    relayout event is still on its way), Dash sends them in one call, and
    `ctx.triggered_id` names only the first: a callback that branches on it alone
    silently drops the others.
    """
    return frozenset(prop.rsplit(".", 1)[0] for prop in ctx.triggered_prop_ids)
