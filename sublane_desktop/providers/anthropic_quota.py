"""Anthropic subscription quota signals (PROTOCOLS.md): rate-limit headers and the usage poll.

Both feeds are undocumented and drift between client versions, so everything here is
defensive: an unparseable value is ignored, never allowed to poison a gauge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_desktop.core.cooldown import QuotaHit
from sublane_desktop.core.gauges import Observation, clean_observation
from sublane_desktop.core.numbers import finite_float, iso_seconds

PREFIX = "anthropic-ratelimit-unified-"
# header window name -> gauge window
HEADER_WINDOWS = {"5h": "five_hour", "7d": "seven_day", "7d_oi": "fable"}
FABLE_NAME = "fable"
# Per window: its utilization, status and reset header names (read on every response).
_WINDOW_HEADERS = tuple(
    (window, f"{PREFIX}{name}-utilization", f"{PREFIX}{name}-status", f"{PREFIX}{name}-reset")
    for name, window in HEADER_WINDOWS.items()
)


def header_observations(headers: Mapping[str, str], now: float) -> list[Observation]:
    """Gauge readings carried by one response's `anthropic-ratelimit-unified-*` headers."""
    found = []
    for window, utilization, status_name, reset in _WINDOW_HEADERS:
        util = finite_float(headers.get(utilization))
        if util is None:
            continue
        status = (headers.get(status_name) or "").strip().lower()
        obs = clean_observation(
            window,
            util,
            finite_float(headers.get(reset)),
            now,
            "headers",
            rejected=status == "rejected",
        )
        if obs is not None:
            found.append(obs)
    return found


def account_wide_rejection(headers: Mapping[str, str]) -> bool:
    """Do the 5h/7d signals on a 429 corroborate an account-wide limit (R-LANE-7)?"""
    for name in ("5h", "7d"):
        if (headers.get(f"{PREFIX}{name}-status") or "").strip().lower() == "rejected":
            return True
        util = finite_float(headers.get(f"{PREFIX}{name}-utilization"))
        if util is not None and util >= 1.0:
            return True
    return False


# `representative-claim` values -> gauge window ("overage included" is the 7d_oi bucket)
CLAIMS = {"five_hour": "five_hour", "seven_day": "seven_day", "seven_day_overage_included": "fable"}


def named_window(headers: Mapping[str, str]) -> QuotaHit | None:
    """The quota window a 429 names (R-OBS-3), or None: the 429 is pacing.

    A window is named by its status `rejected` or its utilization at 100%, else by
    `representative-claim`. The account's own windows come before the Fable bucket, and of
    two spent ones the later reset binds. The reset: the window's own, else `reset`.
    """
    unified_reset = finite_float(headers.get(PREFIX + "reset"))
    named: list[tuple[str, float | None]] = []
    for window, utilization, status_name, reset in _WINDOW_HEADERS:
        status = (headers.get(status_name) or "").strip().lower()
        util = finite_float(headers.get(utilization))
        if status == "rejected" or (util is not None and util >= 1.0):
            named.append((window, finite_float(headers.get(reset))))
    if not named:
        claim = CLAIMS.get((headers.get(PREFIX + "representative-claim") or "").strip().lower())
        status = (headers.get(PREFIX + "status") or "").strip().lower()
        if claim is None or status not in ("", "rejected"):
            return None
        named.append((claim, None))
    account_wide = [n for n in named if n[0] != "fable"] or named
    window, resets = max(account_wide, key=lambda n: -1.0 if n[1] is None else n[1])
    return QuotaHit(window, resets if resets is not None else unified_reset)


def usage_url(base: str) -> str:
    return base.rstrip("/") + "/api/oauth/usage"


def _percent_obs(window: str, percent: Any, resets_at: Any, now: float) -> Observation | None:
    value = finite_float(percent)
    if value is None or value < 0 or value > 1000:
        return None
    return clean_observation(
        window, value / 100.0, iso_seconds(resets_at), now, "poll", rejected=False
    )


def usage_observations(body: Any, now: float) -> list[Observation]:
    """Readings from `GET /api/oauth/usage`: percent 0-100 and ISO-8601 resets (classic keys
    and the newer `limits[]` rows; the Fable row is weekly_scoped with display name Fable)."""
    if not isinstance(body, dict):
        return []
    found: dict[str, Observation] = {}
    for key, classic in (("five_hour", "five_hour"), ("seven_day", "seven_day")):
        slot = body.get(key)
        if isinstance(slot, dict):
            obs = _percent_obs(classic, slot.get("utilization"), slot.get("resets_at"), now)
            if obs is not None:
                found[classic] = obs
    limits = body.get("limits")
    for row in limits if isinstance(limits, list) else []:
        if not isinstance(row, dict):
            continue
        kind = row.get("kind")
        if not isinstance(kind, str):
            continue
        window: str | None = {"session": "five_hour", "weekly_all": "seven_day"}.get(kind)
        if kind == "weekly_scoped":
            raw = row.get("scope")
            scope: dict[str, Any] = raw if isinstance(raw, dict) else {}
            raw = scope.get("model")
            model: dict[str, Any] = raw if isinstance(raw, dict) else {}
            name = str(model.get("display_name") or "").strip().lower()
            window = "fable" if name == FABLE_NAME else None
        if window is None:
            continue
        obs = _percent_obs(window, row.get("percent"), row.get("resets_at"), now)
        if obs is not None:
            found[window] = obs
    return list(found.values())


async def read_usage(http: Any, base: str, access_token: str, now: float) -> list[Observation]:
    """One `GET /api/oauth/usage` (~10 quick calls buy an hour's 429: poll sparingly)."""
    from sublane_desktop.providers.usage_fetch import fetch_usage

    headers = {
        "authorization": f"Bearer {access_token}",
        "anthropic-beta": "oauth-2025-04-20",
        "anthropic-version": "2023-06-01",
    }
    return usage_observations(await fetch_usage(http, usage_url(base), headers), now)
