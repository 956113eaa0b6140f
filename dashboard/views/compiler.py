"""`/compiler`: Triton's IR pass by pass and stage by stage, back to the Python line.

URL state: run, compile (one kernel compile), step (a snapshot of it), cmp (what
the diff compares against: empty = the previous step, `12` = step 12,
`3:12` = step 12 of compile 3), view (unified / side), pyline (a line of the
kernel's Python file). Each is kept only where it exists in the run.

Dash-free: the charts, and per state the step's rows, texts, mapped lines and
diff that `layouts/compiler_panels.py` turns into the page's HTML panels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import plotly.graph_objects as go
import polars as pl

from dashboard.analysis import compiler as ir
from dashboard.analysis.compiler_memory import memory_plan, module_totals
from dashboard.figures.compiler import mark_steps, memory_plan_figure, pass_chart
from dashboard.store import Run
from dashboard.views import params
from dashboard.views.cache import per_run
from dashboard.views.compiler_data import compiler_data, ir_text, text_locations
from dashboard.views.state import ViewState, param

DIFF_VIEWS = ("unified", "side")
# Export name of each chart -> the page's component id.
CHARTS = {"compiler-passes": "compiler-pass-chart", "compiler-memory-plan": "compiler-memory"}
MEMORY_TITLE = "Shared / tensor memory plan of the final TTGIR (offset × op)"


@dataclass(frozen=True)
class State(ViewState):
    compile: int | None = param(params.number("compile", low=0))  # None: the compile with the most steps
    step: int = param(params.number("step", 0, low=0), 0)
    cmp: str | None = param(params.text("cmp", limit=64))
    diff_view: str = param(params.choice("view", DIFF_VIEWS, "unified"), "unified")
    pyline: int | None = param(params.number("pyline", low=0))  # lines count from 1: 0 is none

    def resolved(self, run: Run) -> Self:
        """Compile, step and compared step kept where the run has them (else its first compile / step)."""
        data = compiler_data(run)
        chosen = ir.choose_compile(data.kernels, self.compile)
        pyline = self.pyline or None
        if chosen is None:
            return self.replace(compile=None, step=0, cmp=None, pyline=pyline)
        step = ir.choose_step(ir.compile_steps(data.steps, chosen), self.step)
        state = self.replace(compile=chosen, step=step, pyline=pyline)
        return state if compared(run, state) is not None or not state.cmp else state.replace(cmp=None)


def compared(run: Run, state: State) -> ir.Compared | None:
    """The step the diff compares with, when it exists: `cmp`, or the previous step."""
    data = compiler_data(run)
    if state.compile is None:
        return None
    found = ir.parse_compare(state.cmp, state.compile, state.step)
    if found is None or found.compile not in data.kernels["compile"].to_list():
        return None
    if not 0 <= found.step < steps_of(run, found.compile).height:
        return None
    return found


def steps_of(run: Run, compile_index: int | None) -> pl.DataFrame:
    """The steps of one compile in dump order, with `made_by` and `growth` (with_made_by)."""
    data = compiler_data(run)
    return with_made_by(ir.compile_steps(data.steps, compile_index) if compile_index is not None
                        else data.steps.head(0))


def with_made_by(steps: pl.DataFrame) -> pl.DataFrame:
    """`steps` with `made_by`, the pass whose output a snapshot is, and `growth`, its lines minus the previous
    snapshot's (null for the first).

    `MLIR_ENABLE_DUMP` writes the IR *before* each pass: the snapshot "before InitializeWSClusterBarriers" is
    what the pass before it (ConvertTritonGPUToLLVM) made, so a jump in lines is that pass's doing. An "after"
    (or failed) snapshot is its own pass's output; a stage file is the stage's.
    """
    if steps.is_empty():
        return steps.with_columns(pl.lit(None, pl.String).alias("made_by"), pl.lit(None, pl.Int64).alias("growth"))
    previous_pass = pl.col("pass_name").shift(1)
    return steps.with_columns(
        pl.when(pl.col("kind") == "before").then(previous_pass)
        .when(pl.col("kind") == "file").then(pl.col("stage") + pl.lit(" file"))
        .otherwise(pl.col("pass_name")).alias("made_by"),
        (pl.col("lines") - pl.col("lines").shift(1)).alias("growth"),
    )


def kernel_row(run: Run, compile_index: int | None) -> dict[str, Any]:
    kernels = compiler_data(run).kernels
    found = kernels.filter(pl.col("compile") == compile_index) if compile_index is not None else kernels.head(0)
    return found.row(0, named=True) if found.height else {}


def compile_options(run: Run) -> list[dict[str, Any]]:
    return [{"label": ir.compile_label(row), "value": row["compile"]}
            for row in compiler_data(run).kernels.sort("compile").iter_rows(named=True)]


def step_options(run: Run, state: State) -> list[dict[str, Any]]:
    return [{"label": ir.step_label(row), "value": row["step"]}
            for row in steps_of(run, state.compile).iter_rows(named=True)]


def compare_options(run: Run, state: State) -> list[dict[str, str]]:
    data = compiler_data(run)
    return ir.compare_options(data.steps, data.kernels, state.compile, state.step) if state.compile is not None else []


@per_run(maxsize=32)
def _base_chart(run: Run, compile_index: int) -> dict[str, Any]:
    """The pass chart of one compile without a selection, as a plotly dict (never mutated: see mark_steps)."""
    title = f"Passes of {ir.compile_label(kernel_row(run, compile_index))}"
    return pass_chart(steps_of(run, compile_index), None, None, title).to_plotly_json()


def pass_chart_dict(run: Run, state: State) -> dict[str, Any]:
    """The pass chart with the step outlined and the compared step of the same compile framed."""
    if state.compile is None or steps_of(run, state.compile).is_empty():
        return pass_chart(steps_of(run, state.compile), None, None, "").to_plotly_json()
    other = compared(run, state)
    return mark_steps(_base_chart(run, state.compile), state.step,
                      other.step if other is not None and other.compile == state.compile else None)


@per_run(maxsize=32)
def memory_chart(run: Run, compile_index: int | None) -> go.Figure:
    """The shared / tensor memory plan of the compile's last TTGIR snapshot."""
    steps = steps_of(run, compile_index)
    ttgir = steps.filter((pl.col("stage") == "ttgir") & pl.col("text_id").is_not_null()
                         & (pl.col("kind") != "internal"))
    if ttgir.is_empty():
        return memory_plan_figure(memory_plan(""), {}, MEMORY_TITLE if compile_index is not None else "")
    last = ttgir.row(ttgir.height - 1, named=True)
    text = ir_text(run, last["text_id"])
    return memory_plan_figure(memory_plan(text), module_totals(text), f"{MEMORY_TITLE}, step {last['step']}")


