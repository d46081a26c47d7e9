"""What `GET /metrics` counts as traffic passes (R-OBS-1): plain tallies, no lock, no library.

The request path only adds to dictionaries here (about 0.1 µs a count; a labelled
prometheus_client Counter takes a lock and costs about 1.3 µs, a Histogram 1.7 µs). Everything
about the pool (gauges, states, in flight, cooldowns) is read when a scraper asks
(`proxy/metrics.py`), never kept up to date per request. This module imports nothing heavy, so
the CLI's quick commands that import the service do not pay for the exposition library.

Label values are bounded: outcomes, providers, model families, cache-miss causes and 429
scopes are small fixed sets; a client's model name never becomes a label of its own.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field

from sublane_desktop.core.gauges import family_of
from sublane_desktop.core.records import RequestRecord
from sublane_desktop.core.routing import is_fable_model

# SubLane's own time before the upstream can start: sub-millisecond when the credential is
# cached, tens of milliseconds with a translation of a long conversation, seconds only when an
# OAuth refresh runs first.
ADDED_LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)
# Time to the first output a person sees: models think for a few hundred milliseconds up to
# minutes (long reasoning before the first token).
FIRST_OUTPUT_BUCKETS = (
    0.25,
    0.5,
    1.0,
    2.0,
    3.0,
    5.0,
    8.0,
    13.0,
    20.0,
    30.0,
    60.0,
    120.0,
    300.0,
)

_O_SERIES = re.compile(r"o\d")


def model_family(provider: str, model: str) -> str:
    """A bounded name for a model's family, for labels: never the client's own text."""
    parts = model.lower().split("-")
    if provider == "anthropic":
        if is_fable_model(model):
            return "fable"
        for name in ("opus", "sonnet", "haiku"):
            if name in parts:
                return name
        return "claude" if parts[0] == "claude" else "other"
    if provider == "codex":
        if "codex" in parts:
            return "codex"
        if parts[0] == "gpt":
            return "gpt"
        return "o_series" if _O_SERIES.fullmatch(parts[0]) else "other"
    if provider == "antigravity":
        return family_of(model.lower()) or "other"
    return "other"


@dataclass
class Series:
    """One histogram series: per-bucket counts (the last is +Inf) and the sum."""

    counts: list[int]
    total: float = 0.0


@dataclass
class Histogram:
    """Observations per label value, in fixed buckets (upper bounds inclusive, as `le` is)."""

    bounds: tuple[float, ...]
    series: dict[str, Series] = field(default_factory=dict)

    def observe(self, label: str, value: float) -> None:
        series = self.series.get(label)
        if series is None:
            series = self.series[label] = Series([0] * (len(self.bounds) + 1))
        series.counts[bisect_left(self.bounds, value)] += 1
        series.total += value


class TrafficTally:
    """Counters and histograms of the traffic this server has seen since it started."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str, str]] = Counter()  # outcome, provider, family
        self.upstream_429: Counter[tuple[str, str]] = Counter()  # provider, scope
        self.cache_misses: Counter[tuple[str, str]] = Counter()  # provider, cause
        self.reread_tokens: Counter[tuple[str, str]] = Counter()  # provider, cause
        self.added_latency = Histogram(ADDED_LATENCY_BUCKETS)  # by provider
        self.first_output = Histogram(FIRST_OUTPUT_BUCKETS)  # by provider
        # The family of each model seen, worked out once: a client uses a handful of models
        # (bounded: a client may send any name).
        self._families: dict[tuple[str, str], str] = {}

    def count_record(self, record: RequestRecord) -> None:
        """Every request record passes here once, as it is queued (R-REC-1's attempts)."""
        provider = record.provider
        model = record.model
        family = self._families.get((provider, model))
        if family is None:
            if len(self._families) >= 256:
                self._families.clear()
            family = self._families[provider, model] = model_family(provider, model)
        self.requests[record.outcome, provider, family] += 1
        if record.first_token_ms is not None:
            self.first_output.observe(provider, record.first_token_ms / 1000.0)
        cause = record.cache_miss
        if cause is not None:
            self.cache_misses[provider, cause] += 1
            self.reread_tokens[provider, cause] += record.reread_tokens or 0

    def count_upstream(
        self, provider: str, added_seconds: float, scope: str, status: int | None
    ) -> None:
        """An attempt that reached an upstream: SubLane's own time before the request left,
        and a 429's scope (core.cooldown's QUOTA when it named a window, a model family or a
        Codex limit as spent, PACING when it named none: R-OBS-3)."""
        self.added_latency.observe(provider, max(0.0, added_seconds))
        if status == 429:
            self.upstream_429[provider, scope] += 1
