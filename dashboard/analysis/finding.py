"""One finding: what to fix, what it costs, the numbers behind it, and the view that shows it.

Ranking: findings are ordered by `share` (the time or bytes at stake over the
total they come from: a rank's GPU span, a memory's capacity), most first, so
time and bytes findings compare on one scale.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlencode

from dashboard.analysis.units import format_bytes, format_ns

HIGH_SHARE = 0.25  # at stake >= 25 % of its total: high severity
MEDIUM_SHARE = 0.10  # >= 10 %: medium; below: low
SEVERITIES = ("high", "medium", "low")


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
        return severity_of(self.share)

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
    """Most at stake first (by share), then by title for a stable order."""
    return sorted(findings, key=lambda finding: (-finding.share, finding.title))