def figures(run: Run, state: State) -> dict[str, go.Figure]:
    """The page's two charts (new Figures: the cached ones are shared)."""
    if state.compile is None:
        return {}
    return {"compiler-passes": go.Figure(pass_chart_dict(run, state), _validate=False),
            "compiler-memory-plan": go.Figure(memory_chart(run, state.compile))}


@dataclass(frozen=True)
class StepView:
    """What the panels show for one state: the step's row and text, and the lines the Python line maps to."""

    steps: pl.DataFrame  # every step of the compile
    row: dict[str, Any]  # the step shown
    text: str  # its IR ("" for a binary stage file)
    locs: pl.DataFrame | None  # its IR line -> Python line rows
    kernel_file: str | None
    marked: list[int]  # IR lines of this step from the chosen Python line


def step_view(run: Run, state: State) -> StepView | None:
    """The shown step and its text; None when the compile has no snapshot."""
    steps = steps_of(run, state.compile)
    if steps.is_empty():
        return None
    row = steps.row(state.step, named=True)
    text = ir_text(run, row["text_id"]) if row["text_id"] is not None else ""
    locs = text_locations(run, row["text_id"], row["stage"]) if row["text_id"] is not None else None
    kernel_file = kernel_row(run, state.compile).get("python_file")
    marked = ir.ir_lines_for(locs, kernel_file, state.pyline) if locs is not None and state.pyline else []
    return StepView(steps, row, text, locs, kernel_file, marked)


