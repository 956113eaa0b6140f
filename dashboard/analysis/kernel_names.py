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

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

MAX_LABEL = 76  # two chart lines of LINE_WIDTH, less the break
LINE_WIDTH = 40  # characters per line of a chart's kernel label (two lines at most)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:<[0-9]{1,4}>)?")  # `OpaqueType<4>` whole
_ANONYMOUS = "(anonymous namespace)::"
# Identifiers inside template arguments that say nothing about what a kernel does.
_NOISE = frozenset({
    "at", "native", "detail", "cuda", "c10", "std", "cutlass", "cute", "void", "const", "unsigned", "char",
    "signed", "lambda", "operator", "anonymous", "namespace", "Array", "TensorIteratorBase", "TensorIterator",
    "TensorInfo", "OffsetCalculator", "TrivialOffsetCalculator", "memory", "LoadWithCast", "StoreWithCast",
    "LoadWithoutCast", "StoreWithoutCast", "type", "value_type", "Kernel", "Kernel2", "Params", "impl",
    "decltype", "nullptr", "true", "false", "GenericPackedTensorAccessor", "PackedTensorAccessor",
    "PackedTensorAccessor32", "PackedTensorAccessor64", "RestrictPtrTraits", "DefaultPtrTraits", "size_t",
    "ptrdiff_t", "enable_if", "integral_constant", "tuple", "array",
})
# Element types: shown only when they tell kernels apart (float against double of one functor).
_DTYPES = frozenset({
    "float", "double", "half", "Half", "BFloat16", "bfloat16", "bfloat16_t", "half_t", "float16", "tfloat32_t",
    "int", "long", "short", "bool", "int8_t", "uint8_t", "int16_t", "int32_t", "int64_t", "uint32_t",
    "uint64_t", "complex", "Float8_e4m3fn", "Float8_e5m2", "float_e4m3_t", "float_e5m2_t", "__half",
    "__nv_bfloat16", "Scalar", "OpaqueType", "opmath_t", "accscalar_t", "scalar_t", "index_t", "optional",
})
# Wrappers around the operation a generic kernel applies: PyTorch adds and renames them between versions.
_WRAPPERS = frozenset({
    "gpu_kernel_impl", "gpu_kernel_impl_nocast", "BinaryFunctor", "AUnaryFunctor", "BUnaryFunctor",
    "UnaryFunctor", "func_wrapper_t", "ReduceOp", "gpu_index_kernel", "_cuda_scatter_gather_internal_kernel",
    "TensorListMetadata", "TensorListScalarListMetadata", "FunctorWrapper", "binary_internal",
    "GpuReduceFunctor", "opmath_gpu_kernel_with_scalars", "launch_vectorized_kernel", "gpu_kernel",
})
_WRAPPER_SUFFIXES = ("Policy", "Metadata", "TileState")
# Function names too generic to lead a label: the operation (or the namespace) says more.
_GENERIC = frozenset({"Kernel", "Kernel2", "device_kernel", "kernel", "cutlass_kernel", "kernel_entry"})
# Launchers whose operation is part of the short name: alone, `elementwise_kernel` says nothing.
_LAUNCHERS = ("elementwise_kernel", "reduce_kernel", "apply_kernel", "elementwise_kernel_with_index",
              "elementwise_kernel_helper")


@dataclass(frozen=True)
class KernelName:
    """One demangled name, taken apart once."""

    full: str
    base: str  # function name without namespaces, return type, template arguments, parameters
    qualifier: str  # the last namespace or class before the base ('' when none)
    arguments: tuple[str, ...]  # the function's own top-level template arguments, namespaces dropped
    tokens: tuple[str, ...]  # meaningful identifiers of the template arguments, in order, each once
    operation: str | None  # the first token that is neither an element type nor a wrapper

    @property
    def head(self) -> str:
        """The short name's function part: the base; for a generic base (`cutlass::Kernel<...>`) the operation
        it runs, or the base with its namespace (`gemvx::kernel`)."""
        if self.base in _GENERIC:
            if self.operation and self.qualifier in ("", "cutlass", "cute"):
                return self.operation
            return f"{self.qualifier}::{self.base}" if self.qualifier else self.base
        return self.base

    @property
    def launcher(self) -> bool:
        return self.base.endswith(_LAUNCHERS) and self.operation is not None

    @property
    def short(self) -> str:
        """The short name: the head, with the operation of a generic launcher (`elementwise_kernel‹MulFunctor›`)."""
        return f"{self.head}‹{self.operation}›" if self.launcher else self.head


