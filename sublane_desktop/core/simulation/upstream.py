"""The simulated upstream account (R-SIM-3): quota windows, a prompt cache, and its headers.

It plays the part of the provider, not of the pool: windows fill by what a request costs, say
429 when full, reset at their staggered times, and report utilization the way the response
headers do (as gauge observations). Three kinds, as the product meets them: an Anthropic
account (5h, 7d and the Fable bucket), a Codex account (5h and weekly windows) and an
Antigravity account, whose quota is per model family in ~5 h windows (R-AG-4) and which serves
only the models on its list (what a spill may send it, R-WF-6). Every window keeps
a ledger, so used + wasted + left always adds up to the capacity it offered (conservation).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sublane_desktop.core.cache_miss import DEFAULT_TTL
from sublane_desktop.core.gauges import Observation, family_of

CACHE_TTL = DEFAULT_TTL  # the provider's prompt cache: 5 minutes from the last use
# What a token costs against the quota, relative to a fresh input token. Subscriptions meter
# roughly like API prices: cache reads are a tenth of input, output five times input.
CACHED_COST = 0.1
OUTPUT_COST = 5.0
RETRY_AFTER_CAP = 300.0  # a provider tells a client to come back within minutes, not hours

FIVE_HOURS = 5 * 3600.0
WEEK = 7 * 86400.0


@dataclass
class Window:
    """One quota window: `capacity` units per `period`, the next reset at `resets_at`."""

    name: str  # five_hour | seven_day | fable
    capacity: float
    period: float
    resets_at: float
    used: float = 0.0
    # ledger, in quota units, over the whole run
    offered: float = 0.0  # capacity of every period the run saw (the first from its level)
    spent: float = 0.0
    resets: list[tuple[float, float, float]] = field(default_factory=list)  # (start, end, unused)

    def __post_init__(self) -> None:
        self.offered = self.capacity - self.used

    def roll(self, now: float) -> None:
        """Reset every period that ended by `now`, recording what it left unused."""
        while now >= self.resets_at:
            start = self.resets_at - self.period
            self.resets.append((start, self.resets_at, self.capacity - self.used))
            self.used = 0.0
            self.resets_at += self.period
            self.offered += self.capacity

    @property
    def full(self) -> bool:
        return self.used >= self.capacity

    @property
    def utilization(self) -> float:
        return self.used / self.capacity

    def spend(self, units: float) -> None:
        """The upstream finishes a request it admitted, but never past the window's capacity."""
        amount = min(units, self.capacity - self.used)
        self.used += amount
        self.spent += amount


@dataclass(frozen=True)
class Served:
    """What the upstream did with one request."""

    status: int  # 200 or 429
    cached_tokens: int = 0
    total_input: int = 0
    retry_after: float | None = None  # on a 429 that rejects an account-wide window
    observations: tuple[Observation, ...] = ()
    # An Antigravity 429 QUOTA_EXHAUSTED: the family that is spent and when it resets
    # (quotaResetTimeStamp); the relay rests that family alone (R-WF-5).
    spent_family: str | None = None
    family_resets_at: float | None = None


# What an Antigravity login lists (fetchAvailableModels, abridged): Claude's everyday models and
# Gemini, never Fable (Anthropic's own).
ANTIGRAVITY_MODELS = (
    "claude-sonnet-4-5",
    "claude-opus-4-5",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
)


@dataclass
class SimAccount:
    name: str
    windows: dict[str, Window]
    cache: dict[str, tuple[float, int]] = field(default_factory=dict)  # stream -> expiry, tokens
    provider: str = "anthropic"
    models: tuple[str, ...] | None = None  # what it serves; None: every model of its provider

    def serves(self, model: str) -> bool:
        return self.models is None or model in self.models

    def windows_for(self, model: str, fable: bool) -> tuple[str, ...]:
        """The windows a request for `model` draws on."""
        if self.provider == "antigravity":
            family = family_of(model)
            return (family,) if family is not None and family in self.windows else ()
        if fable and "fable" in self.windows:
            return ("five_hour", "seven_day", "fable")
        return ("five_hour", "seven_day")

    def roll(self, now: float) -> None:
        for window in self.windows.values():
            window.roll(now)

    def utilization(self, now: float) -> dict[str, float]:
        self.roll(now)
        return {name: w.utilization for name, w in self.windows.items()}

    def headers(self, now: float, rejected: tuple[str, ...] = ()) -> tuple[Observation, ...]:
        return tuple(
            Observation(name, w.utilization, w.resets_at, now, "headers", rejected=name in rejected)
            for name, w in self.windows.items()
        )

    def serve(
        self,
        stream: str,
        fable: bool,
        prefix_tokens: int,
        new_tokens: int,
        output_tokens: int,
        now: float,
        duration: float = 0.0,
        model: str = "claude-sonnet-4-5",
    ) -> Served:
        """Admit or refuse one request at `now`; an admitted one is charged at once, and its
        prompt stays cached for the TTL after its answer ends (`duration` later)."""
        self.roll(now)
        names = self.windows_for(model, fable)
        full = tuple(n for n in names if self.windows[n].full)
        if full and self.provider == "antigravity":
            # Google: 429 RESOURCE_EXHAUSTED, QUOTA_EXHAUSTED for the model, with the reset.
            family = full[0]
            return Served(429, spent_family=family, family_resets_at=self.windows[family].resets_at)
        if full:
            # Anthropic: an account-wide window answers with retry-after; the model-scoped
            # Fable bucket alone does not (R-LANE-7 reads the difference).
            account_wide = [self.windows[n] for n in full if n != "fable"]
            retry = (
                None
                if not account_wide
                else min(RETRY_AFTER_CAP, max(1.0, min(w.resets_at for w in account_wide) - now))
            )
            return Served(429, retry_after=retry, observations=self.headers(now, full))
        # Headers come first: the level before this request. Antigravity sends no quota
        # headers; its gauges come from the quota poll alone.
        observations = self.headers(now) if self.provider != "antigravity" else ()
        entry = self.cache.get(stream)
        cached = min(entry[1], prefix_tokens) if entry is not None and entry[0] > now else 0
        total = prefix_tokens + new_tokens
        units = (total - cached) + CACHED_COST * cached + OUTPUT_COST * output_tokens
        for name in names:
            self.windows[name].spend(units)
        self.cache[stream] = (now + duration + CACHE_TTL, total)
        return Served(200, cached_tokens=cached, total_input=total, observations=observations)