@per_run(maxsize=64)
def _diff(run: Run, before_id: int | None, after_id: int | None, left: str, right: str) -> ir.Diff:
    before = ir_text(run, before_id) if before_id is not None else ""
    after = ir_text(run, after_id) if after_id is not None else ""
    return ir.diff_texts(before, after, left, right)


def diff(run: Run, state: State, shown: StepView) -> tuple[ir.Diff | None, str, str] | None:
    """(the diff or None when neither side has text, left name, right name); None: nothing to compare with."""
    other = compared(run, state)
    if other is None:
        return None
    other_row = steps_of(run, other.compile).row(other.step, named=True)
    row = shown.row
    left = f"#{other.compile} step {other.step} ({other_row['pass_name'] or other_row['stage']})"
    right = f"#{row['compile']} step {row['step']} ({row['pass_name'] or row['stage']})"
    before = ir_text(run, other_row["text_id"]) if other_row["text_id"] is not None else ""
    found = _diff(run, other_row["text_id"], row["text_id"], left, right) if before or shown.text else None
    return found, left, right


def stage_lines(run: Run, state: State, shown: StepView) -> list[tuple[dict[str, Any], str, list[int]]]:
    """Per stage snapshot holding IR from the chosen Python line: (its step row, its text, those lines)."""
    if not state.pyline:
        return []
    found = []
    for snapshot in ir.stage_snapshots(shown.steps).iter_rows(named=True):
        locs = text_locations(run, snapshot["text_id"], snapshot["stage"])
        lines = ir.ir_lines_for(locs, shown.kernel_file, state.pyline)
        if lines:
            found.append((snapshot, ir_text(run, snapshot["text_id"]), lines))
    return found


def python_line_of_ir(run: Run, state: State, text_id: int, stage: str, ir_line: int) -> int | None:
    """The Python line an IR line of a text maps to (a click on an IR line), if any."""
    locs = text_locations(run, text_id, stage)
    found = ir.python_line_for(locs, ir_line, kernel_row(run, state.compile).get("python_file"))
    return found[1] if found is not None else None


def next_state(run: Run, state: State, trigger: Any, compile_value: Any, step_value: Any,
               compare_value: Any, view_value: Any, chart_click: Any, line_click: Any) -> State:
    """The view state after one page event: a control changed, a bar or a code line clicked (the caller
    resolves it against the run again)."""
    asked = State.from_query({"compile": compile_value, "step": step_value, "cmp": compare_value,
                                   "view": view_value})
    if trigger == "compiler-compile" and compile_value is not None and asked.compile != state.compile:
        return state.replace(compile=asked.compile, step=0, cmp=None)
    if trigger == "compiler-step" and step_value is not None:
        return state.replace(step=asked.step, cmp=None if asked.step != state.step else state.cmp)
    if trigger == "compiler-compare" and compare_value is not None:
        return state.replace(cmp=asked.cmp)
    if trigger == "compiler-view" and view_value:
        return state.replace(diff_view=asked.diff_view)
    if trigger == "compiler-pass-chart" and chart_click and chart_click.get("points"):
        clicked = State.from_query({"step": chart_click["points"][0].get("x")})
        return state.replace(step=clicked.step, cmp=None)
    if trigger == "compiler-click" and line_click:
        line, text_id = params.parse_int(line_click.get("line"), low=1), params.parse_int(line_click.get("text"), low=0)
        if line is not None and line_click.get("kind") == "py":
            return state.replace(pyline=line)
        if line is not None and text_id is not None:
            found = python_line_of_ir(run, state, text_id, str(line_click.get("stage") or "ttir"), line)
            return state.replace(pyline=found) if found is not None else state
    return state


def step_file(run: Run, state: State) -> tuple[str, str] | None:
    """(file name, IR text) of the shown step for download; None for a binary stage file."""
    shown = step_view(run, state)
    if shown is None or shown.row["text_id"] is None:
        return None
    row = shown.row
    suffix = {"llir": "ll", "mir": "mir", "ptx": "ptx", "sass": "sass", "amdgcn": "amdgcn"}.get(row["stage"], "mlir")
    return f"{row['kernel'] or 'kernel'}.compile{state.compile}.step{row['step']}.{suffix}", shown.text
