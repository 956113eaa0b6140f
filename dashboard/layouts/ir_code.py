"""IR, diffs and Python source as one HTML string each, with light syntax colouring.

One string per panel (rendered by a dcc.Markdown with raw HTML inside a
`<pre>`) rather than a component per line or per token: a 4000-line TTGIR
stays one prop. Every line carries `data-ir-line` / `data-py-line` so one
delegated click listener (assets/compiler.js) tells the page which line was
clicked; mapped lines get the `hl` class.
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection, Sequence
from functools import lru_cache

from dashboard.analysis.compiler import SideRow

MAX_RENDER_LINES = 1500  # longer texts show a window of this many lines; the download has all of them
COLOUR_LINES = 400  # lines of a window given syntax colour
CHUNK_LINES = 50  # lines per `ir-chunk` block: the browser lays out and paints only the blocks in view
SIDE_MAX_CHARS = 110  # widest column of the side-by-side diff


def _chunked(rows: Sequence[str]) -> str:
    """Rows in blocks of CHUNK_LINES, each `content-visibility: auto` (assets/dashboard.css): 1500 coloured
    lines are ~60k elements, and laying them all out took the browser seconds per step change."""
    return "".join(f'<div class="ir-chunk">{"".join(rows[start:start + CHUNK_LINES])}</div>'
                   for start in range(0, len(rows), CHUNK_LINES))

_TOKEN = re.compile(
    r"(?P<comment>//[^\n]*|(?<![\w#]); [^\n]*)"  # `; x` after an entity (`&gt;`) is not an LLVM comment
    r'|(?P<string>"[^"\n]*")'
    r"|(?P<loc>\bloc\(|#loc\d*)"
    r"|(?P<alias>#[\w.]+)"
    r"|(?P<ssa>%[\w.#$-]+)"
    r"|(?P<symbol>@[\w.$-]+)"
    r"|(?P<op>\b[a-z_][a-z0-9_]*\.[a-z_][\w.]*)"
    r"|(?P<type>\b(?:tensor|memref|vector|ptr|i1|i8|i16|i32|i64|f8E4M3FN|f8E5M2|f16|bf16|f32|f64|index)\b|![\w.]+)"
    r"|(?P<number>\b\d+(?:\.\d+)?\b)"
)


def _escape(text: str) -> str:
    # Braces too: dcc.Markdown drops a raw-HTML block holding a bare `{` (MLIR regions and attributes).
    return _braces(html.escape(text, quote=False))


def _braces(escaped: str) -> str:
    return escaped.replace("{", "&#123;").replace("}", "&#125;")


def _highlight(text: str) -> str:
    # Braces become entities only after colouring, or `#123` of `&#123;` would read as an alias token.
    return _braces(_TOKEN.sub(_colour, html.escape(text, quote=False)))


def _colour(match: re.Match[str]) -> str:
    return f'<span class="tk-{match.lastgroup}">{match.group()}</span>'


@lru_cache(maxsize=64)
def _coloured(text: str) -> tuple[str, ...]:
    return tuple(_highlight(text).split("\n"))


def colour_lines(text: str) -> list[str]:
    """The text's lines, HTML-escaped, tokens wrapped in `tk-<kind>` spans (cached per text:
    moving the highlight over one step's IR does not colour it again)."""
    return list(_coloured(text))


def _line(number: int, content: str, attribute: str, marked: bool, extra: str = "") -> str:
    classes = "code-line hl" if marked else "code-line"
    return (f'<span class="{classes}{extra}" {attribute}="{number}"><span class="ln">{number}</span>'
            f"{content or ' '}</span>")


