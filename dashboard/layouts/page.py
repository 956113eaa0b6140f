"""Pieces every page uses: choosing its run, saying what is missing, charts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import dash_bootstrap_components as dbc
import plotly.graph_objects as go
from dash import dcc, html

from dashboard.layouts.run_warnings import run_warnings
from dashboard.layouts.server_state import current_store
from dashboard.schema import EVIDENCE_LABELS
from dashboard.store import Run, RunDamaged, RunNotFound

HOW_TO_GET: dict[str, list[Any]] = {
    "kernels": [
        "Ingest a PyTorch-profiler trace or an Nsight Systems SQLite export: ",
        html.Code("python -m dashboard.app ingest trace.pt.trace.json.gz"),
        ", or capture a script live on a GPU machine: ",
        html.Code("python -m dashboard.app capture -- train.py"),
        ". You can also upload a trace on the ",
        dcc.Link("Runs page", href="/"),
        ".",
    ],
    "layers": [
        "Layers and passes come from a PyTorch-profiler trace (ops, modules, autograd backward ops) "
        "or a live capture with torch: ",
        html.Code("python -m dashboard.app capture -- train.py"),
        ".",
    ],
    "memory": [
        "Ingest a Tenstorrent runtime log or a memory-profiler run folder "
        "(<script>_<YYYYMMDD_HHMMSS>/ with *_memory.json and *_operations.json): ",
        html.Code("python -m dashboard.app ingest logs/mochi_20260122_143957"),
        ".",
    ],
    "cuda_memory": [
        "Profile with torch.profiler(profile_memory=True) and ingest the trace, or ingest an allocator "
        "snapshot: ",
        html.Code("torch.cuda.memory._record_memory_history(); …; torch.cuda.memory._dump_snapshot('s.pickle')"),
        ", or tinygrad's VIZ files (",
        html.Code("VIZ=-1 python train.py"),
        " writes profile.pkl).",
    ],
    "planner": [
        "Ingest a TRITON_DUMP_WS_GRAPHS folder, a Triton debug log holding the planner's DOT blocks, "
        "or any DOT file: ",
        html.Code("python -m dashboard.app ingest ws_graphs/"),
        ".",
    ],
    "compiler": [
        "Ingest Triton's pass dumps (MLIR_ENABLE_DUMP=1 ... 2> dump.txt), an LLVM_IR_ENABLE_DUMP log, or a Triton "
        "cache folder, or compile a script under capture (no GPU needed with an explicit GPUTarget): ",
        html.Code("python -m dashboard.app compile-capture -- my_kernels.py"),
        ".",
    ],
}


def page_href(path: str, run_id: str | None, **params: Any) -> str:
    """A link to a page of the app with its run and view state in the query string."""
    query = {"run": run_id, **params}
    query = {k: v for k, v in query.items() if v not in (None, "", [])}
    return f"{path}?{urlencode(query)}" if query else path


# The evidence each page needs, for choosing its default run.
PAGE_EVIDENCE = {"/insights": "kernels", "/kernels": "kernels", "/layers": "layers", "/timeline": "kernels",
                 "/memory": "memory", "/planner": "planner", "/compare": "kernels", "/compiler": "compiler",
                 "/ranks": "kernels"}


def default_run_for_path(pathname: str | None) -> str | None:
    """The run a page opens when its URL names none: the newest with the page's evidence."""
    evidence = PAGE_EVIDENCE.get((pathname or "").rstrip("/"))
    candidates = _runs_with(evidence) if evidence else []
    return candidates[0] if candidates else None


def _runs_with(evidence: str) -> list[str]:
    return [info.id for info in current_store().list_runs() if evidence in info.evidence]


def missing_notice(message: str, evidence: str, page_path: str) -> html.Div:
    """Plain words for a page that has nothing to show, with how to get it."""
    alternatives = _runs_with(evidence)[:5]
    items: list[Any] = [html.H5(message, className="alert-heading"), html.P(HOW_TO_GET.get(evidence, []))]
    if alternatives:
        items.append(html.P(["Runs that have it: "] + [
            dcc.Link(run_id, href=page_href(page_path, run_id), className="me-3") for run_id in alternatives
        ]))
    return html.Div(dbc.Alert(items, color="info", className="mt-3"), className="missing-evidence")


def unopened_notice(run_id: str, error: RunNotFound, evidence: str, page_path: str) -> html.Div:
    """What a page says for a run it cannot open: there is none by that name, or it is damaged (its line)."""
    if isinstance(error, RunDamaged):
        notice = missing_notice(f"Run “{run_id}” is damaged: {error.reason}.", evidence, page_path)
        notice.className = "missing-evidence run-damaged"
        return notice
    return missing_notice(f"There is no run named “{run_id}”.", evidence, page_path)


