"""Desktop notifications (R-UI-4, R-UI-13): a window crossing 80 % and 95 % (settable), "runs out
before its reset" from the forecast, cooldown entered and recovered, sign-in needed, and a window
that reset while traffic was being turned away.

Each kind has its own switch (`notify.*` settings, service/settings.py) and is never said twice
within one window period: a notice's key is muted until that window resets. The transitions
come from comparing two successive account snapshots in pure code (`transitions`, `Rules`), so
they are tested without Qt and with a fake clock; the Notifier only feeds them and shows each
notice (the tray queues its messages rather than replacing one with the next).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject

from sublane_desktop.core.forecast import approx_duration
from sublane_desktop.gui.pool_status import (
    OFF_STATES,
    READY_STATES,
    account_hold,
    ceilings_for,
    clock_time,
    percent,
    window_label,
)

# A move from one of these into a ready state is news worth a notification.
TROUBLE_STATES = frozenset({"cooling", "probing", "quota_exhausted", "auth_failed"})


@dataclass(frozen=True)
class Notice:
    account_id: int
    kind: str  # cooling | exhausted | auth_failed | recovered | crossing | forecast | reset
    title: str
    body: str


def transitions(
    before: Iterable[Mapping[str, Any]] | None, after: Iterable[Mapping[str, Any]]
) -> list[Notice]:
    """What changed between two snapshots that a person should hear about.

    Only accounts present in both count: the first snapshot, a new account or a removed one
    say nothing. Operator moves (pause, resume) are not announced; the person just made them.
    """
    if before is None:
        return []
    previous = {a["id"]: a.get("state") for a in before}
    notices = []
    for account in after:
        old, new = previous.get(account["id"]), account.get("state")
        if old is None or old == new:
            continue
        name = account.get("name", "?")
        # Enabling or resuming is the person's own move: a cooldown still running that it
        # comes back to is not news ("is cooling down — upstream errors" on Enable, fault 9).
        back = old in OFF_STATES
        if new == "cooling" and not back:
            notices.append(Notice(account["id"], "cooling", *_cooling_words(account, name)))
        elif new == "quota_exhausted" and not back:
            notices.append(
                Notice(
                    account["id"],
                    "exhausted",
                    f"{name} ran out of quota",
                    "New requests go to other accounts until its window resets.",
                )
            )
        elif new == "auth_failed":
            # Why, when the service knows (a credential gone from the keyring is no refused
            # token), and what mends it in place (R-LOGIN-4).
            reason = account.get("auth_reason")
            notices.append(
                Notice(
                    account["id"],
                    "auth_failed",
                    f"{name} needs a new login",
                    f"{reason[:1].upper()}{reason[1:]}."
                    if reason
                    else "Its login was refused; sign in again, or import its login again.",
                )
            )
        elif new in READY_STATES and old in TROUBLE_STATES:
            notices.append(
                Notice(account["id"], "recovered", f"{name} recovered", "It takes requests again.")
            )
    return notices


def _cooling_words(account: Mapping[str, Any], name: str) -> tuple[str, str]:
    """Title and body of a cooldown, in the service's words for what holds it (R-OBS-3): a
    window's limit is not "upstream errors", and pacing is never "ran out of quota"."""
    hold = account_hold(account)
    if hold is not None:
        words = str(hold["words"])
        title = f"{name}: limit reached" if words.startswith("Limit reached") else None
        return (
            title or f"{name} is cooling down",
            f"{words}. New requests go to other accounts meanwhile.",
        )
    until = account.get("cooldown_until")
    when = f"until {clock_time(until)}" if until else "for a while"
    return (
        f"{name} is cooling down",
        f"Upstream errors: new requests go to other accounts {when}.",
    )


# Which switch (a `notify.*` setting) each kind answers to.
SWITCHES = {
    "cooling": "notify.cooldown",
    "exhausted": "notify.cooldown",
    "recovered": "notify.cooldown",
    "auth_failed": "notify.signin",
    "crossing": "notify.window_crossing",
    "forecast": "notify.forecast",
    "reset": "notify.window_reset",
}
# When a notice's window reset time is unknown, it stays muted this long (a 5-hour window).
DEFAULT_PERIOD_S = 5 * 3600.0
# A window counts as reset when its reading falls this much, or its reset time moves on.
RESET_DROP = 0.05


