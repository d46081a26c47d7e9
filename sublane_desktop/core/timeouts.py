"""Upstream timeouts per phase (R-FT-1): connecting, waiting for response headers, and silence
inside a body or stream.

There is deliberately no limit on a stream's total duration: long thinking streams are normal,
only silence is a fault. The values are settings, read when each request starts, so a change
applies to the next request without a restart.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CONNECT = "upstream.connect_timeout_s"
HEADERS = "upstream.header_timeout_s"
IDLE = "upstream.idle_timeout_s"
DEFAULTS: dict[str, float] = {CONNECT: 10.0, HEADERS: 120.0, IDLE: 90.0}
MAX_SECONDS = 3600.0


@dataclass(frozen=True)
class UpstreamTimeouts:
    connect: float
    headers: float
    idle: float

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> UpstreamTimeouts:
        connect = settings.get(CONNECT, DEFAULTS[CONNECT])
        headers = settings.get(HEADERS, DEFAULTS[HEADERS])
        idle = settings.get(IDLE, DEFAULTS[IDLE])
        try:
            return _checked(connect, headers, idle)  # read per request: check values once
        except TypeError:  # an unhashable value from a hand-edited database
            return _check(connect, headers, idle)


_KEYS = (CONNECT, HEADERS, IDLE)


def _check(*given: Any) -> UpstreamTimeouts:
    def value(key: str, raw: Any) -> float:
        try:
            return validate(key, raw)
        except ValueError:  # a hand-edited database: the default beats no limit at all
            return DEFAULTS[key]

    return UpstreamTimeouts(*(value(key, raw) for key, raw in zip(_KEYS, given, strict=True)))


# typed: 1, 1.0 and True are separate entries (True is refused, 1 is one second)
_checked = functools.lru_cache(maxsize=16, typed=True)(_check)


def validate(key: str, value: Any) -> float:
    """A timeout setting as seconds, or ValueError naming the rule."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (0 < value <= MAX_SECONDS)
    ):
        raise ValueError(f"{key} must be a number of seconds in (0, {MAX_SECONDS:g}]")
    return float(value)
