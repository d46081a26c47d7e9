"""Quota forecast (R-UI-7): when a window would run out at the current burn rate.

What it decides, in order:

1. Which readings count: those of the last hour (`BURN_WINDOW_S`) that belong to the window's
   current period — a reading lower than the one before it means the window reset, so only the
   readings after the last drop describe this period's burn.
2. The burn rate: the least-squares slope of utilization over time through those readings.
   It needs at least two readings `MIN_SPAN_S` apart; a flat or falling line has no forecast.
3. When it runs out: the line reaches 100 % (`FULL`) from the newest reading.
4. Whether to say it: only when that moment comes before the window resets (a window that
   resets first is in no danger). An unknown reset time says nothing against it.

`UsageTrail` keeps the recent readings per account and window in memory, so the tray can ask
for a forecast on every refresh without touching the database.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BURN_WINDOW_S = 3600.0  # "the burn rate over the last hour of observations" (SPEC R-UI-7)
MIN_SPAN_S = 120.0  # two readings seconds apart say more about noise than about a burn
FULL = 1.0
# A reading at most this much below the previous one is rounding noise, not a reset.
RESET_DROP = 0.005

Point = tuple[float, float]  # (observed_at, utilization 0..1)

# Which readings a trail keeps, in memory (UsageTrail) and in the database's history alike
# (store.quota): one a minute per window is plenty for a 7-day chart and an hour's burn rate,
# and a reading that moved by at least TRAIL_STEP is kept even sooner (a reset, a burst). A
# busy account gets a reading with every response (R-GAUGE-2), saved in 0.1 s batches: kept
# whole, an hour of them was up to 36,000 points per window, megabytes that grew for the first
# hour of steady traffic and say no more about a burn rate than these 60 do.
TRAIL_SPACING_S = 60.0
TRAIL_STEP = 0.01


def adds_to_trail(last: Point, observed_at: float, utilization: float) -> bool:
    """Whether a reading after `last` is worth keeping (see TRAIL_SPACING_S)."""
    return observed_at - last[0] >= TRAIL_SPACING_S or abs(utilization - last[1]) >= TRAIL_STEP


@dataclass(frozen=True)
class Forecast:
    runs_out_at: float
    resets_at: float | None
    rate_per_hour: float  # utilization fraction per hour

    def text(self, now: float) -> str:
        out = f"runs out in ~{approx_duration(self.runs_out_at - now)}"
        if self.resets_at is not None:
            out += f", resets in {approx_duration(self.resets_at - now)}"
        return out


def current_period(points: Sequence[Point]) -> list[Point]:
    """The readings after the last reset (a clear drop in utilization), oldest first."""
    ordered = sorted(points)
    start = 0
    for i in range(1, len(ordered)):
        if ordered[i][1] < ordered[i - 1][1] - RESET_DROP:
            start = i
    return ordered[start:]


def burn_rate(points: Sequence[Point]) -> float | None:
    """Least-squares slope in utilization per second, or None with too little to go on."""
    if len(points) < 2 or points[-1][0] - points[0][0] < MIN_SPAN_S:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_u = sum(u for _, u in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var <= 0:
        return None
    return sum((t - mean_t) * (u - mean_u) for t, u in points) / var


def forecast(points: Iterable[Point], resets_at: float | None, now: float) -> Forecast | None:
    """A Forecast when this window would run out before it resets, else None."""
    recent = [(t, u) for t, u in points if now - BURN_WINDOW_S <= t <= now]
    period = current_period(recent)
    rate = burn_rate(period)
    if rate is None or rate <= 0:
        return None
    last_t, last_u = period[-1]
    if last_u >= FULL:
        return None  # already out: the gauge says so, a forecast would only repeat it
    runs_out_at = last_t + (FULL - last_u) / rate
    runs_out_at = max(runs_out_at, now)
    if resets_at is not None and runs_out_at >= resets_at:
        return None
    return Forecast(runs_out_at, resets_at, rate * 3600.0)


def approx_duration(seconds: float) -> str:
    """Whole minutes, hours and minutes, or days and hours: 4m, 1h 10m, 2d 3h."""
    minutes = max(1, round(seconds / 60))
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


class UsageTrail:
    """The last hour of readings per (account, window), oldest first, in memory: those worth
    keeping (`adds_to_trail`), as the database keeps them, so a restart reads back the same."""

    def __init__(self, keep_s: float = BURN_WINDOW_S) -> None:
        self._keep_s = keep_s
        self._points: dict[tuple[int, str], deque[Point]] = {}

    def add(self, account_id: int, window: str, observed_at: float, utilization: float) -> None:
        trail = self._points.setdefault((account_id, window), deque())
        if trail and observed_at < trail[-1][0]:
            return  # an older reading arriving late: the freshest already won (R-GAUGE-1)
        if trail and observed_at == trail[-1][0]:
            trail.pop()
        elif trail and not adds_to_trail(trail[-1], observed_at, utilization):
            return
        trail.append((observed_at, utilization))
        while trail and trail[0][0] < observed_at - self._keep_s:
            trail.popleft()

    def points(self, account_id: int, window: str) -> list[Point]:
        return list(self._points.get((account_id, window), ()))

    def forget(self, account_id: int) -> None:
        for key in [k for k in self._points if k[0] == account_id]:
            del self._points[key]

    def clear(self) -> None:
        self._points.clear()
