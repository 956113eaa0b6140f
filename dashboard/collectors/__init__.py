"""Collectors turn one kind of source into canonical tables; see base.py for the contract."""

from dashboard.collectors.base import Collected, Collector, IngestError, Probe, ProgressFn
from dashboard.collectors.registry import collect, collectors, detect, register, unregister

__all__ = [
    "Collected",
    "Collector",
    "IngestError",
    "Probe",
    "ProgressFn",
    "collect",
    "collectors",
    "detect",
    "register",
    "unregister",
]
