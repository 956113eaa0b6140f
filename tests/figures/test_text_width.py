"""The server's estimate of how wide plotly draws a label (figures.text_width): never narrower than
DejaVu Sans (a wide UI font, the one Linux browsers draw `system-ui` with), markup and line breaks read
as plotly reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.figures.text_width import LABEL_PAD_PX, bottom_margin, label_margin, line_px, side_margin, text_px

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
LABELS = ["ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128",
          "void at::native::vectorized_elementwise_kernel<4, …>", "WWWW MMMM", "iiii llll", "1,234.5 µs ±2 %",
          "#12 ttnn.matmul (loc(\"/x/model.py\":3:1))", "Δ peak → 3.2 GiB"]


@pytest.mark.skipif(not DEJAVU.is_file(), reason="DejaVu Sans is not installed here")
@pytest.mark.parametrize("label", LABELS)
def test_the_estimate_is_never_narrower_than_dejavu_sans(label: str) -> None:
    from PIL import ImageFont

    for size in (11, 13, 15):
        drawn = ImageFont.truetype(str(DEJAVU), size * 10).getlength(label) / 10
        assert line_px(label, size) >= drawn - 0.5


def test_markup_and_line_breaks_count_as_plotly_draws_them() -> None:
    assert text_px("<b>ab</b><br>abc") == pytest.approx(line_px("abc"))
    assert text_px("a<sup>note</sup>") == pytest.approx(line_px("anote"))
    assert text_px("") == 0 and text_px("x<BR/>yy") == pytest.approx(line_px("yy"))
    assert line_px("\u4e2d") == 13  # a character without a width counts a full em


def test_margins_hold_the_widest_label_and_the_titles() -> None:
    widest = max(line_px(label) for label in LABELS)
    assert label_margin(LABELS) >= widest + LABEL_PAD_PX
    assert label_margin([]) == 10 and label_margin([], least=60) == 60
    assert side_margin(["10k"], titled=True) > side_margin(["10k"], titled=False) >= line_px("10k") + LABEL_PAD_PX
    assert bottom_margin(titled=True) > bottom_margin(titled=False) >= 13 * 1.2
