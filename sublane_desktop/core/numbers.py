"""Reading numbers from untrusted wire text (headers, JSON bodies) without ever crashing."""

from __future__ import annotations

import math
from typing import Any


def finite_float(value: Any) -> float | None:
    """A finite float from a number or numeric string; None for anything else (bools too)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
