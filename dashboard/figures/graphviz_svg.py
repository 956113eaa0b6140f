"""Any DOT graph drawn by Graphviz itself (`dot -Tsvg`), made safe to show in the page.

Why the `dot` binary through `subprocess` and not the Python `graphviz`
package: that package is itself a wrapper that runs the same binary, and adds
nothing here (we already hold DOT text); calling it directly gives the
limits a server needs, a wall-clock timeout (the layout of a pathological
graph is killed), a process group and parent-death signal, and a cap on input
and output size, with no extra dependency. The system package is Debian's `graphviz`
(`apt-get install -y graphviz`); without it `render_svg` says so instead of
drawing.

The SVG is sanitised before it reaches a browser: Graphviz passes through
`URL`/`href` attributes (a `javascript:` link), `stylesheet` processing
instructions and `image` references, so links, scripts, foreign objects,
event attributes and external references are removed. Files named by `image`
attributes are confined to an empty folder (`GV_FILE_PATH`), so a DOT file
cannot make the server read its disk.
"""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dashboard.figures.graphviz_runner import DotTimedOut, GraphvizBusy, answer_for, run_dot_process

MAX_DOT_BYTES = 8 * 1024 * 1024  # larger graphs take Graphviz minutes and draw as an unreadable blot
MAX_SVG_BYTES = 64 * 1024 * 1024
TIMEOUT_SECONDS = 30.0
INSTALL_HINT = "install Debian's graphviz package (apt-get install -y graphviz)"

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)
_DROPPED_TAGS = {f"{{{SVG_NS}}}{tag}" for tag in ("script", "foreignObject", "image", "use", "style", "iframe")}
_LINK_ATTRS = {"href", f"{{{XLINK_NS}}}href", "target", f"{{{XLINK_NS}}}title", "src"}
_DOCUMENT = re.compile(r"<svg\b.*?</svg>", re.S)
_FIRST_LINE = re.compile(r"^(?:Error: |Warning: )?(.*)$", re.M)


class GraphvizMissing(RuntimeError):
    """`dot` is not on PATH."""


class GraphvizFailed(RuntimeError):
    """Graphviz refused or could not finish the graph; the message says why in one line."""


def dot_binary() -> str | None:
    """The `dot` program on PATH, if Graphviz is installed."""
    return shutil.which("dot")


def missing_message() -> str:
    return ("Graphviz is not installed on this server (no `dot` program on PATH), so this graph cannot be laid "
            f"out as drawn: {INSTALL_HINT}")


@dataclass(frozen=True)
class Drawing:
    """One graph drawn by Graphviz: a sanitised standalone SVG document and its size in CSS px."""

    svg: str
    width: float
    height: float


def run_dot(text: str, timeout: float = TIMEOUT_SECONDS) -> str:
    """`dot -Tsvg` on `text`: every graph of it, SVG documents one after another."""
    binary = dot_binary()
    if binary is None:
        raise GraphvizMissing(missing_message())
    data = text.encode("utf-8")
    if len(data) > MAX_DOT_BYTES:
        raise GraphvizFailed(f"the DOT text is {len(data) / 2**20:.1f} MiB, over the {MAX_DOT_BYTES // 2**20} MiB "
                             "that is drawn in the page; download the source and run `dot` locally")
    try:
        done = run_dot_process(binary, data, timeout)
    except DotTimedOut:
        raise GraphvizFailed(f"Graphviz did not finish laying out the graph within {timeout:.0f} s") from None
    except OSError as exc:
        raise GraphvizFailed(f"could not run {Path(binary).name}: {exc.strerror or type(exc).__name__}") from None
    if done.returncode != 0 or not done.stdout:
        if done.returncode < 0:
            raise GraphvizFailed(f"Graphviz was stopped (signal {-done.returncode}) before it finished the graph")
        raise GraphvizFailed(f"Graphviz refused the graph: {_first_problem(done.stderr)}")
    if len(done.stdout) > MAX_SVG_BYTES:
        raise GraphvizFailed(f"the drawing is {len(done.stdout) / 2**20:.0f} MiB of SVG, too big to show in the page")
    return done.stdout.decode("utf-8", errors="replace")


