"""Quota gauges (R-GAUGE-1): utilization 0..1 + resets_at per window; cold until first seen."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FRESH_SECONDS = 120.0
WINDOWS = ("five_hour", "seven_day", "fable")


@dataclass
class Gauge:
    utilization: float | None = None
    resets_at: float | None = None
    observed_at: float | None = None
    source: str | None = None

    @property
    def cold(self) -> bool:
        return self.observed_at is None

    def reading(self, now: float) -> float | None:
        """Utilization now; a window past its reset reads 0; cold reads None (unknown)."""
        if self.cold:
            return None
        if self.resets_at is not None and now >= self.resets_at:
            return 0.0
        return self.utilization

    def stale(self, now: float) -> bool:
        if self.cold:
            return True
        if self.resets_at is not None and now >= self.resets_at:
            return True
        return now - (self.observed_at or 0.0) > FRESH_SECONDS

    def to_json(self, now: float) -> dict[str, Any]:
        return {
            "utilization": self.reading(now),
            "resets_at": self.resets_at,
            "observed_at": self.observed_at,
            "cold": self.cold,
            "stale": self.stale(now),
        }


@dataclass
class GaugeSet:
    five_hour: Gauge = field(default_factory=Gauge)
    seven_day: Gauge = field(default_factory=Gauge)
    fable: Gauge = field(default_factory=Gauge)

    def to_json(self, now: float) -> dict[str, Any]:
        return {name: getattr(self, name).to_json(now) for name in WINDOWS}