class Rules:
    """The notices due between two snapshots, each kind switchable and each said once per
    window period. Keeps what it has said, and when pool traffic was last turned away."""

    def __init__(self) -> None:
        self._muted: dict[tuple[Any, ...], float] = {}  # notice key -> muted until
        self._refused_at: dict[str, float] = {}  # provider -> when a request was turned away
        self._full_since: dict[tuple[int, str], float] = {}  # window at its ceiling since

    def refused(self, provider: str | None, at: float) -> None:
        """A request for `provider` was turned away (no account could take it)."""
        self._refused_at[provider or ""] = at

    def notices(
        self,
        before: Iterable[Mapping[str, Any]] | None,
        after: Iterable[Mapping[str, Any]],
        settings: Mapping[str, Any],
        now: float,
    ) -> list[Notice]:
        after = list(after)
        if before is None:
            self._note_full(after, settings, now)
            return []
        before = list(before)
        previous = {a["id"]: a for a in before}
        due: list[tuple[Notice, tuple[Any, ...], float]] = []
        for notice in transitions(before, after):
            account = next(a for a in after if a["id"] == notice.account_id)
            episode = account.get("cooldown_until") if notice.kind == "cooling" else None
            key = (notice.account_id, notice.kind, episode)
            due.append((notice, key, _period_end(account, "five_hour", now)))
        for account in after:
            old = previous.get(account["id"])
            if old is not None:
                due += self._windows(old, account, settings, now)
        self._note_full(after, settings, now)
        out = []
        for notice, key, until in due:
            if not settings.get(SWITCHES[notice.kind], True):
                continue
            if self._muted.get(key, float("-inf")) > now:
                continue
            self._muted[key] = until
            out.append(notice)
        return out

    def _windows(
        self,
        old: Mapping[str, Any],
        new: Mapping[str, Any],
        settings: Mapping[str, Any],
        now: float,
    ) -> list[tuple[Notice, tuple[Any, ...], float]]:
        out: list[tuple[Notice, tuple[Any, ...], float]] = []
        account_id, name = new["id"], new.get("name", "?")
        thresholds = sorted(float(t) for t in settings.get("notify.thresholds") or ())
        old_gauges, gauges = old.get("gauges") or {}, new.get("gauges") or {}
        for window, gauge in gauges.items():
            value, was = _value(gauge), _value(old_gauges.get(window))
            if value is None:
                continue
            label = window_label(window)
            until = _period_end(new, window, now)
            crossed = [t for t in thresholds if was is not None and was < t <= value]
            if crossed:
                out.append(
                    (
                        Notice(
                            account_id,
                            "crossing",
                            f"{name}: {label} at {percent(value)}",
                            _reset_words(gauge, now, f"Past {percent(crossed[-1])}"),
                        ),
                        (account_id, "crossing", window, crossed[-1]),
                        until,
                    )
                )
            forecast = (new.get("forecast") or {}).get(window)
            if forecast and not (old.get("forecast") or {}).get(window):
                runs_out = float(forecast["runs_out_at"])
                out.append(
                    (
                        Notice(
                            account_id,
                            "forecast",
                            f"{name}: {label} runs out before its reset",
                            _reset_words(
                                gauge,
                                now,
                                f"At this pace it runs out in ~{approx_duration(runs_out - now)}",
                            ),
                        ),
                        (account_id, "forecast", window),
                        until,
                    )
                )
            full_since = self._full_since.get((account_id, window))
            if full_since is not None and was is not None and _reset(old_gauges.get(window), gauge):
                refused = self._refused_at.get(str(new.get("provider") or ""))
                if refused is not None and refused >= full_since:
                    out.append(
                        (
                            Notice(
                                account_id,
                                "reset",
                                f"{name}: {label} window reset",
                                "Requests were being turned away; it takes them again.",
                            ),
                            (account_id, "reset", window),
                            until,
                        )
                    )
        return out

    def _note_full(
        self, accounts: list[Mapping[str, Any]], settings: Mapping[str, Any], now: float
    ) -> None:
        """Remember since when each window has been at its ceiling (the pool sends nothing
        there), so a reset can be told apart from one nobody was waiting for."""
        for account in accounts:
            ceilings = ceilings_for(settings, account.get("name"))
            for window, gauge in (account.get("gauges") or {}).items():
                key = (account["id"], window)
                value = _value(gauge)
                full = value is not None and (
                    value >= ceilings.get(window, 1.0) or account.get("state") == "quota_exhausted"
                )
                if full:
                    self._full_since.setdefault(key, now)
                elif value is not None:
                    self._full_since.pop(key, None)


def _value(gauge: Mapping[str, Any] | None) -> float | None:
    if not gauge or gauge.get("cold") or gauge.get("utilization") is None:
        return None
    return float(gauge["utilization"])


def _reset(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    was, value = _value(old), _value(new)
    if was is None or value is None:
        return False
    old_reset, new_reset = (old or {}).get("resets_at"), new.get("resets_at")
    moved_on = bool(old_reset and new_reset and new_reset > old_reset + 60)
    return value < was - RESET_DROP or moved_on


def _period_end(account: Mapping[str, Any], window: str, now: float) -> float:
    """When the window's period ends: a notice about it is not repeated before then."""
    gauge = (account.get("gauges") or {}).get(window) or {}
    resets_at = gauge.get("resets_at")
    return float(resets_at) if resets_at and resets_at > now else now + DEFAULT_PERIOD_S


def _reset_words(gauge: Mapping[str, Any], now: float, first: str) -> str:
    resets_at = gauge.get("resets_at")
    if resets_at and resets_at > now:
        return (
            f"{first}; resets at {clock_time(resets_at)} (in ~{approx_duration(resets_at - now)})."
        )
    return f"{first}."


class Notifier(QObject):
    """Shows the notices of each new snapshot through `show(title, body)`, one message each."""

    def __init__(
        self, bridge: Any, show: Callable[[str, str], None], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._show = show
        self.rules = Rules()
        self._last = bridge.snapshot()
        self.rules.notices(None, self._last, bridge.settings(), bridge.now())
        bridge.accountsChanged.connect(self._on_change)
        bridge.refused.connect(self._on_refused)

    def _on_refused(self, provider: str) -> None:
        self.rules.refused(provider, self._bridge.now())

    def _on_change(self) -> None:
        current = self._bridge.snapshot()
        notices = self.rules.notices(
            self._last, current, self._bridge.settings(), self._bridge.now()
        )
        self._last = current
        for notice in notices:  # the tray queues them: none hides another
            self._show(notice.title, notice.body)
