"""A run's ingest warnings where its evidence is shown: rows dropped, data not read.

Ingest never keeps an impossible row silently; it drops it and says so in
`run.json` (`warnings`). A page built on that evidence repeats the warnings
that concern it, so a total on the kernels page is read knowing that 144
kernels were left out. Which warnings concern a page follows from the words
the collectors use for their rows (kernels, copies, ranges, ...); a warning
that names none of them (a file not recognised, no GPU kernels at all)
concerns every page.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import dash_bootstrap_components as dbc
from dash import html

from dashboard.store import Run, RunInfo

# The words by which a warning concerns a kind of evidence.
_EVIDENCE_WORDS: dict[str, re.Pattern[str]] = {
    "kernels": re.compile(r"\b(kernels?|cop(y|ies)|memsets?|GPU|API calls?|runtime calls?|correlation|"
                          r"devices?|streams?|`pid`|`tid`)\b", re.IGNORECASE),
    "layers": re.compile(r"\b(ranges?|ops?|CPU|annotations?|layers?|pass(es)?|Python functions?|flow events|"
                         r"stack frames?|instants?)\b", re.IGNORECASE),
    "memory": re.compile(r"\b(memory|op_memory|op_meta|operations?|buffer types?|DRAM|L1|runtime log|"
                         r"deallocate)\b", re.IGNORECASE),
    "planner": re.compile(r"\b(DOT|graphs?|planner|buffers?|channels?|digraph|blocks?|SMEM|TMEM)\b",
                          re.IGNORECASE),
}

# Page titles (as given to `page_header`) and the evidence they show.
PAGE_EVIDENCE: dict[str, tuple[str, ...]] = {
    "Kernels": ("kernels",),
    "Compare": ("kernels",),
    "Ranks": ("kernels",),
    "Timeline": ("kernels", "layers"),
    "Layers": ("layers",),
    "Memory": ("memory",),
    "Planner": ("planner",),
}


def relevant_warnings(warnings: Sequence[str], evidence: Sequence[str] | None) -> list[str]:
    """The warnings that concern pages of `evidence` (all of them when None)."""
    if evidence is None:
        return list(warnings)
    chosen = [_EVIDENCE_WORDS[kind] for kind in evidence if kind in _EVIDENCE_WORDS]
    return [
        warning for warning in warnings
        if any(words.search(warning) for words in chosen)
        or not any(words.search(warning) for words in _EVIDENCE_WORDS.values())
    ]


def _item(warning: str) -> html.Li:
    # `FILE: what` with FILE cut to its name: the full path is in run.json and in the CLI output.
    source, separator, text = warning.partition(": ")
    if not separator or not ("/" in source or "." in source):  # not a file name: show the line as it is
        return html.Li(warning)
    return html.Li([html.Code(Path(source.split(" (")[0]).name or source, title=source), ": ", text])


def warnings_details(info: RunInfo, evidence: Sequence[str] | None = None, open_: bool = False) -> html.Details | None:
    """A collapsed `⚠ N ingest warnings` line that opens to the list; None when there are none."""
    shown = relevant_warnings(info.warnings, evidence)
    if not shown:
        return None
    count = f"{len(shown)} ingest warning{'s' if len(shown) != 1 else ''}"
    summary = html.Summary([dbc.Badge(f"⚠ {count}", color="warning", text_color="dark", className="me-2"),
                            html.Span("rows dropped or data not read when this run was ingested",
                                      className="small text-muted")])
    return html.Details([summary, html.Ul([_item(w) for w in shown], className="small mb-0 mt-1")],
                        open=open_, className="run-warnings mb-2", **{"data-run": info.id})


def run_warnings(run: Run | None, page_title: str | None = None) -> html.Details | None:
    """The warnings of `run` that concern the page called `page_title` (every warning for other pages)."""
    if run is None:
        return None
    return warnings_details(run.info, PAGE_EVIDENCE.get(page_title or ""))


def runs_warnings_overview(infos: Sequence[RunInfo]) -> html.Div | None:
    """For the runs page: one collapsed list per run that has warnings."""
    blocks = []
    for info in infos:
        details = warnings_details(info)
        if details is not None:
            details.children[0].children.insert(0, html.Strong(info.id, className="me-2"))
            blocks.append(details)
    if not blocks:
        return None
    return html.Div([html.H6("Ingest warnings", className="mt-3"), *blocks], className="runs-warnings")
