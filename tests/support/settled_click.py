"""Click a drawn mark by position once the page has stopped moving it.

Plotly's drag layer sits on top of its marks, so tests click by position. A page that is still
laying out (a grid or chart above appearing, a graph fitting itself) can move the mark between
reading its box and clicking, and the click lands on its neighbour.
"""

from __future__ import annotations

from playwright.sync_api import Locator, Page

SETTLE_READS = 30
READ_INTERVAL_MS = 100


def settled_box(page: Page, locator: Locator) -> dict[str, float]:
    """The mark's bounding box once two reads 100 ms apart agree (scrolled into view first)."""
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    for _ in range(SETTLE_READS):
        page.wait_for_timeout(READ_INTERVAL_MS)
        again = locator.bounding_box()
        if again == box and box is not None:
            return box
        box = again
    raise AssertionError(f"{locator} kept moving for {SETTLE_READS * READ_INTERVAL_MS} ms: last box {box}")


def click_centre(page: Page, locator: Locator) -> None:
    box = settled_box(page, locator)
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.click(x, y)
