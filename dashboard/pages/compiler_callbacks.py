"""Callbacks of `/compiler`: controls and clicks -> the URL state -> every panel.

One callback folds every input (dropdowns, chart click, line clicks) into the
view state; one renders the state. The render sends only the visible step's
text, the diff, and the mapped lines of the other stages.
"""

from __future__ import annotations

from functools import lru_cache
from html import escape as html_escape
from typing import Any

import dash
from dash import Input, Output, State, callback, clientside_callback, ctx, dcc, html

from dashboard.analysis import compiler as view
from dashboard.analysis.compiler_memory import memory_plan, module_totals
from dashboard.figures.compiler import mark_steps, memory_plan_figure, pass_chart
from dashboard.layouts.ir_code import code_html, excerpt_html, side_by_side_html, unified_html
from dashboard.layouts.page import page_href
from dashboard.layouts.shell import URL_STATE
from dashboard.pages.compiler_parts import (
    compiler_data,
    ir_text,
    profile_runs_with_kernel,
    python_source,
    text_locations,
)

STATE = {"type": URL_STATE, "page": "compiler"}


def next_state(run_id: str, state: dict[str, Any], trigger: Any, compile_value: Any, step_value: Any,
               compare_value: Any, view_value: Any, chart_click: Any, line_click: Any) -> dict[str, Any]:
    """The view state after one input changed."""
    data = compiler_data(run_id)
    new = dict(state)
    if trigger == "compiler-compile" and compile_value is not None and compile_value != state.get("compile"):
        new.update(compile=int(compile_value), step=0, cmp="")
    elif trigger == "compiler-step" and step_value is not None:
        new.update(step=int(step_value), cmp="" if int(step_value) != state.get("step") else state.get("cmp", ""))
    elif trigger == "compiler-compare" and compare_value is not None:
        new["cmp"] = compare_value
    elif trigger == "compiler-view" and view_value:
        new["view"] = view_value
    elif trigger == "compiler-pass-chart" and chart_click and chart_click.get("points"):
        new.update(step=int(chart_click["points"][0]["x"]), cmp="")
    elif trigger == "compiler-click" and line_click:
        if line_click.get("kind") == "py":
            new["pyline"] = int(line_click["line"])
        elif line_click.get("text") is not None:
            locs = text_locations(run_id, int(line_click["text"]), line_click.get("stage") or "ttir")
            found = view.python_line_for(locs, int(line_click["line"]), _kernel_file(data, new.get("compile")))
            if found is not None:
                new["pyline"] = found[1]
    return new


def _kernel_file(data: Any, compile_index: Any) -> str | None:
    row = data.kernels.filter(data.kernels["compile"] == compile_index)
    return row["python_file"][0] if row.height else None


@callback(
    Output(STATE, "data"),
    Input("compiler-compile", "value"),
    Input("compiler-step", "value"),
    Input("compiler-compare", "value"),
    Input("compiler-view", "value"),
    Input("compiler-pass-chart", "clickData"),
    Input("compiler-click", "data"),
    State(STATE, "data"),
    State("compiler-run", "data"),
    prevent_initial_call=True,
)
def update_state(compile_value: Any, step_value: Any, compare_value: Any, view_value: Any, chart_click: Any,
                 line_click: Any, state: dict[str, Any], run_id: str) -> Any:
    new = next_state(run_id, state or {}, ctx.triggered_id, compile_value, step_value, compare_value, view_value,
                     chart_click, line_click)
    return dash.no_update if new == state else new


RENDER_OUTPUTS = ("step_options", "step", "compare_options", "compare", "chart", "summary", "python",
                  "python_note", "stages", "stages_note", "ir", "ir_note", "diff", "diff_note")


