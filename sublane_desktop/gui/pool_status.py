"""How the pool looks to a person: health, badges, gauge captions, countdowns and the tooltip.

Pure functions over the `accounts_runtime()["accounts"]` dicts and the settings dict, so the
tray, the Accounts window and the notifications agree, and tests need no Qt.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

Account = Mapping[str, Any]


class PoolHealth(StrEnum):
    OK = "ok"  # every account can take requests
    WARN = "warn"  # something needs a look, but requests are still served
    DOWN = "down"  # nothing can serve a request right now

    @property
    def icon_name(self) -> str:
        return f"sublane-{self.value}.svg"


class Tone(StrEnum):
    """How loud a badge is; the widgets map tones to palette-aware colours."""

    OK = "ok"
    INFO = "info"
    WARN = "warn"
    BAD = "bad"
    MUTED = "muted"


READY_STATES = frozenset({"ok", "busy"})
# A probing account admits the next request as its recovery probe, so it still serves.
SERVING_STATES = READY_STATES | {"probing"}
# Deliberately switched off by the person (disabled, or paused with the lever): not part of
# the pool, so it neither degrades nor props up health — a pause is not a warning (R-UI-6).
OFF_STATES = frozenset({"disabled", "paused"})

# The one place a state is put in words (R-UI-12): Accounts badges, tray rows and tooltips,
# and notifications all say these, with this casing. A row's full words add the reset, the
# countdown or the reason (state_status).
STATE_LABELS = {
    "ok": "Ready",
    "busy": "Busy",
    "cooling": "Cooling",
    "probing": "Testing with the next request",
    "quota_exhausted": "Limit reached",
    "paused": "Paused",
    "auth_failed": "Sign in again",
    "disabled": "Disabled",
}
STATE_TONES = {
    "ok": Tone.OK,
    "busy": Tone.INFO,
    "cooling": Tone.WARN,
    "probing": Tone.WARN,
    "paused": Tone.MUTED,  # the person chose it: not a warning (R-UI-6)
    "quota_exhausted": Tone.BAD,
    "auth_failed": Tone.BAD,
    "disabled": Tone.MUTED,
}

WINDOW_LABELS = {
    "five_hour": "5h",
    "seven_day": "7d",
    "fable": "Fable",
    # Antigravity's per-model-family gauges
    "claude": "Claude",
    "gemini_pro": "Gemini Pro",
    "gemini_flash": "Gemini Flash",
}
STANDARD_WINDOWS = ("five_hour", "seven_day", "fable")
# What an idle probing account is doing, in words (it only tests itself with real traffic).
PROBING_IDLE = STATE_LABELS["probing"]
# Setting names of the preemptive ceilings (SPEC §5), per gauge window.
CEILING_SETTINGS = {
    "five_hour": "five_hour_max",
    "seven_day": "seven_day_max",
    "fable": "fable_weekly_max",
}
DEFAULT_CEILINGS = {"five_hour": 0.90, "seven_day": 0.99, "fable": 0.98}


def pool_health(accounts: Iterable[Account]) -> PoolHealth:
    states = [a.get("state") for a in accounts if a.get("state") not in OFF_STATES]
    if not any(s in SERVING_STATES for s in states):
        return PoolHealth.DOWN
    if all(s in READY_STATES for s in states):
        return PoolHealth.OK
    return PoolHealth.WARN


def state_label(state: str | None) -> str:
    return STATE_LABELS.get(state or "", state or "unknown")


def account_line(account: Account) -> str:
    return f"{account.get('name', '?')} — {state_label(account.get('state'))}"


def percent(fraction: float) -> str:
    """The one percent format of the app: whole percent, no space (37%)."""
    return f"{round(float(fraction) * 100)}%"


NO_SUCH_WINDOW = "no such window"


def window_label(window: str) -> str:
    if window.startswith("limit:"):  # a Codex per-model limit, by the id the upstream names
        return window[6:]
    return WINDOW_LABELS.get(window, window.replace("_", " ").title())


def is_api_key(account: Account) -> bool:
    return account.get("kind") == "api_key"


def account_hold(account: Account) -> Mapping[str, Any] | None:
    """The account-wide hold and its evidence in words (R-OBS-3), when the service says."""
    hold = account.get("hold")
    if isinstance(hold, Mapping) and hold.get("scope") == "account" and hold.get("words"):
        return hold
    return None


def scoped_holds(account: Account) -> list[Mapping[str, Any]]:
    """Holds on one part of an account (its Fable bucket) while it serves the rest; resting
    model families have their own tooltip line."""
    holds = account.get("holds") or []
    return [h for h in holds if isinstance(h, Mapping) and h.get("scope") == "fable"]


# Why a ladder cooldown holds an account, in a person's words (the service's hold says
# "upstream 429 (pacing)").
CAUSE_WORDS = {
    "pacing": "the provider asked to slow down",
    "error": "the provider returned errors",
}


@dataclass(frozen=True)
class Status:
    """An account's state in words: what a badge, a row or a tooltip line says."""

    words: str  # "Paused", "Cooling until 14:05 · 4m 12s", …
    tone: Tone
    detail: str = ""  # why, when the service knows ("credential missing from the keyring")


