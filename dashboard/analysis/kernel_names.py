"""The one naming rule for kernels: every chart, table, hover and CSV of the app names kernels through it.

A demangled kernel name is often hundreds of characters of return type, namespaces, template arguments
and parameters. The rule:

- the **short name** of a kernel is its function name without namespaces, return type or parameters
  (`vectorized_elementwise_kernel`); a generic launcher (PyTorch's elementwise / reduce / multi-tensor
  kernels, CUTLASS's `Kernel<...>`) is named by the operation it applies, unwrapped from the functor
  wrappers PyTorch adds and renames between versions (`BinaryFunctor<..., threshold_kernel_impl<float>(...)
  ::{lambda}>` and the older `threshold_kernel_impl<float>(...)::{lambda}` are both
  `vectorized_elementwise_kernel‹threshold_kernel_impl›`). It depends on the name alone, so two runs
  agree on it: `/compare` pairs renamed kernels by it (`compare_kernels`), the timeline prints it;
- the **label** of a kernel among others (`kernel_labels`) is its short name plus only the template
  arguments that tell it apart from the others of the same short name: the identifiers that differ
  (operation, functor, element type), else the template arguments that differ (common ones elided as `…`),
  else the differing text of the full names. Labels are unique, never numbered;
- a chart draws a label on at most two lines (`label_lines`); the **full demangled name** goes on hover,
  in the details and in every CSV.

Names are parsed once per distinct name (a few hundred per run, cached), never per launch; every scan is
a single pass, linear in the name's length (names nested thousands deep must not hang a page).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from dashboard.analysis.kernel_name_parse import (
    ANONYMOUS,
    LINE_WIDTH,
    MAX_LABEL,
    QUALIFIER,
    KernelName,
    clip,
    parse_kernel_name,
    short_kernel_name,
    split_kernel_name,
    template_arguments,
)

__all__ = ["LINE_WIDTH", "MAX_LABEL", "KernelName", "clip", "kernel_labels", "label_lines", "parse_kernel_name",
           "short_kernel_name", "split_kernel_name", "template_arguments"]


def _with(head: str, parts: list[str], limit: int = MAX_LABEL) -> str:
    """`head‹a, b›` within `limit`: the longest parts are clipped first, never the head (the kernel's name)."""
    parts = [part for part in parts if part]
    if not parts:
        return head
    while len(head) + 2 + sum(len(part) for part in parts) + 2 * (len(parts) - 1) > limit:
        longest = max(range(len(parts)), key=lambda index: len(parts[index]))
        if len(parts[longest]) <= 8:
            break
        parts[longest] = clip(parts[longest], max(len(parts[longest]) - 4, 8))
    return f"{head}‹{', '.join(parts)}›"


def _differing_positions(group: list[KernelName]) -> list[int] | None:
    """Positions of the template arguments that differ across the group; None when the lists do not line up."""
    count = len(group[0].arguments)
    if count == 0 or any(len(parsed.arguments) != count for parsed in group):
        return None
    return [i for i in range(count) if len({parsed.arguments[i] for parsed in group}) > 1]


def _simple(argument: str) -> bool:
    """A template argument worth printing whole: a number, a type, a short policy (`Policy<4, 2>`)."""
    return "(" not in argument and len(argument) <= 24


def _number(argument: str) -> bool:
    return argument.lstrip("-").replace(".", "", 1).isdigit()


def _by_arguments(group: list[KernelName], lead: dict[str, list[str]]) -> dict[str, str] | None:
    """`head‹lead, args›`: the arguments that differ, each run of common ones elided as `…` (the rule: only what
    tells the kernels apart). None when the lists do not line up or agree."""
    differing = _differing_positions(group)
    if not differing:
        return None
    labels = {}
    for parsed in group:
        parts: list[str] = []
        for position, argument in enumerate(parsed.arguments):
            if position in differing:
                parts.append(clip(argument, 24))
            elif not parts or parts[-1] != "…":
                parts.append("…")
        labels[parsed.full] = _with(parsed.head, [*lead[parsed.full], *parts])
    return labels


def _own_tokens(group: list[KernelName]) -> dict[str, list[str]]:
    """Per name: the launcher's operation, then the identifiers (operation, functor, element type) that not
    every other name of the group has."""
    common = set.intersection(*(set(parsed.tokens) for parsed in group))
    parts = {}
    for parsed in group:
        own = [token for token in parsed.tokens if token not in common and token != parsed.operation]
        lead = [parsed.operation] if parsed.operation and (parsed.launcher or parsed.operation not in common) else []
        parts[parsed.full] = [*lead, *own]
    return parts


def _unique(labels: dict[str, str]) -> bool:
    return len(set(labels.values())) == len(labels)


def _resolve(group: list[KernelName]) -> dict[str, str]:
    """Labels for the names of one short name, the first that tells them all apart (else the last tried):

    1. argument lists of plain values that line up: the differing ones (`wgrad_alg0_engine‹…, 128, …, 8, …›`);
    2. the identifiers each name has of its own (`elementwise_kernel‹MulFunctor, AUnaryFunctor›`);
    3. those and the plain arguments that differ (a launcher's numbers: `vectorized_elementwise_kernel‹MulFunctor,
       float, 2›`);
    4. those and the differing arguments, whatever they hold (common ones elided).
    """
    no_lead: dict[str, list[str]] = {parsed.full: [] for parsed in group}
    launchers = any(parsed.launcher for parsed in group)
    if not launchers and _differing_positions(group) and all(_simple(a) for parsed in group for a in parsed.arguments):
        plain = _by_arguments(group, no_lead)
        if plain is not None and _unique(plain):
            return plain
    tokens = _own_tokens(group)
    labels = {parsed.full: _with(parsed.head, tokens[parsed.full][:3]) for parsed in group}
    if _unique(labels):
        return labels
    differing = _differing_positions(group) or []
    # A launcher's other arguments hold its functor, already named by the tokens: add only its numbers.
    fits = _number if launchers else _simple
    simple = [i for i in differing if all(fits(parsed.arguments[i]) for parsed in group)]
    if simple:
        labels = {parsed.full: _with(parsed.head, [*tokens[parsed.full][:3], *(parsed.arguments[i] for i in simple)])
                  for parsed in group}
        if _unique(labels):
            return labels
    if not launchers:
        by_arguments = _by_arguments(group, {name: parts[:2] for name, parts in tokens.items()})
        if by_arguments is not None and _unique(by_arguments):
            return by_arguments
    return labels


def _word_around(text: str, position: int) -> str:
    """The identifier (or `#number`) at `position` of `text`, else the few characters from there."""
    start = position
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_#"):
        start -= 1
    end = position
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return text[start:end] if end > start else text[position:position + 8]


def _differing_text(group: list[KernelName], labels: dict[str, str]) -> dict[str, str]:
    """Each label with the word where the full names (namespaces dropped) first differ: for names alike in
    everything above (`true` against `false`, a lambda's `#1` against `#2`, a parameter list)."""
    texts = [QUALIFIER.sub("", parsed.full.strip().replace(ANONYMOUS, "")) for parsed in group]
    shortest = min(len(text) for text in texts)
    prefix = 0
    while prefix < shortest and len({text[prefix] for text in texts}) == 1:
        prefix += 1
    resolved = {}
    for parsed, text in zip(group, texts, strict=True):
        label = labels[parsed.full]
        part = _word_around(text, prefix) or "(end)"
        resolved[parsed.full] = f"{label[:-1]}, {part}›" if label.endswith("›") else f"{label}‹{part}›"
    return resolved


def _clashes(labels: dict[str, str]) -> list[list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for name, label in labels.items():
        groups[label].append(name)
    return [group for group in groups.values() if len(group) > 1]


def _clip_apart(group: list[str], limit: int = MAX_LABEL) -> dict[str, str]:
    """Long labels that clipping would make alike: each keeps its start, the part where they differ (with a
    little context) and its end."""
    shortest = min(len(label) for label in group)
    prefix = 0
    while prefix < shortest and len({label[prefix] for label in group}) == 1:
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and len({label[len(label) - 1 - suffix] for label in group}) == 1:
        suffix += 1
    clipped = {}
    for label in group:
        start, end = max(prefix - 10, 0), min(len(label) - suffix + 10, len(label))
        lead = label[:start] if start <= 20 else label[:16] + "…"
        tail = label[end:] if len(label) - end <= 14 else "…" + label[-10:]
        room = max(limit - len(lead) - len(tail), 12)
        clipped[label] = lead + clip(label[start:end], room) + tail
    return clipped


def _common_prefix(a: str, b: str) -> int:
    length = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        length += 1
    return length


def _clip_all(labels: dict[str, str]) -> dict[str, str]:
    """Every label within MAX_LABEL, cut in its middle. A long label that differs from a neighbour (in sorted
    order: the labels sharing its longest start) only inside the part the cut hides is clipped around that
    difference instead."""
    long = sorted({label for label in labels.values() if len(label) > MAX_LABEL})
    head = (MAX_LABEL - 1) * 2 // 3
    tail = MAX_LABEL - 1 - head
    clipped = {label: clip(label) for label in long}
    for index, label in enumerate(long):
        for other in (long[j] for j in (index - 1, index + 1) if 0 <= j < len(long)):
            start = _common_prefix(label, other)
            end = len(label) - _common_prefix(label[::-1], other[::-1])
            if start >= head - 2 and end <= len(label) - tail + 2:  # the whole difference would be cut away
                clipped[label] = _clip_apart([label, other])[label]
                break
    return {name: clipped.get(label, label) for name, label in labels.items()}


def kernel_labels(names: Iterable[str | None]) -> dict[str, str]:
    """A unique label for each distinct name: its short name, plus only what tells it apart from the other
    names of the same short name (see the module's rule). Never a counter."""
    distinct = list(dict.fromkeys(name for name in names if name is not None))
    parsed = {name: parse_kernel_name(name) for name in distinct}
    labels = {name: parsed[name].short for name in distinct}
    for group in _clashes(labels):
        labels.update(_resolve([parsed[name] for name in group]))
    for group in _clashes(labels):
        labels.update(_differing_text([parsed[name] for name in group], labels))
    for group in _clashes(labels):  # distinct names always differ somewhere: the full name is the last word
        labels.update((name, name) for name in group)
    clipped = _clip_all(labels)
    for group in _clashes(clipped):
        clipped.update((name, labels[name]) for name in group)
    return clipped


def label_lines(label: str, width: int = LINE_WIDTH) -> str:
    """A chart's tick text: `label` on one line, or broken once (`<br>`) where both lines fit `width`: before
    its `‹`, after a comma or a space, else at an underscore, nearest the middle; else at `width` itself, the
    second line clipped when still too long. Never more than two lines."""
    if len(label) <= width:
        return label
    strong = [position for position, char in enumerate(label[:width + 1]) if char == "‹" and position > 0]
    strong += [position + 1 for position, char in enumerate(label[:width]) if char in ", " and position > 0]
    weak = [position + 1 for position, char in enumerate(label[:width]) if char == "_" and position > 0]
    for cuts in (strong, weak):
        fitting = [cut for cut in cuts if len(label) - cut <= width]
        if fitting:
            cut = min(fitting, key=lambda cut: abs(cut - len(label) / 2))
            break
    else:  # no break leaves both lines within width: cut the word at width when the rest fits, else clip
        usable = [cut for cut in strong + weak if cut > width // 2]
        cut = width if len(label) <= 2 * width or not usable else max(usable)
    first, second = label[:cut].rstrip(), label[cut:].lstrip()
    return f"{first}<br>{clip(second, width)}"