@callback(
    Output("compiler-step", "options"),
    Output("compiler-step", "value"),
    Output("compiler-compare", "options"),
    Output("compiler-compare", "value"),
    Output("compiler-pass-chart", "figure"),
    Output("compiler-step-summary", "children"),
    Output("compiler-python", "children"),
    Output("compiler-python-note", "children"),
    Output("compiler-stages", "children"),
    Output("compiler-stages-note", "children"),
    Output("compiler-ir", "children"),
    Output("compiler-ir-note", "children"),
    Output("compiler-diff", "children"),
    Output("compiler-diff-note", "children"),
    Input(STATE, "data"),
    State("compiler-run", "data"),
    prevent_initial_call=True,
)
def render_state(state: dict[str, Any], run_id: str) -> tuple[Any, ...]:
    parts = render(run_id, state or {})
    return tuple(parts[name] for name in RENDER_OUTPUTS)


def render(run_id: str, state: dict[str, Any]) -> dict[str, Any]:
    """Every panel's content for one view state (pure apart from the cached reads)."""
    data = compiler_data(run_id)
    compile_index = view.choose_compile(data.kernels, state.get("compile"))
    steps = view.compile_steps(data.steps, compile_index) if compile_index is not None else data.steps.head(0)
    step = view.choose_step(steps, state.get("step"))
    kernel_row = data.kernels.filter(data.kernels["compile"] == compile_index).row(0, named=True) \
        if compile_index is not None else {}
    out: dict[str, Any] = {"step": step, "compare": state.get("cmp") or ""}
    out["step_options"] = [{"label": view.step_label(row), "value": row["step"]} for row in steps.iter_rows(named=True)]
    out["compare_options"] = view.compare_options(data.steps, data.kernels, compile_index, step) \
        if compile_index is not None else []
    if steps.is_empty():
        empty = {name: "" for name in RENDER_OUTPUTS}
        return {**empty, **out, "chart": pass_chart(steps, None, None, "")}
    row = steps.row(step, named=True)
    compared = view.parse_compare(state.get("cmp"), compile_index, step)
    if compared is not None and compared.compile not in data.kernels["compile"].to_list():
        compared = None
    other_steps = steps if compared is None or compared.compile == compile_index else \
        view.compile_steps(data.steps, compared.compile)
    if compared is not None and not 0 <= compared.step < other_steps.height:
        compared = None
    out["chart"] = mark_steps(base_chart(run_id, compile_index), step,
                              compared.step if compared and compared.compile == compile_index else None)
    out["summary"] = _summary(row)
    text = ir_text(run_id, row["text_id"]) if row["text_id"] is not None else ""
    locs = text_locations(run_id, row["text_id"], row["stage"]) if row["text_id"] is not None else None
    kernel_file = kernel_row.get("python_file")
    pyline = state.get("pyline")
    marked = view.ir_lines_for(locs, kernel_file, pyline) if locs is not None and pyline else []
    out["ir"], (first, last, total) = code_html(text, set(marked), text_id=row["text_id"], stage=row["stage"]) \
        if text else ("*(no text: a binary stage file)*", (0, 0, 0))
    out["ir_note"] = (f"{row['stage']} · {row['lines'] or 0} lines · {row['ops'] or 0} ops"
                      + (f" · {len(marked)} lines from Python line {pyline}" if pyline else "")
                      + (f" · lines {first}–{last} of {total} shown (download for all)" if last - first + 1 < total
                         else ""))
    out["diff"], out["diff_note"] = _diff(run_id, state, row, text, compared, other_steps)
    out["python"], out["python_note"] = _python(run_id, kernel_file, pyline, locs)
    out["stages"], out["stages_note"] = _stages(run_id, steps, kernel_file, pyline)
    return out


@callback(
    Output("compiler-memory", "figure"),
    Output("compiler-links", "children"),
    Input("compiler-compile", "value"),
    State("compiler-run", "data"),
    prevent_initial_call=True,
)
def render_compile(compile_value: Any, run_id: str) -> tuple[Any, Any]:
    """What depends on the compile alone: its memory plan and the links to other pages."""
    data = compiler_data(run_id)
    compile_index = view.choose_compile(data.kernels, compile_value)
    if compile_index is None:
        return memory_plan_figure(memory_plan(""), {}, ""), []
    kernel_row = data.kernels.filter(data.kernels["compile"] == compile_index).row(0, named=True)
    return memory_chart(run_id, compile_index), _links(run_id, data, kernel_row)