def _first_problem(stderr: bytes) -> str:
    for line in stderr.decode("utf-8", errors="replace").splitlines():
        if line.strip():
            return _FIRST_LINE.match(line.strip()).group(1)  # type: ignore[union-attr]
    return "no output and no message"


def _points(value: str | None) -> float:
    """A Graphviz size (`123pt`) in CSS px."""
    match = re.match(r"\s*([\d.]+)\s*(pt|px)?", value or "")
    if not match:
        return 0.0
    number = float(match.group(1))
    return number * 4 / 3 if (match.group(2) or "pt") == "pt" else number


def sanitise(document: str) -> Drawing:
    """The SVG without anything that could run, link or load; sized by its viewBox."""
    try:
        root = ET.fromstring(document)
    except ET.ParseError as exc:
        raise GraphvizFailed(f"Graphviz wrote SVG that does not parse ({exc})") from None
    for parent in root.iter():
        for child in list(parent):
            if child.tag in _DROPPED_TAGS:
                parent.remove(child)
            elif child.tag == f"{{{SVG_NS}}}a":
                child.tag = f"{{{SVG_NS}}}g"  # a link without its target: a plain group
        for name in list(parent.attrib):
            local = name.rsplit("}", 1)[-1].lower()
            if name in _LINK_ATTRS or local.startswith("on") or local in ("href", "src"):
                del parent.attrib[name]
    width, height = _points(root.get("width")), _points(root.get("height"))
    return Drawing(ET.tostring(root, encoding="unicode"), width, height)


def render_svg(text: str, index: int = 0, timeout: float = TIMEOUT_SECONDS) -> Drawing:
    """Graph `index` (0-based) of the DOT `text`, drawn by Graphviz and sanitised."""
    documents = _DOCUMENT.findall(run_dot(text, timeout))
    if index >= len(documents):
        raise GraphvizFailed(f"Graphviz drew {len(documents)} graphs, not graph {index + 1}")
    return sanitise(documents[index])


@dataclass(frozen=True)
class DrawResult:
    """A drawing, or the one-line problem that prevented it (`missing`: Graphviz is not installed; `busy`:
    the server's queue is full, try again)."""

    drawing: Drawing | None
    problem: str | None = None
    missing: bool = False
    busy: bool = False


def draw(text: str, index: int = 0) -> DrawResult:
    """Graph `index` of `text`, from the answer kept for the whole text or drawn in the server's queue
    (`graphviz_runner`): the page and the SVG route ask for the same graph in turn, every graph of a
    file comes from one `dot` run, and a graph that failed (a 30 s timeout) is not laid out again."""
    if dot_binary() is None:  # not kept: installing Graphviz must not need a restart
        return DrawResult(None, missing_message(), missing=True)
    try:
        answer = answer_for(text, _draw_all)
    except GraphvizBusy as exc:
        return DrawResult(None, str(exc), busy=True)
    if "problem" in answer:
        return DrawResult(None, str(answer["problem"]), missing=bool(answer.get("missing")))
    documents = answer.get("documents", [])
    if index >= len(documents):
        return DrawResult(None, f"Graphviz drew {len(documents)} graphs, not graph {index + 1}")
    kept = documents[index]
    return DrawResult(Drawing(str(kept["svg"]), float(kept["width"]), float(kept["height"])))


def _draw_all(text: str) -> dict[str, Any]:
    """Every graph of `text` drawn and sanitised, or the one-line problem (kept by the runner)."""
    try:
        drawings = [sanitise(document) for document in _DOCUMENT.findall(run_dot(text))]
    except GraphvizMissing as exc:
        return {"problem": str(exc), "missing": True}
    except GraphvizFailed as exc:
        return {"problem": str(exc)}
    return {"documents": [{"svg": d.svg, "width": d.width, "height": d.height} for d in drawings]}
