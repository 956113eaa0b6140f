"""Figure values as numbers, whether plotly packed them (a base64 typed-array spec) or left a list."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np


def decoded(values: Any) -> list[Any]:
    """A typed-array spec (`{"dtype", "bdata"}`) or any sequence, as a list of numbers."""
    if isinstance(values, dict):
        flat = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        return flat.reshape(values["shape"]).tolist() if "shape" in values else flat.tolist()
    return list(values)