@lru_cache(maxsize=32)
def base_chart(run_id: str, compile_index: int) -> dict[str, Any]:
    """The pass chart of one compile without a selection, as a plotly dict (never mutated: see mark_steps)."""
    data = compiler_data(run_id)
    row = data.kernels.filter(data.kernels["compile"] == compile_index).row(0, named=True)
    steps = view.compile_steps(data.steps, compile_index)
    figure = pass_chart(steps, None, None, f"Passes of {view.compile_label(row)}")
    return figure.to_plotly_json()


def _summary(row: dict[str, Any]) -> Any:
    what = {"before": "IR before", "after": "IR after", "failed": "IR after the FAILED pass",
            "internal": "SoftwarePipeliner snapshot", "file": "stage file"}.get(row["kind"], row["kind"])
    changed = "changed by the previous pass" if row["changed"] else "unchanged from the previous snapshot"
    return [html.Strong(f"Step {row['step']}: "), f"{what} {row['pass_name'] or row['stage']}",
            html.Code(f" {row['pass_arg']}", className="ms-1") if row["pass_arg"] else None,
            f" · {changed}" if row["kind"] != "file" else "", f" · {row['source']}"
            + (f":{row['source_line']}" if row["source_line"] else "")]


def _diff(run_id: str, state: dict[str, Any], row: dict[str, Any], text: str, compared: Any,
          other_steps: Any) -> tuple[str, str]:
    if compared is None:
        return "*(the first step: nothing before it to compare with)*", ""
    other = other_steps.row(compared.step, named=True)
    before = ir_text(run_id, other["text_id"]) if other["text_id"] is not None else ""
    left = f"#{compared.compile} step {compared.step} ({other['pass_name'] or other['stage']})"
    right = f"#{row['compile']} step {row['step']} ({row['pass_name'] or row['stage']})"
    diff = cached_diff(run_id, other["text_id"], row["text_id"], left, right) if before or text else None
    if diff is None:
        return "*(no text to compare)*", ""
    note = (f"{left} → {right}: −{diff.removed} / +{diff.added} lines" if diff.removed or diff.added
            else f"{left} → {right}: identical")
    if state.get("view") == "side":
        return side_by_side_html(diff.side, left, right), note
    return unified_html(diff.unified), note


@lru_cache(maxsize=64)
def cached_diff(run_id: str, before_id: int | None, after_id: int | None, left: str, right: str) -> view.Diff:
    before = ir_text(run_id, before_id) if before_id is not None else ""
    after = ir_text(run_id, after_id) if after_id is not None else ""
    return view.diff_texts(before, after, left, right)


def _python(run_id: str, kernel_file: str | None, pyline: int | None, locs: Any) -> tuple[str, str]:
    mapped = set(locs.filter(locs["file"] == kernel_file)["line"].to_list()) if locs is not None and kernel_file \
        else set()
    source = python_source(run_id, kernel_file) if kernel_file else None
    if source is not None:
        body, _ = code_html("\n".join(source), {pyline} if pyline else set(), "data-py-line", faint=mapped)
        return body, f"{kernel_file} · blue numbers: lines with IR at this step"
    if locs is None or locs.is_empty():
        return "*(no source locations in this IR)*", ""
    pairs = sorted({(f, n) for f, n in zip(locs["file"], locs["line"], strict=True) if f == kernel_file} or
                   set(zip(locs["file"], locs["line"], strict=True)))
    rows = "".join(f'<span class="code-line{" hl" if n == pyline else ""}" data-py-line="{n}">'
                   f'<span class="ln">{n}</span>{html_escape(f.rsplit("/", 1)[-1])}:{n}</span>' for f, n in pairs)
    return f'<pre class="ir-code">{rows}</pre>', f"{kernel_file or 'source'} is not readable here: locations only"


