"""Short, legible and unique labels for long C++ kernel names.

A demangled kernel name is often hundreds of characters of namespaces,
template arguments and parameter lists. A chart label keeps the function's
own name plus a hint of what tells it apart (the functor and dtype of an
elementwise kernel, the tile of a GEMM); the full name stays on hover.
Labels are computed once per distinct name (a few hundred), never per event.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache

MAX_LABEL = 56
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Identifiers inside template arguments that say nothing about what a kernel does.
_NOISE = frozenset({
    "at", "native", "detail", "cuda", "c10", "std", "cutlass", "cute", "void", "const", "unsigned", "char", "int",
    "long", "short", "bool", "true", "false", "lambda", "operator", "anonymous", "namespace", "Array",
    "TensorIteratorBase", "TensorIterator", "TensorInfo", "OffsetCalculator", "TrivialOffsetCalculator",
    "memory", "LoadWithCast", "StoreWithCast", "LoadWithoutCast", "StoreWithoutCast", "func_wrapper_t",
    "Kernel", "Kernel2", "Params", "type", "value_type", "impl", "gpu_kernel_impl", "gpu_kernel_impl_nocast",
})
# Function names too generic to lead a label: the template argument says more.
_GENERIC = frozenset({"Kernel", "Kernel2", "device_kernel", "kernel", "cutlass_kernel"})


def _top_level(text: str, open_char: str, close_char: str) -> tuple[str, list[str]]:
    """`text` with every top-level bracketed group removed, and the removed groups' contents."""
    kept: list[str] = []
    groups: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == open_char:
            if depth > 0:
                current.append(char)
            depth += 1
        elif char == close_char and depth > 0:
            depth -= 1
            if depth == 0:
                groups.append("".join(current))
                current = []
            else:
                current.append(char)
        elif depth > 0:
            current.append(char)
        else:
            kept.append(char)
    return "".join(kept), groups


def _strip_parameters(name: str) -> str:
    """Drop a trailing `(parameter list)`, keeping parentheses that belong to the name itself."""
    text = name.rstrip()
    if not text.endswith(")"):
        return text
    depth = 0
    for position in range(len(text) - 1, -1, -1):
        if text[position] == ")":
            depth += 1
        elif text[position] == "(":
            depth -= 1
            if depth == 0:
                head = text[:position].rstrip()
                return head if head and (head[-1].isalnum() or head[-1] in "_>") else text
    return text


@lru_cache(maxsize=16384)
def _split(name: str) -> tuple[str, tuple[str, ...]]:
    base, hints = _split_uncached(name)
    return base, tuple(hints)


def split_kernel_name(name: str) -> tuple[str, list[str]]:
    """(function name without namespaces, identifiers of its template arguments that carry meaning).

    Cached per name: every view of a run labels the same few hundred names.
    """
    base, hints = _split(name)
    return base, list(hints)


def _split_uncached(name: str) -> tuple[str, list[str]]:
    text = name.strip()
    if text.startswith("void "):
        text = text[5:]
    text = _strip_parameters(text)
    without_templates, templates = _top_level(text, "<", ">")
    without_templates = without_templates.replace("(anonymous namespace)", "")
    base = without_templates.split("::")[-1].strip() or without_templates.strip() or name
    hints: list[str] = []
    for group in templates:
        for token in _IDENTIFIER.findall(group):
            if token not in _NOISE and token not in hints and not token.startswith("_"):
                hints.append(token)
    return base, hints


def short_kernel_name(name: str, hint_count: int = 2) -> str:
    """`void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ...>(...)`
    -> `vectorized_elementwise_kernel‹CUDAFunctor_add, float›`."""
    base, hints = split_kernel_name(name)
    if base in _GENERIC and hints:
        return _clip(hints[0])
    if hints and hint_count:
        return _clip(f"{base}‹{', '.join(hints[:hint_count])}›")
    return _clip(base)


def _clip(label: str, limit: int = MAX_LABEL) -> str:
    if len(label) <= limit:
        return label
    head = (limit - 1) * 2 // 3
    return label[:head] + "…" + label[-(limit - 1 - head):]


def _middle(texts: list[str], limit: int = MAX_LABEL) -> list[str]:
    """For texts that differ only in the middle, show the part that differs."""
    prefix = 0
    shortest = min(len(t) for t in texts)
    while prefix < shortest and len({t[prefix] for t in texts}) == 1:
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and len({t[-1 - suffix] for t in texts}) == 1:
        suffix += 1
    labels = []
    for text in texts:
        differing = text[prefix:len(text) - suffix]
        lead = text[:min(prefix, 14)] + ("…" if prefix > 14 else "")
        tail = ("…" if suffix > 8 else "") + (text[len(text) - min(suffix, 8):] if suffix else "")
        room = max(limit - len(lead) - len(tail), 12)
        labels.append(lead + _clip(differing, room) + tail)
    return labels