def short_time(ts: float, now: float) -> str:
    """A time of day as a person reads it: 14:05, or "Tue 14:05" when not within a day."""
    fmt = "%H:%M" if ts - now < 20 * 3600 else "%a %H:%M"
    return time.strftime(fmt, time.localtime(ts))


def state_status(account: Account, now: float) -> Status:
    """The state in words, one vocabulary for every surface (R-UI-12)."""
    state = str(account.get("state") or "unknown")
    tone = STATE_TONES.get(state, Tone.MUTED)
    if state == "auth_failed":
        reason = str(account.get("auth_reason") or "")
        # The service's reason may end in the advice the words already give.
        return Status(STATE_LABELS[state], tone, reason.removesuffix(" — sign in again"))
    if state == "cooling":
        until = account.get("cooldown_until")
        hold = account_hold(account)  # the evidence that holds it (R-OBS-3)
        if hold is not None and hold.get("kind") == "quota":  # its words name the window
            left = countdown(float(hold["until"]) - now)
            return Status(f"{hold['words']} · {left}", Tone.BAD)
        cause = CAUSE_WORDS.get(str(hold.get("kind")), "") if hold is not None else ""
        if hold is not None:
            until = hold.get("until") or until
        if until and float(until) > now:
            words = f"Cooling until {short_time(float(until), now)} · {countdown(until - now)}"
            return Status(words, tone, cause)
    if state == "quota_exhausted":
        full = exhausted_window(account, now)
        resets_at = full[1] if full is not None else None
        if full is not None and resets_at is not None and resets_at > now:
            label = window_label(full[0])
            return Status(f"Limit reached ({label}), resets {short_time(resets_at, now)}", tone)
    if state == "probing" and account.get("in_flight"):
        return Status("Testing with a request now", tone)
    return Status(state_label(state), tone)


def state_text(account: Account, now: float) -> str:
    """The state in one line, with its reason: a tooltip line, a row's plain text."""
    status = state_status(account, now)
    return f"{status.words} — {status.detail}" if status.detail else status.words


def exhausted_window(account: Account, now: float) -> tuple[str, float | None] | None:
    """The window that is full, with its reset (the one lifting last if several are)."""
    full = [
        (w, g.get("resets_at"))
        for w, g in (account.get("gauges") or {}).items()
        if isinstance(g, Mapping)
        and g.get("utilization") is not None
        and float(g["utilization"]) >= 1.0
    ]
    if not full:
        return None
    return max(full, key=lambda item: item[1] or 0.0)


def current_account(accounts: Iterable[Account], key: str = "current") -> Account | None:
    return next((a for a in accounts if a.get(key)), None)


# --- time ------------------------------------------------------------------------------------


def countdown(seconds: float) -> str:
    """A compact remaining time: 45s, 4m 12s, 2h 14m, 1d 4h."""
    s = int(max(0.0, seconds) + 0.999)  # round up: "0s" only once it is really over
    if s <= 0:
        return "now"
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def clock_time(ts: float) -> str:
    """A local wall-clock time of day, HH:MM:SS."""
    return time.strftime("%H:%M:%S", time.localtime(ts))


# --- badges ----------------------------------------------------------------------------------


def badges(account: Account, now: float) -> list[tuple[str, Tone]]:
    """The state badge, a badge per part of the account that rests while the rest serves (its
    Fable bucket, a model family: R-OBS-3), and a pinned badge while a switch holds (R-UI-2)."""
    status = state_status(account, now)
    out = [(status.words, status.tone)]
    for part in account.get("holds") or []:
        if isinstance(part, Mapping) and part.get("scope") != "account" and part.get("words"):
            tone = Tone.BAD if part.get("kind") == "quota" else Tone.WARN
            out.append((f"{part['words']} · {countdown(float(part['until']) - now)}", tone))
    pinned_until = account.get("pinned_until")
    if pinned_until and pinned_until > now:
        out.append((f"Pinned · {countdown(pinned_until - now)}", Tone.INFO))
    return out


def pin_remaining(account: Account, now: float) -> float | None:
    pinned_until = account.get("pinned_until")
    if pinned_until and pinned_until > now:
        return pinned_until - now
    return None


def has_cooldown(account: Account) -> bool:
    """Whether "Clear cooldown" has anything to clear: a cooldown, a failure streak, or a model
    family resting after a spent quota."""
    return (
        bool(account.get("cooldown_until"))
        or bool(account.get("failure_streak"))
        or bool(account.get("family_cooldowns"))
    )


# --- gauges ----------------------------------------------------------------------------------


