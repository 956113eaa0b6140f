"""What a Kineto trace holds, per category, and what of it the tables do not show.

A run must say what it holds: a trace without kernels (a `cupti_profiler`
capture of profiler ranges only, a CPU-only profile) is reported as such
rather than offered silently as a kernel run, and device activity of
categories the dashboard does not analyse (MTIA, HPU, other accelerators)
is counted and named rather than passed over. The counts come from
`DecodedTrace.categories`, which the decoder fills with one addition per
(category, ph) group of a chunk, so taking the census costs nothing per event.
`[memory]` instants are counted under their own key (`MEMORY_CATEGORY`):
they become the `device_memory` table, so they are not reported as ignored.
The profiler's own bookkeeping instants (`PROFILER_MARKERS`: where an
iteration starts, where the record window ends) are counted under
`PROFILER_MARKER_CATEGORY` and never reported: they hold no user data, so a
warning about them would be a false alarm on every run. A warning means a
user's data was not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dashboard.collectors.kineto.columns import (
    API_CATEGORIES,
    FLOW_CATEGORIES,
    GPU_CATEGORIES,
    IGNORED_CATEGORIES,
    MEMORY_CATEGORY,
)

# Instants Kineto writes about its own recording (not the user's program), by name: never a warning.
PROFILER_MARKERS = frozenset({"Iteration Start: PyTorch Profiler", "Record Window End"})
PROFILER_MARKER_CATEGORY = "[profiler marker]"  # the census key they are counted under

# Interval categories the range passes know by name; any other becomes a range of its own category.
KNOWN_RANGE_CATEGORIES = frozenset({"cpu_op", "user_annotation", "gpu_user_annotation", "python_function"})

# How a category's complete events are called in a message.
CATEGORY_WORDS: dict[str, str] = {
    "kernel": "GPU kernels",
    "gpu_memcpy": "GPU copies",
    "gpu_memset": "GPU memsets",
    "cpu_op": "CPU ops",
    "user_annotation": "user annotations",
    "gpu_user_annotation": "GPU user annotations",
    "python_function": "Python functions",
    "cuda_runtime": "CUDA runtime calls",
    "cuda_driver": "CUDA driver calls",
    "Trace": "profiler spans",
    MEMORY_CATEGORY: "memory events",
}
_SHOWN = 6  # categories named in one message; the rest are summed up


def _words(category: str, ph: str) -> str:
    if ph == "X" or category == MEMORY_CATEGORY:
        return CATEGORY_WORDS.get(category, f"{category} events" if category else "uncategorised events")
    kind = "instants" if ph in ("i", "I") else f"events of phase {ph!r}" if ph else "events without a phase"
    return f"{category} {kind}" if category else f"uncategorised {kind}"


def listing(counts: Mapping[tuple[str, str], int]) -> str:
    """`77 cuda_profiler_range events, 5,117 CPU ops`, the largest first."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    parts = [f"{count:,} {_words(category, ph)}" for (category, ph), count in ordered[:_SHOWN]]
    rest = ordered[_SHOWN:]
    if rest:
        parts.append(f"{sum(count for _, count in rest):,} events of {len(rest)} more categories")
    return ", ".join(parts)


def _split(categories: Mapping[str, int]) -> dict[tuple[str, str], int]:
    split: dict[tuple[str, str], int] = {}
    for key, count in categories.items():
        category, _, ph = key.partition("\t")
        split[(category, ph)] = split.get((category, ph), 0) + count
    return split


def census_warnings(path: Path, categories: Mapping[str, int]) -> list[str]:
    """Warnings for a file without kernels, with unknown interval categories, or with ignored events."""
    counts = _split(categories)
    warnings: list[str] = []
    # Metadata (process / thread names) is read by nothing and tells nothing about the run.
    content = {key: count for key, count in counts.items() if key[1] != "M" and key[0] != PROFILER_MARKER_CATEGORY}
    if not any(count for (category, ph), count in content.items() if category == "kernel" and ph == "X"):
        found = listing(content)
        warnings.append(f"{path}: no GPU kernels ({found})" if found else f"{path}: no GPU kernels (no events)")
    known = GPU_CATEGORIES | API_CATEGORIES | KNOWN_RANGE_CATEGORIES | IGNORED_CATEGORIES
    unknown = {key: count for key, count in content.items() if key[1] == "X" and key[0] not in known}
    if unknown:
        warnings.append(f"{path}: {listing(unknown)} not analysed as kernels, copies or ops "
                        "(categories the dashboard does not know; kept as ranges of their own category)")
    ignored = {
        key: count for key, count in content.items()
        # flows are read for links, `[memory]` instants become device_memory
        if key[1] != "X" and key[0] not in FLOW_CATEGORIES and key[0] != MEMORY_CATEGORY
    }
    if ignored:
        warnings.append(f"{path}: ignored {listing(ignored)} (not intervals)")
    return warnings
