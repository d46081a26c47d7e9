"""Quota gauges (R-GAUGE-1): utilization 0..1 + resets_at per window; cold until first seen.

Two feeds (response headers and the usage poll) write the same slots; the freshest observation
wins whichever feed it came from. Parsing lives in providers/; this module only keeps and reads.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

FRESH_SECONDS = 120.0
WINDOWS = ("five_hour", "seven_day", "fable")
# Antigravity's quota is per model family, roughly 5 h each (R-AG-4).
FAMILY_WINDOWS = ("claude", "gemini_pro", "gemini_flash")
ALL_WINDOWS = WINDOWS + FAMILY_WINDOWS
# Codex's per-model limits (openai/codex codex-api/src/rate_limits.rs): one gauge per limit id
# the upstream names, "limit:" + the id (e.g. "limit:codex_bengalfox").
LIMIT_PREFIX = "limit:"
_LIMIT_ID = re.compile(r"[a-z0-9_]{1,48}")


def is_limit_window(window: str) -> bool:
    return window.startswith(LIMIT_PREFIX) and _LIMIT_ID.fullmatch(window[6:]) is not None


# An observation further ahead than this is a clock problem, not a quota fact.
MAX_FUTURE_SKEW = 300.0
MAX_RESET_AHEAD = 8 * 86400.0


@dataclass(frozen=True)
class Observation:
    """One window's reading from one feed."""

    window: str  # five_hour | seven_day | fable, or a model family (FAMILY_WINDOWS)
    utilization: float  # fraction; may exceed 1 upstream, stored as seen
    resets_at: float | None
    observed_at: float
    source: str  # headers | poll
    rejected: bool = False  # the upstream said this window is denying requests now
    # The account's quota epoch when the reading was taken (R-FT-9): reset-usage and re-auth
    # advance it, and a reading from an older epoch is discarded wherever it is in flight.
    epoch: int = 0
    # The upstream reported its windows and this one is not among them (a Codex plan without
    # the 5-hour window): the gauge reads "no such window", not the last number it had.
    absent: bool = False


def clean_observation(
    window: str,
    utilization: Any,
    resets_at: Any,
    observed_at: float,
    source: str,
    rejected: bool = False,
) -> Observation | None:
    """An Observation from untrusted numbers, or None when they cannot be trusted."""
    if window not in ALL_WINDOWS and not is_limit_window(window):
        return None
    if isinstance(utilization, bool) or not isinstance(utilization, (int, float)):
        return None
    if not math.isfinite(utilization) or utilization < 0 or utilization > 10:
        return None
    if resets_at is not None:
        if isinstance(resets_at, bool) or not isinstance(resets_at, (int, float)):
            return None
        if not math.isfinite(resets_at) or resets_at > observed_at + MAX_RESET_AHEAD:
            resets_at = None  # a far-future reset says nothing we can use
    return Observation(window, float(utilization), resets_at, observed_at, source, rejected)