def _split_arguments(text: str) -> list[str]:
    """Top-level comma-separated arguments of a template argument list."""
    arguments, depth, current = [], 0, []
    for char in text:
        if char in "<([":
            depth += 1
        elif char in ">)]":
            depth -= 1
        if char == "," and depth == 0:
            arguments.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    arguments.append("".join(current).strip())
    return arguments


_QUALIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*::|\(anonymous namespace\)::")


def template_arguments(name: str) -> list[str]:
    """The kernel function's own template arguments, namespaces dropped: `['float', '128', 'false']`."""
    text = name.strip()
    if text.startswith("void "):
        text = text[5:]
    text = _strip_parameters(text).rstrip()
    if not text.endswith(">"):
        return []
    depth = 0
    for position in range(len(text) - 1, -1, -1):
        if text[position] == ">":
            depth += 1
        elif text[position] == "<":
            depth -= 1
            if depth == 0:
                inner = text[position + 1:-1]
                return [_QUALIFIER.sub("", argument) for argument in _split_arguments(inner)]
    return []


def _differing_arguments(group: list[str]) -> dict[str, str] | None:
    """Labels `base‹args›` for names sharing a base: all arguments when short, else the differing ones
    with each run of common arguments elided as `…`. None when argument lists do not line up."""
    argument_lists = [template_arguments(name) for name in group]
    count = len(argument_lists[0])
    if count == 0 or any(len(arguments) != count for arguments in argument_lists):
        return None
    differs = [len({arguments[i] for arguments in argument_lists}) > 1 for i in range(count)]
    if not any(differs):
        return None
    labels = {}
    for name, arguments in zip(group, argument_lists, strict=True):
        base = split_kernel_name(name)[0]
        whole = f"{base}‹{', '.join(arguments)}›"
        if len(whole) <= MAX_LABEL:
            labels[name] = whole
            continue
        parts: list[str] = []
        for argument, differing in zip(arguments, differs, strict=True):
            if differing:
                parts.append(_clip(argument, 24))
            elif not parts or parts[-1] != "…":
                parts.append("…")
        labels[name] = f"{base}‹{', '.join(parts)}›"
    return labels


def _clashes(labels: dict[str, str]) -> list[list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for name, label in labels.items():
        groups[label].append(name)
    return [group for group in groups.values() if len(group) > 1]


def _resolve(group: list[str], labels: dict[str, str]) -> None:
    """Give the names of one clashing group labels that show what tells them apart."""
    splits = [split_kernel_name(n) for n in group]
    bases = [b for b, _ in splits]
    if len(set(bases)) == len(bases):  # names differ outside template arguments
        labels.update(zip(group, _middle(bases), strict=True))
        return
    by_base: dict[str, list[str]] = defaultdict(list)
    for name, base in zip(group, bases, strict=True):
        by_base[base].append(name)
    for base, names in by_base.items():
        if len(names) == 1:
            labels[names[0]] = _clip(base)
            continue
        arguments = _differing_arguments(names)
        if arguments is not None:
            labels.update(arguments)
            continue
        hint_sets = [split_kernel_name(n)[1] for n in names]
        shared = set.intersection(*(set(h) for h in hint_sets))
        for name, hints in zip(names, hint_sets, strict=True):
            own = [h for h in hints if h not in shared][:3]
            labels[name] = _clip(f"{base}‹{', '.join(own or hints[:3])}›")


def kernel_labels(names: Iterable[str]) -> dict[str, str]:
    """A unique short label for each distinct name, never a counter: what tells names apart is shown.

    Clashing short labels are widened in steps: the differing template arguments
    (common ones elided), then the differing middle of the full names, longer and
    longer, and at last the full name itself (distinct names always differ).
    """
    distinct = list(dict.fromkeys(n for n in names if n is not None))
    labels = {name: short_kernel_name(name) for name in distinct}
    for group in _clashes(labels):
        _resolve(group, labels)
    limit = MAX_LABEL
    while clashes := _clashes(labels):
        for group in clashes:
            if limit >= max(len(n) for n in group):
                labels.update((name, name) for name in group)
            else:
                labels.update(zip(group, _middle([n.strip() for n in group], limit), strict=True))
        limit *= 2
    return labels