def _is_wrapper(token: str) -> bool:
    token = token.split("<", 1)[0]
    return token in _WRAPPERS or token.endswith(_WRAPPER_SUFFIXES)


def _is_dtype(token: str) -> bool:
    return token.split("<", 1)[0] in _DTYPES


def _strip_parameters(text: str) -> str:
    """Drop a trailing `(parameter list)`, keeping parentheses that belong to the name itself."""
    text = text.rstrip()
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


def _own_template(text: str) -> tuple[str, str]:
    """(text before the function's own `<...>`, what is inside it); ('text', '') without one."""
    if not text.endswith(">"):
        return text, ""
    depth = 0
    for position in range(len(text) - 1, -1, -1):
        if text[position] == ">":
            depth += 1
        elif text[position] == "<":
            depth -= 1
            if depth == 0:
                return text[:position], text[position + 1:-1]
    return text, ""


def _qualified_name(text: str) -> tuple[str, str]:
    """(last qualifier, base) of `return type ns::Class::function`: the part after the last top-level
    space, split at its last top-level `::`."""
    depth, space, colons = 0, -1, -1
    for position, char in enumerate(text):
        if char in "<([":
            depth += 1
        elif char in ">)]":
            depth = max(depth - 1, 0)
        elif depth == 0:
            if char == " ":
                space, colons = position, -1
            elif char == ":" and position + 1 < len(text) and text[position + 1] == ":":
                colons = position
    if colons < 0:
        return "", text[space + 1:].strip()
    qualified = text[space + 1:colons]
    qualifier = qualified.rsplit("::", 1)[-1]
    if "<" in qualifier:
        qualifier = qualifier[:qualifier.index("<")]
    return qualifier.strip(), text[colons + 2:].strip()


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
    return [argument for argument in arguments if argument]


_QUALIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*::")


def _tokens(arguments: str) -> list[str]:
    """Meaningful identifiers of template arguments in order, each once: qualifiers and noise dropped."""
    found: dict[str, None] = {}
    for match in _IDENTIFIER.finditer(arguments):
        token = match.group()
        if arguments.startswith("::", match.end()) or token.split("<", 1)[0] in _NOISE or \
                (token.startswith("__") and not _is_dtype(token)):
            continue
        found.setdefault(token, None)
    return list(found)


@lru_cache(maxsize=32768)
def parse_kernel_name(name: str) -> KernelName:
    """Take one demangled kernel name apart (cached: a run has a few hundred distinct names)."""
    text = name.strip().replace(_ANONYMOUS, "")
    if text.startswith("void "):
        text = text[5:]
    before, inside = _own_template(_strip_parameters(text).rstrip())
    qualifier, base = _qualified_name(before.rstrip())
    base = base or before.strip() or name.strip() or name
    tokens = _tokens(inside)
    operation = next((t for t in tokens if not _is_dtype(t) and not _is_wrapper(t)), None)
    arguments = tuple(_QUALIFIER.sub("", argument) for argument in _split_arguments(inside))
    return KernelName(name, base, qualifier, arguments, tuple(tokens), operation)


def split_kernel_name(name: str) -> tuple[str, list[str]]:
    """(function name without namespaces, identifiers of its template arguments that carry meaning)."""
    parsed = parse_kernel_name(name)
    return parsed.base, list(parsed.tokens)


def template_arguments(name: str) -> list[str]:
    """The kernel function's own template arguments, namespaces dropped: `['float', '128', 'false']`."""
    return list(parse_kernel_name(name).arguments)


def short_kernel_name(name: str, limit: int = MAX_LABEL) -> str:
    """The short name, the same in every run: `vectorized_elementwise_kernel‹CUDAFunctor_add›`,
    `bar_kernel` for `void foo::bar_kernel<float>(float*, int)`, clipped to `limit` characters."""
    return clip(parse_kernel_name(name).short, limit)


def clip(label: str, limit: int = MAX_LABEL) -> str:
    """`label` cut in its middle to `limit` characters (the start and the end say the most)."""
    if len(label) <= limit:
        return label
    if limit <= 1:
        return label[:limit]
    head = (limit - 1) * 2 // 3
    return label[:head] + "…" + label[len(label) - (limit - 1 - head):]


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
    texts = [_QUALIFIER.sub("", parsed.full.strip().replace(_ANONYMOUS, "")) for parsed in group]
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