def _stages(run_id: str, steps: Any, kernel_file: str | None, pyline: int | None) -> tuple[str, str]:
    if not pyline:
        return "*Click a Python line (or an IR line) to see its IR in every stage.*", ""
    blocks, found = [], 0
    for snapshot in view.stage_snapshots(steps).iter_rows(named=True):
        locs = text_locations(run_id, snapshot["text_id"], snapshot["stage"])
        lines = view.ir_lines_for(locs, kernel_file, pyline)
        if not lines:
            continue
        found += 1
        blocks.append(f'<div class="small fw-bold mt-1">{snapshot["stage"]} (step {snapshot["step"]}): '
                      f"{len(lines)} lines</div>")
        blocks.append(excerpt_html(ir_text(run_id, snapshot["text_id"]), lines, "data-ir-line", snapshot["stage"],
                                   snapshot["text_id"]))
    return "".join(blocks) or "*(no IR line maps to this Python line)*", f"Python line {pyline}: IR in {found} stages"


@lru_cache(maxsize=32)
def memory_chart(run_id: str, compile_index: int) -> Any:
    steps = view.compile_steps(compiler_data(run_id).steps, compile_index)
    ttgir = steps.filter((steps["stage"] == "ttgir") & steps["text_id"].is_not_null() & (steps["kind"] != "internal"))
    title = "Shared / tensor memory plan of the final TTGIR (offset × op)"
    if ttgir.is_empty():
        return memory_plan_figure(memory_plan(""), {}, title)
    last = ttgir.row(ttgir.height - 1, named=True)
    text = ir_text(run_id, last["text_id"])
    return memory_plan_figure(memory_plan(text), module_totals(text), f"{title}, step {last['step']}")


def _links(run_id: str, data: Any, kernel_row: dict[str, Any]) -> list[Any]:
    links: list[Any] = []
    if data.has_planner:
        links += ["The same log holds warp-specialization planner graphs: ",
                  dcc.Link("open /planner", href=page_href("/planner", run_id), className="me-3")]
    kernel = kernel_row.get("kernel")
    if kernel:
        runs = profile_runs_with_kernel(kernel)
        if runs:
            links.append(f"Profiles with {kernel}: ")
            links += [dcc.Link(other, href=page_href("/kernels", other), className="me-2") for other in runs[:5]]
    return links


@callback(
    Output("compiler-download", "data"),
    Input("compiler-download-button", "n_clicks"),
    State(STATE, "data"),
    State("compiler-run", "data"),
    prevent_initial_call=True,
)
def download_step(_clicks: int, state: dict[str, Any], run_id: str) -> Any:
    data = compiler_data(run_id)
    compile_index = view.choose_compile(data.kernels, state.get("compile"))
    steps = view.compile_steps(data.steps, compile_index)
    row = steps.row(view.choose_step(steps, state.get("step")), named=True)
    if row["text_id"] is None:
        return dash.no_update
    suffix = {"llir": "ll", "mir": "mir", "ptx": "ptx", "sass": "sass", "amdgcn": "amdgcn"}.get(row["stage"], "mlir")
    name = f"{row['kernel'] or 'kernel'}.compile{compile_index}.step{row['step']}.{suffix}"
    return dcc.send_string(ir_text(run_id, row["text_id"]), name)


# Bring the first lit line of each code panel into view once the panel has drawn: dcc.Markdown
# renders after the callback returns (on first load after its code chunk arrives), hence the
# retries; a panel the user scrolled since is left alone. The page itself does not scroll.
clientside_callback(
    """
    function() {
        const scrolled = new Set();
        [50, 250, 800, 2000].forEach(function(delay) {
            setTimeout(function() {
                document.querySelectorAll("#compiler-page .ir-panel").forEach(function(panel) {
                    const lit = panel.querySelector(".code-line.hl");
                    if (!lit || scrolled.has(panel)) { return; }
                    panel.scrollTop = Math.max(0, lit.offsetTop - panel.clientHeight / 3);
                    scrolled.add(panel);
                });
            }, delay);
        });
        return window.dash_clientside.no_update;
    }
    """,
    Output("compiler-scroll", "data"),
    Input("compiler-ir", "children"),
    Input("compiler-python", "children"),
)