def resolve_run(run_id: str | None, evidence: str, page_path: str) -> tuple[Run | None, html.Div | None]:
    """The run a page shows: the one in the URL, else the newest run with the page's evidence.

    Returns (run, None) or (None, a notice saying what is missing and how to get it).
    """
    store = current_store()
    label = EVIDENCE_LABELS.get(evidence, evidence)
    if run_id:
        try:
            run = store.open(run_id)
        except RunNotFound as exc:
            return None, unopened_notice(run_id, exc, evidence, page_path)
        if not run.has_evidence(evidence):
            return None, missing_notice(f"Run “{run_id}” has no {label}.", evidence, page_path)
        return run, None
    candidates = _runs_with(evidence)
    if not candidates:
        return None, missing_notice(f"No run has {label} yet.", evidence, page_path)
    return store.open(candidates[0]), None


PageBody = Callable[[Run, html.Div, dict[str, Any]], html.Div]


def run_page(page_id: str, title: str, subtitle: str, evidence: str, page_path: str,
             also: str | None = None) -> Callable[[PageBody], Callable[..., html.Div]]:
    """A page's `layout(run=None, **query)` from its body `(run, header, query) -> Div`.

    The run is the URL's, else the newest with the page's evidence (`also`: a second evidence kind that
    serves too); without one the page is its header and a notice saying what is missing and how to get it.
    """
    def decorate(body: PageBody) -> Callable[..., html.Div]:
        def layout(run: str | None = None, **query: Any) -> html.Div:
            chosen, notice = resolve_run(run, evidence, page_path)
            if chosen is None and also is not None:
                chosen, _ = resolve_run(run, also, page_path)
            header = page_header(title, chosen, subtitle)
            if chosen is None:
                return html.Div([header, notice], id=f"{page_id}-page")
            return body(chosen, header, query)
        layout.__doc__ = body.__doc__
        return layout
    return decorate


def page_header(title: str, run: Run | None, subtitle: str = "") -> html.Div:
    """Title, the run shown, and the run's downloads (trace, CSVs, sources) on the right."""
    from dashboard.layouts.downloads import run_downloads  # imports the export routes

    badge = dbc.Badge(run.id, color="secondary", className="ms-2 run-badge") if run else None
    heading = html.Div([html.H3([title, badge], className="mb-0"), html.Small(subtitle, className="text-muted"),
                        run_warnings(run, title)])
    # export.js completes both links from the address bar (the view state) at click time.
    export = html.A("Export page as PNG", href="#", download="", className="btn btn-sm btn-outline-secondary "
                    "export-page-png", title="This page as you see it, full height, in one PNG",
                    **{"data-run": run.id}) if run else None
    charts = html.A("charts (zip)", href="#", download="", className="btn btn-sm btn-link me-2 export-chart-pngs",
                    title="Every chart of this page as its own PNG (2x), captioned with run and view, in a zip",
                    **{"data-run": run.id}) if run else None
    actions = html.Div([export, charts, run_downloads(run.id)] if run else None, className="page-actions d-flex")
    return html.Div([heading, actions],
                    className="page-header mb-3 d-flex justify-content-between align-items-start")


def graph_config(filename: str) -> dict[str, Any]:
    """Plotly toolbar: PNG download at 2x with a meaningful name; no logo."""
    return {
        "displaylogo": False,
        "responsive": True,
        "toImageButtonOptions": {"format": "png", "scale": 2, "filename": filename},
    }


def chart(component_id: Any, figure: go.Figure | None, filename: str, height: int | None = None,
          **graph_props: Any) -> dcc.Graph:
    """A plotly chart with the app's toolbar settings."""
    style = {"height": f"{height}px"} if height else {}
    return dcc.Graph(id=component_id, figure=figure if figure is not None else go.Figure(),
                     config=graph_config(filename), style=style, **graph_props)


def small_table(header: list[str], rows: list[list[Any]], table_id: str | None = None) -> dbc.Table:
    """A compact striped table of plain cells ("–" for a missing value)."""
    body = [html.Tr([html.Td("–" if cell is None else cell) for cell in row]) for row in rows]
    props = {"id": table_id} if table_id else {}
    return dbc.Table([html.Thead(html.Tr([html.Th(h) for h in header])), html.Tbody(body)], size="sm",
                     striped=True, className="small mb-2", **props)
