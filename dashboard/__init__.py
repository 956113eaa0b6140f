"""dashboard: where GPU time and memory go, and why."""

__version__ = "0.1.0"


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    # `dashboard.mark` loads the capture machinery only when a script uses it.
    if name == "mark":
        from dashboard.capture.markers import mark

        return mark
    raise AttributeError(f"module 'dashboard' has no attribute {name!r}")