@dataclass
class Gauge:
    utilization: float | None = None
    resets_at: float | None = None
    observed_at: float | None = None
    source: str | None = None
    rejected: bool = False
    absent: bool = False

    @property
    def cold(self) -> bool:
        return self.observed_at is None

    def apply(self, obs: Observation) -> bool:
        """Freshest wins, whatever the feed. Returns whether the slot changed."""
        if self.observed_at is not None and obs.observed_at < self.observed_at:
            return False
        self.utilization = obs.utilization
        self.resets_at = obs.resets_at
        self.observed_at = obs.observed_at
        self.source = obs.source
        self.rejected = obs.rejected
        self.absent = obs.absent
        return True

    def clear(self) -> None:
        self.utilization = self.resets_at = self.observed_at = self.source = None
        self.rejected = self.absent = False

    def past_reset(self, now: float) -> bool:
        return self.resets_at is not None and now >= self.resets_at

    # reading and stale are asked several times per request: written out, not through
    # `cold` and `past_reset`.
    def reading(self, now: float) -> float | None:
        """Utilization now; a window past its reset reads 0; cold or absent reads None."""
        if self.observed_at is None or self.absent:
            return None
        resets_at = self.resets_at
        if resets_at is not None and now >= resets_at:
            return 0.0
        return self.utilization

    def stale(self, now: float) -> bool:
        observed_at = self.observed_at
        if observed_at is None:
            return True
        resets_at = self.resets_at
        if resets_at is not None and now >= resets_at:
            return True
        return now - observed_at > FRESH_SECONDS

    def fresh_until(self) -> float | None:
        """When this observation stops counting for exclusion (2 min, shortened by a reset)."""
        if self.observed_at is None:
            return None
        until = self.observed_at + FRESH_SECONDS
        return min(until, self.resets_at) if self.resets_at is not None else until

    def exhausted(self, now: float) -> bool:
        """Fresh data only: explicit denial or a window at 100% (R-LANE-1)."""
        if self.stale(now):
            return False
        return self.rejected or (self.utilization or 0.0) >= 1.0

    def to_json(self, now: float) -> dict[str, Any]:
        return {
            "utilization": self.reading(now),
            "resets_at": self.resets_at,
            "observed_at": self.observed_at,
            "cold": self.cold,
            "stale": self.stale(now),
            **({"absent": True} if self.absent else {}),
        }


def family_of(model: str) -> str | None:
    """The quota family an Antigravity model draws from (None: not a family model)."""
    if model.startswith("claude-"):
        return "claude"
    if model.startswith("gemini-"):
        return "gemini_flash" if "flash" in model.split("-") else "gemini_pro"
    return None


def windows_for(provider: str | None) -> tuple[str, ...]:
    """The gauges an account of this provider has (what the API and the windows show)."""
    return FAMILY_WINDOWS if provider == "antigravity" else WINDOWS


@dataclass
class GaugeSet:
    five_hour: Gauge = field(default_factory=Gauge)
    seven_day: Gauge = field(default_factory=Gauge)
    fable: Gauge = field(default_factory=Gauge)
    claude: Gauge = field(default_factory=Gauge)
    gemini_pro: Gauge = field(default_factory=Gauge)
    gemini_flash: Gauge = field(default_factory=Gauge)
    # Codex per-model limits by window name ("limit:<id>"), and which limit a model draws on
    # (learned from a 429 that names it in `x-codex-active-limit`).
    limits: dict[str, Gauge] = field(default_factory=dict)
    model_limits: dict[str, str] = field(default_factory=dict)

    def get(self, window: str) -> Gauge:
        if window.startswith(LIMIT_PREFIX):
            return self.limits.setdefault(window, Gauge())
        gauge: Gauge = getattr(self, window)
        return gauge

    def apply(self, obs: Observation) -> bool:
        return self.get(obs.window).apply(obs)

    def clear(self) -> None:
        for window in ALL_WINDOWS:
            self.get(window).clear()
        self.limits.clear()
        self.model_limits.clear()

    def family_for(self, provider: str, model: str) -> str | None:
        """The gauge a model's own quota lives in, when it has one: an Antigravity model
        family, or a Codex per-model limit this account named for the model."""
        if provider == "antigravity":
            return family_of(model)
        if provider == "codex":
            return self.model_limits.get(model)
        return None

    def any_stale(self, now: float, windows: tuple[str, ...] = WINDOWS) -> bool:
        # A loop, not any() over a generator: leaving a generator early raises GeneratorExit
        # into it, and this is asked for every request.
        for window in windows:  # noqa: SIM110
            if getattr(self, window).stale(now):
                return True
        return False

    def all_cold(self, windows: tuple[str, ...] = WINDOWS) -> bool:
        """Nothing observed in any of these windows: never read under this revision."""
        return all(getattr(self, window).cold for window in windows)

    def to_json(self, now: float, windows: tuple[str, ...] = WINDOWS) -> dict[str, Any]:
        shown = {name: self.get(name).to_json(now) for name in windows}
        for name, gauge in self.limits.items():  # Codex per-model limits, like families
            shown[name] = gauge.to_json(now)
        return shown
