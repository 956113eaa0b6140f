"""dashboard: where GPU time and memory go, and why."""

__version__ = "0.1.0"
