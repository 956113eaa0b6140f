"""Charts to PNG on the server, through kaleido driving the system Chromium.

One kaleido server (one headless browser) per process, started on first use
and reused for every image: starting a browser per image costs seconds.
Kaleido's own Chrome download is never used; the browser is Debian's
`chromium` (or $CHROMIUM / $BROWSER_PATH).
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import threading
import zipfile
from collections.abc import Mapping
from pathlib import Path

import plotly.graph_objects as go

from dashboard.views.file_names import safe_file_stem

DEFAULT_WIDTH = 1400
DEFAULT_HEIGHT = 700
DEFAULT_SCALE = 2
CAPTION_HEIGHT = 28  # CSS px the image grows by for its caption line (times the scale)
CAPTION_FONT_PX = 13
_lock = threading.Lock()
_started = False


class PngExportUnavailable(RuntimeError):
    """No Chromium to render with; the message says how to get one."""


def chromium_path() -> str:
    for candidate in (os.environ.get("CHROMIUM"), os.environ.get("BROWSER_PATH")):
        if candidate and Path(candidate).exists():
            return candidate
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise PngExportUnavailable("PNG export needs Chromium: install Debian's package (apt-get install -y chromium) "
                               "or set CHROMIUM=/path/to/chrome")


def _ensure_server() -> None:
    global _started
    with _lock:
        if _started:
            return
        import kaleido

        kaleido.start_sync_server(path=chromium_path(), mathjax=False, silence_warnings=True)
        atexit.register(_stop_server)
        _started = True


def _stop_server() -> None:
    global _started
    with _lock:
        if not _started:
            return
        import kaleido

        kaleido.stop_sync_server(silence_warnings=True)
        _started = False


def figure_png(figure: go.Figure, width: int | None = None, height: int | None = None,
               scale: float = DEFAULT_SCALE) -> bytes:
    """One figure as PNG bytes (at `scale`x, like the browser's toolbar download)."""
    import kaleido

    _ensure_server()
    layout_height = figure.layout.height
    opts = {
        "format": "png",
        "scale": scale,
        "width": width or figure.layout.width or DEFAULT_WIDTH,
        "height": height or layout_height or DEFAULT_HEIGHT,
    }
    with _lock:  # the sync server serves one caller at a time
        return kaleido.calc_fig_sync(figure, opts=opts)


def captioned_png(png: bytes, caption: str | None, scale: float = DEFAULT_SCALE) -> bytes:
    """`png` with a white strip below it holding `caption` (run and view), left-aligned, one line.

    A PNG leaves the page it came from: the caption says which run and view it shows. Drawn onto
    the image (Pillow) rather than into the figure: any annotation or title line placed by plotly
    competes with axis titles and legends that plotly's automargin places where it likes.
    """
    if not caption:
        return png
    from PIL import Image, ImageDraw, ImageFont

    with Image.open(io.BytesIO(png)) as chart:
        chart.load()
        strip = round(CAPTION_HEIGHT * scale)
        out = Image.new("RGB", (chart.width, chart.height + strip), "white")
        out.paste(chart.convert("RGBA"), (0, 0), chart.convert("RGBA"))
    font = ImageFont.load_default(size=round(CAPTION_FONT_PX * scale))
    draw = ImageDraw.Draw(out)
    margin = round(8 * scale)
    text = caption
    while text and draw.textlength(text, font=font) > out.width - 2 * margin:
        text = text[:-2] + "…"  # a very long view state: cut, never wrapped over the chart
    draw.text((margin, out.height - strip / 2), text, fill=(73, 80, 87), font=font, anchor="lm")
    buffer = io.BytesIO()
    out.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def write_pngs(figures: Mapping[str, go.Figure], out_dir: Path, prefix: str = "",
               caption: str | None = None) -> list[Path]:
    """Write each figure to `out_dir/<prefix><name>.png`, captioned; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, figure in figures.items():
        path = out_dir / f"{safe_file_stem(prefix + name)}.png"
        path.write_bytes(captioned_png(figure_png(figure), caption))
        written.append(path)
    return written


def pngs_zip(figures: Mapping[str, go.Figure], prefix: str = "", caption: str | None = None) -> bytes:
    """Every figure as PNG inside one zip archive (the page's per-chart export), captioned."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, figure in figures.items():
            archive.writestr(f"{safe_file_stem(prefix + name)}.png", captioned_png(figure_png(figure), caption))
    return buffer.getvalue()
