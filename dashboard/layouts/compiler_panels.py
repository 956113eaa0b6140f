"""/compiler's panels for one view state: the step summary, the IR, the diff, the Python source and the
Python line in every stage, as the components and HTML strings the page shows (the code panels are HTML
the browser parses itself: see pages/compiler.py).

The content comes from `views.compiler`; only the visible step's text, the diff and the mapped
lines of the other stages are sent to the browser.
"""

from __future__ import annotations

from html import escape as html_escape
from typing import Any

from dash import dcc, html

from dashboard.layouts.ir_code import code_html, excerpt_html, side_by_side_html, unified_html
from dashboard.layouts.page import page_href
from dashboard.layouts.select import select_options, select_value
from dashboard.store import Run
from dashboard.views import compiler as view
from dashboard.views.compiler_data import compiler_data, profile_runs_with_kernel, python_source


def _quiet(text: str) -> str:
    """A panel's line where there is no code to show."""
    return f'<p class="text-muted fst-italic small mb-0">{html_escape(text)}</p>'


# Every panel the page's render callback fills, in its output order.
PANELS = ("step_options", "step", "compare_options", "compare", "chart", "summary", "python", "python_note",
          "stages", "stages_note", "ir", "ir_note", "diff", "diff_note")


def panels(run: Run, state: view.State) -> dict[str, Any]:
    """Every panel's content for one view state."""
    # The step and compare pickers are native selects: their options and values as text.
    out: dict[str, Any] = {"step": select_value(state.step), "compare": select_value(state.cmp or None),
                           "chart": view.pass_chart_dict(run, state),
                           "step_options": select_options(view.step_options(run, state)),
                           "compare_options": select_options(view.compare_options(run, state))}
    shown = view.step_view(run, state)
    if shown is None:
        return {**{name: "" for name in PANELS}, **out}
    row, pyline = shown.row, state.pyline
    out["summary"] = summary(row)
    out["ir"], (first, last, total) = code_html(shown.text, set(shown.marked), text_id=row["text_id"],
                                                stage=row["stage"]) \
        if shown.text else (_quiet("(no text: a binary stage file)"), (0, 0, 0))
    out["ir_note"] = (f"{row['stage']} · {row['lines'] or 0} lines · {row['ops'] or 0} ops"
                      + (f" · {len(shown.marked)} lines from Python line {pyline}" if pyline else "")
                      + (f" · lines {first}–{last} of {total} shown (download for all)" if last - first + 1 < total
                         else ""))
    out["diff"], out["diff_note"] = diff_panel(run, state, shown)
    out["python"], out["python_note"] = python_panel(run, shown, pyline)
    out["stages"], out["stages_note"] = stages_panel(run, state, shown)
    return out


def summary(row: dict[str, Any]) -> list[Any]:
    what = {"before": "IR before", "after": "IR after", "failed": "IR after the FAILED pass",
            "internal": "SoftwarePipeliner snapshot", "file": "stage file"}.get(row["kind"], row["kind"])
    growth = row.get("growth")
    changed = (f"changed by {row.get('made_by') or 'the previous pass'}"
               + (" (the pass before it)" if row["kind"] == "before" and row.get("made_by") else "")
               + (f": {growth:+,} lines" if growth else "")) if row["changed"] else \
        "unchanged from the previous snapshot"
    return [html.Strong(f"Step {row['step']}: "), f"{what} {row['pass_name'] or row['stage']}",
            html.Code(f" {row['pass_arg']}", className="ms-1") if row["pass_arg"] else None,
            f" · {changed}" if row["kind"] != "file" else "", f" · {row['source']}"
            + (f":{row['source_line']}" if row["source_line"] else "")]


def diff_panel(run: Run, state: view.State, shown: view.StepView) -> tuple[str, str]:
    compared = view.diff(run, state, shown)
    if compared is None:
        return _quiet("(the first step: nothing before it to compare with)"), ""
    diff, left, right = compared
    if diff is None:
        return _quiet("(no text to compare)"), ""
    note = (f"{left} → {right}: −{diff.removed} / +{diff.added} lines" if diff.removed or diff.added
            else f"{left} → {right}: identical")
    if state.diff_view == "side":
        return side_by_side_html(diff.side, left, right), note
    return unified_html(diff.unified), note


def python_panel(run: Run, shown: view.StepView, pyline: int | None) -> tuple[str, str]:
    locs, kernel_file = shown.locs, shown.kernel_file
    mapped = set(locs.filter(locs["file"] == kernel_file)["line"].to_list()) if locs is not None and kernel_file \
        else set()
    source = python_source(run, kernel_file) if kernel_file else None
    if source is not None:
        body, _ = code_html("\n".join(source), {pyline} if pyline else set(), "data-py-line", faint=mapped)
        return body, f"{kernel_file} · blue numbers: lines with IR at this step"
    if locs is None or locs.is_empty():
        return _quiet("(no source locations in this IR)"), ""
    pairs = sorted({(f, n) for f, n in zip(locs["file"], locs["line"], strict=True) if f == kernel_file} or
                   set(zip(locs["file"], locs["line"], strict=True)))
    rows = "".join(f'<span class="code-line{" hl" if n == pyline else ""}" data-py-line="{n}">'
                   f'<span class="ln">{n}</span>{html_escape(f.rsplit("/", 1)[-1])}:{n}</span>' for f, n in pairs)
    return f'<pre class="ir-code">{rows}</pre>', f"{kernel_file or 'source'} is not readable here: locations only"


def stages_panel(run: Run, state: view.State, shown: view.StepView) -> tuple[str, str]:
    if not state.pyline:
        return _quiet("Click a Python line (or an IR line) to see its IR in every stage."), ""
    blocks = []
    found = view.stage_lines(run, state, shown)
    for snapshot, text, lines in found:
        blocks.append(f'<div class="small fw-bold mt-1">{snapshot["stage"]} (step {snapshot["step"]}): '
                      f"{len(lines)} lines</div>")
        blocks.append(excerpt_html(text, lines, "data-ir-line", snapshot["stage"], snapshot["text_id"]))
    return ("".join(blocks) or _quiet("(no IR line maps to this Python line)"),
            f"Python line {state.pyline}: IR in {len(found)} stages")


def links(run: Run, state: view.State) -> list[Any]:
    """Links to the planner (the same log's graphs) and to profiles holding this compile's kernel."""
    found: list[Any] = []
    if state.compile is None:
        return found
    if compiler_data(run).has_planner:
        found += ["The same log holds warp-specialization planner graphs: ",
                  dcc.Link("open /planner", href=page_href("/planner", run.id), className="me-3")]
    kernel = view.kernel_row(run, state.compile).get("kernel")
    if kernel:
        runs = profile_runs_with_kernel(run, kernel)
        if runs:
            found.append(f"Profiles with {kernel}: ")
            found += [dcc.Link(other, href=page_href("/kernels", other), className="me-2") for other in runs[:5]]
    return found
