"""Reading numbers from untrusted wire text (headers, JSON bodies) without ever crashing."""

from __future__ import annotations

import math
from datetime import datetime
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


def iso_seconds(value: Any) -> float | None:
    """Unix seconds from an ISO-8601 / RFC 3339 text (a trailing Z included), else None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
