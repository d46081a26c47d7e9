"""The tray menu as a dashboard (R-UI-6, R-UI-12): what each account's row says.

Pure functions over the runtime snapshot (no Qt), so the painted rows, the plain-text fallback
that desktop menu bridges show, and the tests all read the same model.

A row shows every window the account has (5h / 7d / Fable for Claude, whatever gauges another
provider reports), each as a bar with its percent, reset countdown and forecast (R-UI-7), so
nothing hides in a submenu; its head line has a state glyph, "current for Claude", and in words
what the account is doing when it is not simply serving ("Paused", "Cooling until 14:05 · 4m",
"Limit reached, resets 14:05", "Sign in again"). The submenu holds only the levers that apply.
The pool line says how much of each window the accounts in use have left together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sublane_desktop.core.forecast import Forecast
from sublane_desktop.gui.pool_status import (
    NO_SUCH_WINDOW,
    OFF_STATES,
    Account,
    Status,
    Tone,
    ceilings_for,
    countdown,
    gauge_windows,
    has_cooldown,
    is_api_key,
    percent,
    pin_remaining,
    scoped_holds,
    state_status,
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
API_KEY_NOTE = "API key: no subscription quota"
NO_DATA_NOTE = "no quota data yet"
# How a provider is called where a person reads "current for …" (R-UI-12, fault 10: one
# "current" per provider could show on three rows without saying which one it was).
PROVIDER_NAMES = {"anthropic": "Claude", "codex": "Codex", "antigravity": "Antigravity"}
# The states in which an account takes requests: anything else says so in words and its bars
# are drawn muted, so a paused account's 37% does not read as if it were serving.
SERVING_STATES = frozenset({"ok", "busy"})
SIGN_IN_AGAIN = "Sign in again"


def provider_name(provider: Any) -> str:
    return PROVIDER_NAMES.get(str(provider), str(provider or "?").title())


def status_of(account: Account, now: float) -> Status | None:
    """The state in words (R-UI-12); None while the account serves as usual."""
    if account.get("state") in SERVING_STATES:
        return None
    return state_status(account, now)


def marks_of(account: Account) -> tuple[str, ...]:
    """ "current for Claude" (and for Fable): which lane this account anchors, by provider."""
    provider = provider_name(account.get("provider"))
    current, fable = bool(account.get("current")), bool(account.get("fable_current"))
    if current and fable:
        return (f"current for {provider} and Fable",)
    if current:
        return (f"current for {provider}",)
    if fable:
        return ("current for Fable",)
    return ()


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
    def short(self) -> str:
        """ "5h 37%": the window in the row's one-line plain text."""
        return f"{self.label} {self.percent}"

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
    marks: tuple[str, ...]  # "current for Claude", "current for Fable"
    tightest: WindowLine | None
    note: str | None  # shown instead of bars: "API key: no subscription quota"
    windows: tuple[WindowLine, ...] = field(default=())
    paused: bool = False
    can_clear: bool = False
    pin_left: str | None = None
    disabled: bool = False
    status: Status | None = None  # None: serving as usual
    provider: str = ""
    # parts resting while the rest serves, in words (its Fable bucket: R-OBS-3)
    part_holds: tuple[str, ...] = ()

    @property
    def serving(self) -> bool:
        return self.status is None

    @property
    def needs_sign_in(self) -> bool:
        return self.status is not None and self.status.words == SIGN_IN_AGAIN

    @property
    def text(self) -> str:
        """The row as plain text: the fallback where a menu cannot show painted rows."""
        parts = [f"{self.glyph} {self.name}"]
        if self.marks:
            parts[0] += " [" + ", ".join(self.marks) + "]"
        if self.status is not None:
            said = self.status.words
            if self.status.detail:
                said += f" ({self.status.detail})"
            parts.append(said)
        if self.tightest is not None:  # some window has a reading
            parts.append(" · ".join(w.short for w in self.windows))
        elif self.note:
            parts.append(self.note)
        return " — ".join(parts)

    @property
    def description(self) -> str:
        """Everything the painted row says, for screen readers and the row's tooltip."""
        lines = [self.text.split(" — ")[0]]
        if self.status is not None:
            lines.append(
                self.status.words + (f": {self.status.detail}" if self.status.detail else "")
            )
        lines.extend(self.part_holds)
        lines.extend(w.text for w in self.windows)
        if not self.windows and self.note:
            lines.append(self.note)
        return "\n".join(lines)


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
    marks = marks_of(account)
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
        status=status_of(account, now),
        provider=str(account.get("provider") or ""),
        part_holds=tuple(str(h["words"]) for h in scoped_holds(account)),
    )


def account_rows(
    accounts: Iterable[Account], settings: Mapping[str, Any], now: float
) -> list[AccountRow]:
    return [account_row(a, settings, now) for a in accounts]


def pool_left(accounts: Iterable[Account]) -> list[str]:
    """How much the pool has left, per provider and window (R-UI-12): the mean headroom of the
    accounts in use that have a reading, so "5h 63%" means 63% of the pool's 5-hour quota is
    still there. Off, signed-out and API-key accounts add nothing to draw on."""
    left: dict[str, dict[str, list[float]]] = {}
    for account in accounts:
        if account.get("state") in OFF_STATES or account.get("state") == "auth_failed":
            continue
        gauges = account.get("gauges") or {}
        windows = left.setdefault(provider_name(account.get("provider")), {})
        for window in gauge_windows(account):
            gauge = gauges.get(window)
            if not gauge or gauge.get("cold") or gauge.get("utilization") is None:
                continue
            headroom = 1.0 - min(1.0, float(gauge["utilization"]))
            windows.setdefault(window_label(window), []).append(max(0.0, headroom))
    lines = []
    for provider, windows in left.items():
        if windows:
            said = " · ".join(f"{label} {percent(sum(v) / len(v))}" for label, v in windows.items())
            lines.append(f"{provider} pool left: {said}")
    return lines


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
