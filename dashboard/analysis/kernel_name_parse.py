"""Kernel names taken apart: the function, its own template arguments and the operation a generic launcher
applies, in one pass over the demangled text (`analysis.kernel_names` builds the labels from these)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

MAX_LABEL = 76  # two chart lines of LINE_WIDTH, less the break
LINE_WIDTH = 40  # characters per line of a chart's kernel label (two lines at most)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:<[0-9]{1,4}>)?")  # `OpaqueType<4>` whole
ANONYMOUS = "(anonymous namespace)::"
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


QUALIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*::")


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
    text = name.strip().replace(ANONYMOUS, "")
    if text.startswith("void "):
        text = text[5:]
    before, inside = _own_template(_strip_parameters(text).rstrip())
    qualifier, base = _qualified_name(before.rstrip())
    base = base or before.strip() or name.strip() or name
    tokens = _tokens(inside)
    operation = next((t for t in tokens if not _is_dtype(t) and not _is_wrapper(t)), None)
    arguments = tuple(QUALIFIER.sub("", argument) for argument in _split_arguments(inside))
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
