"""/timeline's controls beyond the shared ones: the search bar, colour and flow choices, the lane pickers,
the keys hint and the details pane beside the chart (filled from `views.timeline_details.Pane`)."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import dcc, html

from dashboard.analysis.timeline_search import MAX_PATTERN
from dashboard.layouts.select import multi_picker, multi_picker_summary
from dashboard.views.timeline_details import Pane

KEYS_HINT = ("Keys as in Perfetto: W / S zoom in / out around the pointer, A / D pan, Ctrl + wheel zooms, "
             "Shift + wheel pans, F fits the selected event, 0 shows the whole run; the chart redraws at once and "
             "fetches finer detail when you stop. Drag to zoom into a window (it carries to Kernels and Layers), "
             "double-click for the whole run. Click a bar for its details and arrows.")


def search_bar(find: str | None, regex: bool, answer: str) -> html.Div:
    """The find box, its regex switch, previous / next, and the answer (`3 / 120 matches`)."""
    return html.Div([
        dbc.InputGroup([
            dbc.InputGroupText("Find"),
            # Case-insensitive: a substring, or a regular expression with `.*` ticked.
            dbc.Input(id="timeline-find", type="search", value=find or "", debounce=True, maxLength=MAX_PATTERN,
                      placeholder="kernel, op, range, API call… (Enter)", style={"width": "300px"}),
            dbc.InputGroupText(html.Span(dbc.Checkbox(id="timeline-regex", value=regex, label="regex",
                                                      class_name="mb-0", label_class_name="small"),
                                         title="a regular expression (otherwise a substring); any case")),
            dbc.Button("◀", id="timeline-prev", color="secondary", outline=True, title="previous match"),
            dbc.Button("▶", id="timeline-next", color="secondary", outline=True, title="next match"),
        ], size="sm", className="me-2", style={"width": "auto"}),
        html.Span(answer, id="timeline-find-answer", className="small text-muted"),
    ], className="d-flex align-items-center me-4")


def view_choices(colour: str, flows: str) -> html.Div:
    """Colour by kernel or by category; launch arrows of the window auto / on / off."""
    return html.Div([
        dbc.Label("Colour", html_for="timeline-colour", className="me-2 mb-0 small text-muted"),
        dbc.RadioItems(id="timeline-colour", value=colour, inline=True, className="small me-3",
                       options=[{"label": "by kernel", "value": "kernel"},
                                {"label": "by category", "value": "category"}]),
        dbc.Label("Flows", html_for="timeline-flows", className="me-2 mb-0 small text-muted"),
        dbc.RadioItems(id="timeline-flows", value=flows, inline=True, className="small",
                       options=[{"label": "auto", "value": "auto"}, {"label": "on", "value": "on"},
                                {"label": "off", "value": "off"}]),
    ], className="d-flex align-items-center me-4")


def lane_options(tracks: list[dict[str, Any]]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(every track, the tracks with several rows): the options of the pin and fold pickers."""
    options = [{"label": track["label"], "value": track["id"]} for track in tracks]
    foldable = [{"label": track["label"], "value": track["id"]} for track in tracks if track.get("rows", 1) > 1]
    return options, foldable


PIN_PLACEHOLDER, FOLD_PLACEHOLDER = "lanes…", "threads with depth rows…"
multi_picker_summary("timeline-pin", PIN_PLACEHOLDER)
multi_picker_summary("timeline-fold", FOLD_PLACEHOLDER)


def lane_pickers(tracks: list[dict[str, Any]], pinned: tuple[str, ...], folded: tuple[str, ...]) -> html.Div:
    """Pin tracks to the top and fold a thread's depth rows into one: both in the URL."""
    options, foldable = lane_options(tracks)
    return html.Div([
        dbc.Label("Pin to top", html_for="timeline-pin", className="me-2 mb-0 small text-muted"),
        multi_picker("timeline-pin", options, pinned, placeholder=PIN_PLACEHOLDER, min_width="260px",
                     class_name="me-3"),
        dbc.Label("Fold", html_for="timeline-fold", className="me-2 mb-0 small text-muted"),
        multi_picker("timeline-fold", foldable, folded, placeholder=FOLD_PLACEHOLDER, min_width="260px"),
    ], className="d-flex flex-wrap align-items-center gap-1 mb-2")


def _rows(rows: list[tuple[str, str]], class_name: str = "") -> html.Table:
    return html.Table(html.Tbody([html.Tr([html.Th(label, className="pe-2 fw-normal text-muted"),
                                           html.Td(value, className="text-break")]) for label, value in rows]),
                      className=f"table table-sm small mb-2 {class_name}")


def _section(title: str, body: Any) -> html.Div:
    return html.Div([html.Div(title, className="small fw-semibold mt-2 mb-1"), body])


def pane_body(pane: Pane | None) -> list[Any]:
    """The details pane's content for one event (nothing without one)."""
    if pane is None:
        return []
    parts: list[Any] = [
        html.Div(pane.kind, className="small text-muted"),
        html.H6(pane.title, className="mb-1 text-break", id="timeline-details-title"),
        html.Div(pane.name, className="small text-muted text-break mb-2") if pane.name != pane.title else None,
        _rows(pane.facts, "timeline-facts"),
    ]
    if pane.launch:
        parts.append(_section("Launched by", _rows(pane.launch)))
    if pane.chain:
        parts.append(_section("Op chain (outermost first)", html.Div([html.Ol(
            [html.Li([html.Span(name, className="text-break"), html.Br(), html.Small(detail, className="text-muted")])
             for name, detail in pane.chain], className="small ps-3 mb-1", id="timeline-op-chain"),
            html.Div(pane.chain_note, className="small text-muted mb-2") if pane.chain_note else None])))
    if pane.stack:
        parts.append(_section("Python stack", html.Ol([html.Li(frame) for frame in pane.stack],
                                                       className="small ps-3 mb-2 font-monospace")))
    if pane.launched:
        parts.append(_section("Launched", html.Div([
            html.Div(pane.launched_note, className="small mb-1"),
            html.Table([html.Thead(html.Tr([html.Th("kernel / copy"), html.Th("launches"), html.Th("GPU time")])),
                        html.Tbody([html.Tr([html.Td(name, className="text-break"), html.Td(count), html.Td(time)])
                                    for name, count, time in pane.launched])],
                       className="table table-sm small mb-2", id="timeline-launched")])))
    if pane.links:
        parts.append(html.Div([dcc.Link(label, href=href, className="d-block small") for label, href in pane.links],
                              className="mb-2"))
    parts.append(html.Details([html.Summary("Every stored column", className="small"), _rows(pane.record)]))
    return [part for part in parts if part is not None]


def details_pane(pane: Pane | None) -> html.Div:
    """The pane beside the chart; hidden without a selected event."""
    return html.Div([
        html.Div([
            html.Span("Details", className="fw-semibold"),
            html.Div([
                dbc.Button("highlight all", id="timeline-highlight", size="sm", color="link", className="p-0 me-2",
                           title="Highlight every launch of this kernel (grey the others)"),
                dbc.Button("✕", id="timeline-details-close", size="sm", color="link", className="p-0",
                           title="Close (deselect)"),
            ]),
        ], className="d-flex justify-content-between align-items-center mb-1"),
        html.Div(pane_body(pane), id="timeline-details-body"),
    ], id="timeline-details", className="timeline-details chart-card",
        style={} if pane is not None else {"display": "none"})
