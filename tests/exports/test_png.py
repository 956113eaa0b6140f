"""Server-side PNG through kaleido and the system Chromium: real images, not blank."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import plotly.graph_objects as go
import pytest
from PIL import Image

from dashboard.exports import png
from dashboard.figures.theme import TEMPLATE


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def distinct_colours(data: bytes) -> int:
    """How many distinct pixel colours a PNG holds."""
    with Image.open(io.BytesIO(data)) as image:
        return len(image.convert("RGB").getcolors(maxcolors=1 << 20) or [])


@pytest.fixture(scope="module")
def figure() -> go.Figure:
    fig = go.Figure(go.Bar(x=["gemm", "softmax", "copy"], y=[5.0, 2.0, 1.0]), layout={"template": TEMPLATE})
    fig.update_layout(title="Total time per kernel", width=600, height=400)
    return fig


def test_figure_png_is_a_real_image_at_twice_the_size(figure: go.Figure) -> None:
    data = png.figure_png(figure)
    assert png_size(data) == (1200, 800)
    assert distinct_colours(data) > 3  # bars, text and background, not a blank page


def test_write_pngs_and_zip(figure: go.Figure, tmp_path: Path) -> None:
    written = png.write_pngs({"top kernels": figure, "again": figure}, tmp_path, prefix="run1-")
    assert [p.name for p in written] == ["run1-top-kernels.png", "run1-again.png"]
    assert all(png_size(p.read_bytes()) == (1200, 800) for p in written)
    archive = zipfile.ZipFile(io.BytesIO(png.pngs_zip({"a": figure})))
    assert archive.namelist() == ["a.png"]
    assert png_size(archive.read("a.png")) == (1200, 800)


def test_missing_chromium_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHROMIUM", "/nonexistent")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(png.PngExportUnavailable, match="apt-get install -y chromium"):
        png.chromium_path()


def test_a_captioned_chart_names_its_run_and_view_in_a_strip_below_it(figure: go.Figure) -> None:
    plain = png.figure_png(figure)
    caption = "run step-1200-20260101-000000 · /kernels · rank=1 · top=5"
    data = png.captioned_png(plain, caption)
    assert png_size(data) == (1200, 800 + png.CAPTION_HEIGHT * 2)
    with Image.open(io.BytesIO(data)) as image, Image.open(io.BytesIO(plain)) as chart:
        rgb = image.convert("RGB")
        assert rgb.crop((0, 0, 1200, 800)).tobytes() == chart.convert("RGB").tobytes()  # the chart unchanged
        strip = rgb.crop((0, 800, 1200, image.height)).convert("L")
        dark = [x for x in range(strip.width) if min(strip.getpixel((x, y)) for y in range(strip.height)) < 128]
        # Text at the left of the strip, as long as the caption (about 7 px per character at 2x, 13 px font).
        assert dark and dark[0] < 40 and 300 < dark[-1] - dark[0] < 1100
    assert png.captioned_png(plain, None) == plain
    long = png.captioned_png(plain, "x" * 2000)  # cut to the width, never wider
    assert png_size(long) == (1200, 800 + png.CAPTION_HEIGHT * 2)
