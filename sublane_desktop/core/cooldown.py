"""Cooldowns: the ladder of R-POOL-7 (15 s doubling per failure in a streak, capped at 15 min)
for pacing and errors, and the evidence each cooldown rests on (R-OBS-3): a quota 429 holds
until the window it named resets, or until a reading shows that window open again."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

BASE_SECONDS = 15.0
CAP_SECONDS = 15 * 60.0


def cooldown_seconds(streak: int, retry_after: float | None = None) -> float:
    """How long an account rests after the `streak`-th failure in a row.

    An upstream retry-after is a mandate and wins over the ladder, bounded to the same cap so a
    bogus header cannot bench an account for days.
    """
    if retry_after is not None and retry_after > 0:
        return min(CAP_SECONDS, max(1.0, float(retry_after)))
    exponent = max(0, streak - 1)
    return min(CAP_SECONDS, BASE_SECONDS * (2.0 ** min(exponent, 16)))


# --- what holds an account, on what evidence (R-OBS-3) -----------------------------------------

QUOTA = "quota"  # a 429 that named a window: held until that window's reset, or evidence
PACING = "pacing"  # a 429 that named none: the ladder (never "quota exhausted")
ERROR = "error"  # 5xx, 529, network trouble, timeouts: the ladder
KINDS = (QUOTA, PACING, ERROR)
# A reset further ahead than this is no evidence (gauges ignore it too: MAX_RESET_AHEAD).
MAX_QUOTA_HOLD = 8 * 86400.0


@dataclass(frozen=True)
class QuotaHit:
    """What a quota 429 named: its window (None: a usage limit that named no window) and the
    window's reset, when the upstream said."""

    window: str | None
    resets_at: float | None = None


@dataclass(frozen=True)
class Evidence:
    """Why one scope of an account rests (the account, its Fable bucket, or a model family):
    the kind, the quota window a 429 named, and when it began: only readings taken from
    then on can end it early."""

    kind: str
    window: str | None
    since: float
    resets_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "window": self.window,
            "since": self.since,
            "resets_at": self.resets_at,
        }

    @classmethod
    def from_json(cls, data: Any) -> Evidence | None:
        """Stored evidence, or None when it cannot be read (then the hold is plain pacing)."""
        if not isinstance(data, dict) or data.get("kind") not in KINDS:
            return None
        window, since, resets = data.get("window"), data.get("since"), data.get("resets_at")
        if window is not None and not isinstance(window, str):
            return None
        if not isinstance(since, (int, float)) or not _number(since):
            return None
        if resets is not None and not (isinstance(resets, (int, float)) and _number(resets)):
            return None
        return cls(data["kind"], window, float(since), None if resets is None else float(resets))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def quota_hold_until(
    hit: QuotaHit, now: float, streak: int, retry_after: float | None = None
) -> float:
    """Until when a quota 429 holds its scope: the named window's reset (its end is the
    evidence, however far within a week), else the ladder as for pacing."""
    if hit.resets_at is not None and now < hit.resets_at <= now + MAX_QUOTA_HOLD:
        return hit.resets_at
    return now + cooldown_seconds(streak, retry_after)


def window_label(window: str | None) -> str:
    if window is None:
        return "usage"
    if window.startswith("limit:"):  # a Codex per-model limit, by the id the upstream names
        return window[6:]
    labels = {"five_hour": "5h", "seven_day": "7d", "fable": "Fable", "claude": "Claude"}
    return labels.get(window, window.replace("_", " ").title())


def clock_minutes(ts: float, now: float) -> str:
    """A local time of day as a person reads it in a row or a tooltip: 14:05, or "Tue 14:05"
    when it is not within the day (a weekly window's reset)."""
    return time.strftime("%H:%M" if ts - now < 20 * 3600 else "%a %H:%M", time.localtime(ts))


def hold_cause(kind: str) -> str | None:
    """What a ladder cooldown answers (None for a quota hold: its words name the window)."""
    return {PACING: "upstream 429 (pacing)", ERROR: "upstream error"}.get(kind)


def hold_words(evidence: Evidence | None, scope: str, until: float, now: float) -> str:
    """One line saying which evidence holds this scope and until when."""
    kind = evidence.kind if evidence is not None else ERROR
    at = clock_minutes(until, now)
    if kind == QUOTA:
        assert evidence is not None
        told = evidence.resets_at is not None and abs(evidence.resets_at - until) < 1.0
        verb = "resets" if told else "rechecking at"  # no reset named: the ladder's recheck
        if evidence.window is None:  # a usage limit that named no window (Codex's body)
            return f"Usage limit reached, {verb} {at}"
        return f"Limit reached ({window_label(evidence.window)}), {verb} {at}"
    prefix = "Cooling" if scope == "account" else f"{window_label(scope)} cooling"
    return f"{prefix} until {at} — {hold_cause(kind)}"
