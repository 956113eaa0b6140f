"""What the running server serves (its run store, ingest jobs and settings), reachable from page callbacks,
and which inputs fired the callback being answered."""

from __future__ import annotations

from typing import TypeVar

from dash import ctx

from dashboard.ingest.jobs import IngestJobs
from dashboard.settings import Settings
from dashboard.store import RunStore

T = TypeVar("T")
_state: dict[str, object] = {}


def configure(settings: Settings) -> RunStore:
    store = RunStore(settings.data_dir)
    _state["settings"] = settings
    _state["store"] = store
    _state["jobs"] = IngestJobs(store, settings)
    return store


def _configured(key: str, kind: type[T]) -> T:
    value = _state.get(key)
    if not isinstance(value, kind):
        raise RuntimeError("the app is not configured: call dashboard.app.create_app first")
    return value


def current_store() -> RunStore:
    return _configured("store", RunStore)


def current_jobs() -> IngestJobs:
    return _configured("jobs", IngestJobs)


def current_settings() -> Settings:
    return _configured("settings", Settings)


def fired_ids() -> frozenset[str]:
    """The ids of every input that fired this callback call.

    When inputs change while a call is queued (a rank picked while the chart's
    relayout event is still on its way), Dash sends them in one call, and
    `ctx.triggered_id` names only the first: a callback that branches on it alone
    silently drops the others.
    """
    return frozenset(prop.rsplit(".", 1)[0] for prop in ctx.triggered_prop_ids)