def gauge_windows(account: Account | str | None) -> tuple[str, ...]:
    """The windows to draw for an account: none for an API key (it has no subscription quota);
    whatever gauges a provider reports beyond the Claude/Codex ones (Antigravity's model
    families); else 5h / 7d, plus Fable on Claude subscriptions."""
    limits: tuple[str, ...] = ()  # Codex per-model limits, after its 5h / 7d
    if isinstance(account, Mapping):
        if is_api_key(account):
            return ()
        other = [w for w in (account.get("gauges") or {}) if w not in STANDARD_WINDOWS]
        limits = tuple(w for w in other if w.startswith("limit:"))
        if len(other) > len(limits):
            return tuple(other)
        provider = account.get("provider")
    else:
        provider = account
    if provider == "anthropic":
        return ("five_hour", "seven_day", "fable")
    return ("five_hour", "seven_day", *limits)


def ceilings_for(settings: Mapping[str, Any], account_name: str | None) -> dict[str, float]:
    """Each window's preemptive ceiling for this account: global settings, then its override."""
    overrides = (settings.get("scheduler.account_limits") or {}).get(account_name or "") or {}
    out: dict[str, float] = {}
    for window, name in CEILING_SETTINGS.items():
        value = overrides.get(name, settings.get(f"scheduler.{name}", DEFAULT_CEILINGS[window]))
        out[window] = float(value)
    return out


def gauge_caption(gauge: Mapping[str, Any] | None, now: float) -> str:
    """37% · resets in 2h 14m; cold gauges say so instead of pretending to be 0%, and a window
    the upstream does not have (a Codex plan without the 5-hour one) says that."""
    if gauge and gauge.get("absent"):
        return NO_SUCH_WINDOW
    if not gauge or gauge.get("cold") or gauge.get("utilization") is None:
        return "no data yet"
    text = percent(gauge["utilization"])
    resets_at = gauge.get("resets_at")
    if resets_at is not None and resets_at > now:
        text += f" · resets in {countdown(resets_at - now)}"
    if gauge.get("stale"):
        text += " · stale"
    return text


def tightest_gauge(
    accounts: Iterable[Account], settings: Mapping[str, Any]
) -> tuple[Account, str, Mapping[str, Any]] | None:
    """The observed gauge with the least headroom below its ceiling, among accounts in use."""
    best: tuple[float, Account, str, Mapping[str, Any]] | None = None
    for account in accounts:
        if account.get("state") in OFF_STATES:
            continue
        ceilings = ceilings_for(settings, account.get("name"))
        for window in gauge_windows(account):
            gauge = (account.get("gauges") or {}).get(window)
            if not gauge or gauge.get("cold") or gauge.get("utilization") is None:
                continue
            headroom = ceilings.get(window, 1.0) - float(gauge["utilization"])
            if best is None or headroom < best[0]:
                best = (headroom, account, window, gauge)
    return None if best is None else best[1:]


def tooltip_text(
    endpoint_url: str,
    accounts: Sequence[Account],
    settings: Mapping[str, Any] | None = None,
    now: float | None = None,
) -> str:
    """Says why the icon is not green: which account, what, until when (R-UI-6)."""
    at = now if now is not None else time.time()
    lines = [f"SubLane — {endpoint_url}"]
    health = pool_health(accounts)
    if not accounts:
        lines.append("No accounts yet — open SubLane to add one")
    elif health is PoolHealth.DOWN:
        lines.append("No account can serve a request now")
    for account in accounts:
        state = account.get("state")
        if state in READY_STATES or state == "disabled":
            continue
        lines.append(f"{account.get('name', '?')}: {state_text(account, at)}")
    for account in accounts:  # a spent model family rests while the account serves the rest
        for family, until in sorted((account.get("family_cooldowns") or {}).items()):
            if until > at and account.get("state") != "disabled":
                lines.append(
                    f"{account.get('name', '?')}: {window_label(family)} limit reached,"
                    f" resets {short_time(until, at)} · {countdown(until - at)}"
                )
    for account in accounts:  # a Fable bucket held while the account serves other models
        if account.get("state") != "disabled":
            for hold in scoped_holds(account):
                lines.append(f"{account.get('name', '?')}: {hold['words']}")
    current = [a for a in accounts if a.get("current")]
    if current:
        lines.append("Current: " + ", ".join(a["name"] for a in current))
    elif accounts:
        lines.append("No current account yet (the next request picks one)")
    fable = [a for a in accounts if a.get("fable_current") and not a.get("current")]
    if fable:
        lines.append("Current for Fable: " + ", ".join(a["name"] for a in fable))
    if settings is not None and now is not None:
        tight = tightest_gauge(accounts, settings)
        if tight is not None:
            account, window, gauge = tight
            lines.append(
                f"Closest to its limit: {account['name']} {window_label(window)} "
                f"{gauge_caption(gauge, now)}"
            )
    return "\n".join(lines)
