"""Choosing in the app's pickers, native `<select>`s (dashboard/layouts/select.py), as a user does."""

from __future__ import annotations

import re

from playwright.sync_api import Locator


def option_labels(select: Locator) -> list[str]:
    """The labels of a select's choices (not its placeholder, which is hidden and disabled)."""
    return select.evaluate("(el) => Array.from(el.options).filter(o => !o.hidden).map(o => o.label || o.text)")


def choose(select: Locator, label: str | re.Pattern[str]) -> str:
    """Choose the first option whose label is `label` (or matches it); returns that label."""
    labels = option_labels(select)
    found = next((text for text in labels if (label.search(text) if isinstance(label, re.Pattern) else text == label)),
                 None)
    if found is None:
        raise AssertionError(f"no option {label!r} among {labels}")
    # By position: the hidden placeholder may carry the same label (a picker whose empty choice is one).
    index = select.evaluate(
        "(el, label) => Array.from(el.options).findIndex(o => !o.hidden && (o.label || o.text) === label)", found)
    select.select_option(index=index)
    return found


def shown_label(select: Locator) -> str:
    """What the select shows: the text of its chosen option (its placeholder's, when that is the one)."""
    return select.evaluate("(el) => el.selectedIndex < 0 ? '' : el.options[el.selectedIndex].text")
