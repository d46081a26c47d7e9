"""Codex subscription quota (PROTOCOLS.md "Quota"): the `wham/usage` read and the header feed,
as gauge Observations. Primary = 5 h window, secondary = 7 d. Defensive like every quota feed:
what cannot be parsed is ignored."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from sublane_desktop.core.gauges import Observation, clean_observation
from sublane_desktop.core.numbers import finite_float
from sublane_desktop.providers.codex import QuotaObservation


def usage_url(base: str) -> str:
    """As Codex CLI derives it: `{origin}/backend-api/wham/usage` under a backend-api base,
    else `{base}/api/codex/usage`."""
    if "/backend-api" in base:
        parts = urlsplit(base)
        return f"{parts.scheme}://{parts.netloc}/backend-api/wham/usage"
    return base.rstrip("/") + "/api/codex/usage"


def header_observations(quota: QuotaObservation) -> list[Observation]:
    found = []
    for window, slot in (("five_hour", quota.five_hour), ("seven_day", quota.seven_day)):
        if slot is None:
            continue
        obs = clean_observation(
            window, slot.utilization, slot.resets_at, quota.observed_at, "headers"
        )
        if obs is not None:
            found.append(obs)
    return found


def usage_observations(body: Any, now: float) -> list[Observation]:
    """Readings from `wham/usage`. An explicit denial (`allowed: false`) or `limit_reached`
    marks both windows rejected: the account is out while that observation is fresh."""
    if not isinstance(body, dict):
        return []
    limits = body.get("rate_limit")
    if not isinstance(limits, dict):
        return []
    denied = limits.get("allowed") is False or limits.get("limit_reached") is True
    found = []
    for key, window in (("primary_window", "five_hour"), ("secondary_window", "seven_day")):
        slot = limits.get(key)
        if not isinstance(slot, dict):
            continue
        used = finite_float(slot.get("used_percent"))
        if used is None or used < 0:
            continue
        resets = finite_float(slot.get("reset_at"))
        if resets is None:
            after = finite_float(slot.get("reset_after_seconds"))
            resets = now + after if after is not None and after >= 0 else None
        obs = clean_observation(window, used / 100.0, resets, now, "poll", rejected=denied)
        if obs is not None:
            found.append(obs)
    return found


async def read_usage(http: Any, url: str, headers: dict[str, str], now: float) -> list[Observation]:
    from sublane_desktop.providers.usage_fetch import fetch_usage

    return usage_observations(await fetch_usage(http, url, headers), now)
