"""Codex subscription quota (PROTOCOLS.md "Quota"): the `wham/usage` read and the header feed,
as gauge Observations. Windows are named by their length (`limit_window_seconds`,
`window_minutes`), never by slot (R-WF-4): a plan without the 5-hour window reports a lone 7-day
primary, and its 5h gauge then reads "no such window". Per-model limits
(`additional_rate_limits[]`, `x-<limit>-*`) become one gauge each, "limit:<id>". Defensive like
every quota feed: what cannot be parsed is ignored."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from sublane_desktop.core.gauges import LIMIT_PREFIX, Observation, clean_observation
from sublane_desktop.core.numbers import finite_float
from sublane_desktop.providers.codex import QuotaObservation, limit_id, window_by_length


def usage_url(base: str) -> str:
    """As Codex CLI derives it: `{origin}/backend-api/wham/usage` under a backend-api base,
    else `{base}/api/codex/usage`."""
    if "/backend-api" in base:
        parts = urlsplit(base)
        return f"{parts.scheme}://{parts.netloc}/backend-api/wham/usage"
    return base.rstrip("/") + "/api/codex/usage"


def _absent(now: float, source: str) -> Observation | None:
    """The 5h gauge of an account whose upstream reports no 5-hour window."""
    obs = clean_observation("five_hour", 0.0, None, now, source)
    return replace(obs, absent=True) if obs is not None else None


def _limit_observation(
    limit: str, windows: list[tuple[float, float | None]], now: float, source: str, denied: bool
) -> Observation | None:
    """One gauge per per-model limit: its tightest window (the one nearest its ceiling)."""
    if not windows:
        return None
    used, resets = max(windows, key=lambda w: w[0])
    return clean_observation(LIMIT_PREFIX + limit, used, resets, now, source, rejected=denied)


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
    if quota.five_hour_absent and (absent := _absent(quota.observed_at, "headers")):
        found.append(absent)
    for family in quota.families:
        readings = [(w.utilization, w.resets_at) for w in family.windows]
        obs = _limit_observation(family.limit_id, readings, quota.observed_at, "headers", False)
        if obs is not None:
            found.append(obs)
    return found


def _poll_window(slot: Any, now: float) -> tuple[str | None, float, float | None] | None:
    """(window by length, used fraction, reset) of one `wham/usage` window, or None."""
    if not isinstance(slot, dict):
        return None
    used = finite_float(slot.get("used_percent"))
    if used is None or used < 0:
        return None
    resets = finite_float(slot.get("reset_at"))
    if resets is None:
        after = finite_float(slot.get("reset_after_seconds"))
        resets = now + after if after is not None and after >= 0 else None
    seconds = finite_float(slot.get("limit_window_seconds"))
    return window_by_length(seconds / 60 if seconds is not None else None), used / 100.0, resets


def _denied(limits: dict[str, Any]) -> bool:
    return limits.get("allowed") is False or limits.get("limit_reached") is True


def usage_observations(body: Any, now: float) -> list[Observation]:
    """Readings from `wham/usage`. An explicit denial (`allowed: false`) or `limit_reached`
    marks the windows rejected: the account is out while that observation is fresh."""
    if not isinstance(body, dict):
        return []
    found: list[Observation] = []
    limits = body.get("rate_limit")
    if isinstance(limits, dict):
        denied = _denied(limits)
        named: dict[str, Observation] = {}
        lengths = set()  # the account's windows the upstream has, readable or not
        for key in ("primary_window", "secondary_window"):
            slot = limits.get(key)
            seconds = (
                finite_float(slot.get("limit_window_seconds")) if isinstance(slot, dict) else None
            )
            length = window_by_length(seconds / 60 if seconds is not None else None)
            if length is not None:
                lengths.add(length)
            reading = _poll_window(slot, now)
            if reading is None:
                continue
            window, used, resets = reading
            if window is None or window in named:
                continue  # a window of another length: none of ours (never named by slot)
            obs = clean_observation(window, used, resets, now, "poll", rejected=denied)
            if obs is not None:
                named[window] = obs
        found.extend(named.values())
        if lengths and "five_hour" not in lengths and (absent := _absent(now, "poll")):
            found.append(absent)
    extras = body.get("additional_rate_limits")
    for extra in extras if isinstance(extras, list) else []:
        if not isinstance(extra, dict) or not isinstance(extra.get("rate_limit"), dict):
            continue
        name = extra.get("metered_feature") or extra.get("limit_name")
        if not isinstance(name, str) or not name.strip():
            continue
        inner = extra["rate_limit"]
        readings = [
            (used, resets)
            for key in ("primary_window", "secondary_window")
            if (reading := _poll_window(inner.get(key), now)) is not None
            for _, used, resets in (reading,)
        ]
        obs = _limit_observation(limit_id(name), readings, now, "poll", _denied(inner))
        if obs is not None:
            found.append(obs)
    return found


async def read_usage(http: Any, url: str, headers: dict[str, str], now: float) -> list[Observation]:
    from sublane_desktop.providers.usage_fetch import fetch_usage

    return usage_observations(await fetch_usage(http, url, headers), now)
