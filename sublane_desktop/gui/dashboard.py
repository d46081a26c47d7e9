"""The tray menu as a dashboard (R-UI-6): what each account's row and submenu say.

Pure functions over the runtime snapshot (no Qt), so the painted rows, the plain-text fallback
that desktop menu bridges show, and the tests all read the same model.

A row shows the account's tightest window — the observed gauge with the least headroom below
its ceiling — as a bar with its percent and reset countdown, a state glyph and the current /
Fable-current marks. Its submenu lists every window the account has (5h / 7d / Fable for
Claude, whatever gauges another provider reports), each with its forecast when it would run
out before its reset (R-UI-7), then the levers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sublane_desktop.core.forecast import Forecast
from sublane_desktop.gui.pool_status import (
    NO_SUCH_WINDOW,
    Account,
    Tone,
    ceilings_for,
    countdown,
    gauge_windows,
    has_cooldown,
    is_api_key,
    percent,
    pin_remaining,
    state_text,
    window_label,
)

STATE_GLYPHS = {
    "ok": "●",
    "busy": "◉",
    "cooling": "◔",
    "probing": "◌",
    "quota_exhausted": "■",
    "paused": "‖",  # U+2016: in the common fonts, unlike ⏸
    "auth_failed": "✕",
    "disabled": "○",
}
STATE_GLYPH_TONES = {
    "ok": Tone.OK,
    "busy": Tone.INFO,
    "cooling": Tone.WARN,
    "probing": Tone.WARN,
    "quota_exhausted": Tone.BAD,
    "paused": Tone.MUTED,  # the person chose it: not a warning
    "auth_failed": Tone.BAD,
    "disabled": Tone.MUTED,
}
API_KEY_NOTE = "no quota data (API key)"
NO_DATA_NOTE = "no quota data yet"


@dataclass(frozen=True)
class WindowLine:
    window: str
    label: str  # 5h, 7d, Fable, …
    fraction: float | None  # 0..1 for the bar; None = unknown (cold)
    percent: str  # "37%" or "—"
    reset: str  # "resets in 2h 14m" or ""
    tone: Tone  # fill colour: OK below the ceiling, WARN at it, BAD when full
    stale: bool = False
    forecast: str | None = None

    @property
    def text(self) -> str:
        parts = [f"{self.label} {self.percent}"]
        if self.reset:
            parts.append(self.reset)
        if self.stale and self.fraction is not None:
            parts.append("stale")
        out = " · ".join(parts)
        if self.forecast:
            out += f" — {self.forecast}"
        return out


@dataclass(frozen=True)
class AccountRow:
    account_id: int
    name: str
    glyph: str
    glyph_tone: Tone
    state: str  # the words for the state ("waiting for a request to test it", …)
    marks: tuple[str, ...]  # "current", "Fable current"
    tightest: WindowLine | None
    note: str | None  # shown instead of a bar: "no quota data (API key)"
    windows: tuple[WindowLine, ...] = field(default=())
    paused: bool = False
    can_clear: bool = False
    pin_left: str | None = None
    disabled: bool = False

    @property
    def text(self) -> str:
        """The row as plain text: the fallback where a menu cannot show painted rows."""
        head = f"{self.glyph} {self.name}"
        if self.marks:
            head += " [" + ", ".join(self.marks) + "]"
        if self.tightest is not None:
            tail = f"{self.tightest.label} {self.tightest.percent}"
            if self.tightest.reset:
                tail += f" · {self.tightest.reset}"
        else:
            tail = self.note or ""
        if self.state not in ("ok",):
            tail = f"{self.state} · {tail}" if tail else self.state
        return f"{head} — {tail}" if tail else head


def window_line(
    window: str,
    gauge: Mapping[str, Any] | None,
    ceiling: float,
    now: float,
    forecast: Mapping[str, Any] | None = None,
) -> WindowLine:
    label = window_label(window)
    if gauge and gauge.get("absent"):
        return WindowLine(window, label, None, NO_SUCH_WINDOW, "", Tone.MUTED)
    if not gauge or gauge.get("cold") or gauge.get("utilization") is None:
        return WindowLine(window, label, None, "—", "", Tone.MUTED)
    value = float(gauge["utilization"])
    tone = Tone.BAD if value >= 1.0 else Tone.WARN if value >= ceiling else Tone.OK
    resets_at = gauge.get("resets_at")
    reset = f"resets in {countdown(resets_at - now)}" if resets_at and resets_at > now else ""
    said = None
    if forecast:
        said = Forecast(
            float(forecast["runs_out_at"]),
            forecast.get("resets_at"),
            float(forecast.get("rate_per_hour") or 0.0),
        ).text(now)
    return WindowLine(
        window,
        label,
        max(0.0, min(1.0, value)),
        percent(value),
        reset,
        tone,
        bool(gauge.get("stale")),
        said,
    )


def account_row(account: Account, settings: Mapping[str, Any], now: float) -> AccountRow:
    state = str(account.get("state") or "unknown")
    ceilings = ceilings_for(settings, account.get("name"))
    gauges = account.get("gauges") or {}
    forecasts = account.get("forecast") or {}
    windows: list[WindowLine] = []
    for window in gauge_windows(account):
        windows.append(
            window_line(
                window, gauges.get(window), ceilings.get(window, 1.0), now, forecasts.get(window)
            )
        )
    observed = [w for w in windows if w.fraction is not None]
    tightest = None
    if observed:
        tightest = min(
            observed, key=lambda w: (ceilings.get(w.window, 1.0) - (w.fraction or 0), w.window)
        )
    note = None
    if is_api_key(account):
        note = API_KEY_NOTE
    elif tightest is None:
        note = NO_DATA_NOTE
    marks = tuple(
        m
        for m, key in (("current", "current"), ("Fable current", "fable_current"))
        if account.get(key)
    )
    left = pin_remaining(account, now)
    return AccountRow(
        account_id=int(account["id"]),
        name=str(account.get("name", "?")),
        glyph=STATE_GLYPHS.get(state, "?"),
        glyph_tone=STATE_GLYPH_TONES.get(state, Tone.MUTED),
        state=state_text(account, now),
        marks=marks,
        tightest=tightest,
        note=note,
        windows=tuple(windows),
        paused=bool(account.get("paused")),
        can_clear=has_cooldown(account),
        pin_left=countdown(left) if left is not None else None,
        disabled=state == "disabled",
    )


def account_rows(
    accounts: Iterable[Account], settings: Mapping[str, Any], now: float
) -> list[AccountRow]:
    return [account_row(a, settings, now) for a in accounts]


def last_updated(accounts: Iterable[Account]) -> float | None:
    """When any gauge was last observed (the "updated 20s ago" line)."""
    times = [
        float(g["observed_at"])
        for a in accounts
        for g in (a.get("gauges") or {}).values()
        if isinstance(g, Mapping) and g.get("observed_at") is not None
    ]
    return max(times) if times else None


def updated_line(accounts: Iterable[Account], now: float) -> str:
    at = last_updated(accounts)
    if at is None:
        return "No quota readings yet · Refresh"
    if now - at < 1:
        return "Updated just now · Refresh"
    return f"Updated {countdown(now - at)} ago · Refresh"


VERDICT_WORDS = {
    "ok": "login works",
    "auth_failed": "login refused",
    "unreachable": "could not check",
}


def verdict_words(verdict: dict[str, Any]) -> str:
    """A verify result (R-AG-6) in the words a person reads."""
    return VERDICT_WORDS.get(str(verdict.get("result")), str(verdict.get("result")))
