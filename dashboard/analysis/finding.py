"""One finding: what to fix, what it costs, the numbers behind it, and the view that shows it.

Ranking: findings are ordered by `share` (the time or bytes at stake over the
total they come from: a rank's GPU span, a memory's capacity), most first, so
time and bytes findings compare on one scale. Severity follows that share;
a finding that costs no runtime (a compiler pass that grew the IR, a planner
plan near its capacity) is `info` whatever its share, and says what it would
save instead.

Counted once: a GPU-time finding names its `rank` and which part of that
rank's span its time comes from (`budget`: "idle" for idle time, "busy" for
time the GPU was running something). A rank's idle findings are disjoint
parts of its idle time and its busy findings disjoint parts of its busy time,
so the time at stake of all its findings adds up to at most its span.
Symptoms of the same time (short kernels, a layer's launch gaps, uneven
collectives) are evidence of the finding whose time they are, not findings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlencode

from dashboard.analysis.units import format_bytes, format_ns

HIGH_SHARE = 0.25  # at stake >= 25 % of its total: high severity
MEDIUM_SHARE = 0.10  # >= 10 %: medium; below: low
SEVERITIES = ("high", "medium", "low", "info")
IDLE, BUSY = "idle", "busy"  # the part of a rank's span a GPU-time finding's time is taken from


def severity_of(share: float) -> str:
    """high / medium / low by the share at stake (HIGH_SHARE, MEDIUM_SHARE)."""
    if share >= HIGH_SHARE:
        return "high"
    return "medium" if share >= MEDIUM_SHARE else "low"


def view_href(path: str, run_id: str, **params: Any) -> str:
    """A link opening `path` with the run and view state (as layouts.page.page_href writes it)."""
    query = {"run": run_id, **params}
    query = {key: value for key, value in query.items() if value not in (None, "", [])}
    return f"{path}?{urlencode(query)}"


def padded_window(start_ns: int, end_ns: int, pad_ns: int | None = None) -> str:
    """`a-b` around [start_ns, end_ns], with its own length on each side (so the context shows)."""
    pad = max(end_ns - start_ns, 1) if pad_ns is None else pad_ns
    return f"{int(start_ns - pad)}-{int(end_ns + pad)}"


@dataclass(frozen=True)
class Finding:
    key: str  # stable identifier of the rule (and its subject), e.g. "idle:launch-bound"
    title: str  # plain words, the numbers that matter in it
    share: float  # at stake / the total named by `share_of`
    share_of: str  # "rank 0's GPU span (1.22 s)"
    url: str  # opens the view that shows it
    advice: str  # what to try
    at_stake_ns: int | None = None
    at_stake_bytes: int | None = None
    at_stake_ops: int | None = None  # compiler findings: IR operations (neither time nor bytes)
    evidence: dict[str, Any] = field(default_factory=dict)  # label -> number or short text
    rank: int | None = None  # GPU-time findings: the rank whose time is at stake
    budget: str | None = None  # IDLE or BUSY: the part of that rank's span the time comes from
    informational: bool = False  # costs no runtime (compile time, a plan's headroom): severity `info`

    @property
    def at_stake_text(self) -> str:
        """The amount at stake with its unit: a time, bytes or IR operations."""
        if self.at_stake_ns is not None:
            return format_ns(self.at_stake_ns)
        if self.at_stake_bytes is not None:
            return format_bytes(self.at_stake_bytes)
        return f"{self.at_stake_ops:,} IR ops" if self.at_stake_ops is not None else "—"

    @property
    def severity(self) -> str:
        return "info" if self.informational else severity_of(self.share)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["severity"] = self.severity
        if data["at_stake_ns"] is None:
            del data["at_stake_ns"]
        if data["at_stake_bytes"] is None:
            del data["at_stake_bytes"]
        if data["at_stake_ops"] is None:
            del data["at_stake_ops"]
        return data


def ranked(findings: list[Finding]) -> list[Finding]:
    """Most at stake first (by share), findings that cost no runtime after the others, then by title."""
    return sorted(findings, key=lambda finding: (finding.informational, -finding.share, finding.title))
