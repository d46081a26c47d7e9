"""Desktop notifications (R-UI-4) when an account starts cooling, runs out of quota, needs a new
login, or recovers.

The transitions come from comparing two successive account snapshots in one pure function, so
they are table-tested without Qt; the Notifier only feeds it and shows the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject

from sublane_desktop.gui.pool_status import READY_STATES, clock_time

# A move from one of these into a ready state is news worth a notification.
TROUBLE_STATES = frozenset({"cooling", "probing", "quota_exhausted", "auth_failed"})


@dataclass(frozen=True)
class Notice:
    account_id: int
    kind: str  # cooling | exhausted | auth_failed | recovered
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
        if new == "cooling":
            until = account.get("cooldown_until")
            when = f"until {clock_time(until)}" if until else "for a while"
            notices.append(
                Notice(
                    account["id"],
                    "cooling",
                    f"{name} is cooling down",
                    f"Upstream errors: new requests go to other accounts {when}.",
                )
            )
        elif new == "quota_exhausted":
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


class Notifier(QObject):
    """Shows the transitions of each new snapshot through `show(title, body)`."""

    def __init__(
        self, bridge: Any, show: Callable[[str, str], None], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._show = show
        self._last = bridge.snapshot()
        bridge.accountsChanged.connect(self._on_change)

    def _on_change(self) -> None:
        current = self._bridge.snapshot()
        notices = transitions(self._last, current)
        self._last = current
        if len(notices) == 1:
            self._show(notices[0].title, notices[0].body)
        elif notices:  # one bubble, not a stack that hides itself
            self._show(f"{len(notices)} accounts changed", "\n".join(n.title for n in notices))