def code_html(text: str, marked: Collection[int], attribute: str = "data-ir-line",
              limit: int = MAX_RENDER_LINES, text_id: int | None = None, stage: str = "",
              faint: Collection[int] = ()) -> tuple[str, tuple[int, int, int]]:
    """(the HTML of a window of the text, (first line shown, last line shown, all lines)).

    The window is the first `limit` lines, or, when the first marked line lies beyond them,
    `limit` lines around it. `marked` lines are highlighted; `faint` ones get `has-map`."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    first = 0
    if len(lines) > limit and marked:
        first = max(0, min(min(marked) - 1 - limit // 4, len(lines) - limit))
    window = lines[first:first + limit]
    # Syntax colour costs ~40 elements a line of LLVM dialect: only the COLOUR_LINES around the first lit
    # line (else the top) are coloured, the rest of the window is plain text (the browser parses every
    # element of the window on each step change).
    focus = (min(marked) - 1 - first) if marked else 0
    low = max(0, min(focus - COLOUR_LINES // 4, len(window) - COLOUR_LINES))
    high = low + COLOUR_LINES
    shown = [*(_escape(line) for line in window[:low]), *colour_lines("\n".join(window[low:high])),
             *(_escape(line) for line in window[high:])]
    body = _chunked([_line(number, content, attribute, number in marked, " has-map" if number in faint else "")
                     for number, content in enumerate(shown, start=first + 1)])
    where = f' data-text="{text_id}" data-stage="{html.escape(stage)}"' if text_id is not None else ""
    return f'<pre class="ir-code"{where}>{body}</pre>', (first + 1, first + len(window), len(lines))


def unified_html(diff: Sequence[str]) -> str:
    """A unified diff, added / removed / hunk lines coloured."""
    if not diff:
        return '<pre class="ir-code ir-diff"><span class="code-line">(no difference)</span></pre>'
    rows = []
    for line in diff[: 2 * MAX_RENDER_LINES]:
        kind = ("d-hunk" if line.startswith("@@") else "d-file" if line.startswith(("+++", "---"))
                else "d-add" if line.startswith("+") else "d-del" if line.startswith("-") else "")
        rows.append(f'<span class="code-line {kind}">{_escape(line) or " "}</span>')
    return f'<pre class="ir-code ir-diff">{_chunked(rows)}</pre>'


def side_by_side_html(rows: Sequence[SideRow], left_title: str, right_title: str) -> str:
    """Two columns of aligned lines (folded runs of unchanged lines as one row), as rows of a fixed grid in
    CHUNK_LINES blocks: a table of thousands of rows is laid out whole, and took the browser a second or more."""
    shown = rows[: 2 * MAX_RENDER_LINES]
    # Each side as wide as its longest line up to SIDE_MAX_CHARS (longer lines end in "…"; the unified view
    # and the download have them whole): one 678-character line put the right side 5,000 px away.
    left_ch = min(max((len(row.left) for row in shown if row.tag != "fold"), default=20), SIDE_MAX_CHARS)
    right_ch = min(max((len(row.right) for row in shown if row.tag != "fold"), default=20), SIDE_MAX_CHARS)
    out = []
    for row in shown:
        if row.tag == "fold":
            out.append(f'<div class="side-row d-fold"><span>{_escape(row.left)}</span></div>')
            continue
        left_class = " d-del" if row.tag in ("replace", "delete") and row.left_number else ""
        right_class = " d-add" if row.tag in ("replace", "insert") and row.right_number else ""
        out.append(f'<div class="side-row"><span class="ln">{row.left_number or ""}</span>'
                   f'<span class="c{left_class}">{_escape(row.left)}</span>'
                   f'<span class="ln">{row.right_number or ""}</span>'
                   f'<span class="c{right_class}">{_escape(row.right)}</span></div>')
    head = (f'<div class="side-row side-head"><span class="c">{html.escape(left_title)}</span>'
            f'<span class="c">{html.escape(right_title)}</span></div>')
    return (f'<div class="ir-side" style="--left-ch: {max(left_ch, 20)}; --right-ch: {max(right_ch, 20)}">'
            f'{head}{_chunked(out)}</div>')


def excerpt_html(text: str, lines: Sequence[int], attribute: str, stage: str, text_id: int, context: int = 0,
                 limit: int = 60) -> str:
    """Only the given lines of a text (for the across-stages view), each marked."""
    all_lines = text.split("\n")
    wanted = sorted({n + d for n in lines for d in range(-context, context + 1) if 1 <= n + d <= len(all_lines)})
    coloured = {n: _highlight(all_lines[n - 1]) for n in wanted[:limit]}
    rows = [_line(n, coloured[n], attribute, n in lines, f" stage-{stage}") for n in wanted[:limit]]
    more = f'<span class="code-line text-muted">… {len(wanted) - limit} more lines</span>' \
        if len(wanted) > limit else ""
    return (f'<pre class="ir-code ir-excerpt" data-text="{text_id}" data-stage="{html.escape(stage)}">'
            f'{"".join(rows)}{more}</pre>')
