"""How the pool looks to a person: health of the whole pool and one line per account.

Pure functions over the `accounts_runtime()["accounts"]` dicts, so the tray, the status window
and later windows agree, and tests need no Qt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


READY_STATES = frozenset({"ok", "busy"})
# A probing account admits the next request as its recovery probe, so it still serves.
SERVING_STATES = READY_STATES | {"probing"}
# Deliberately switched off: not part of the pool, so it neither degrades nor props up health.
OFF_STATES = frozenset({"disabled"})

STATE_LABELS = {
    "ok": "ok",
    "busy": "busy",
    "cooling": "cooling",
    "probing": "probing",
    "quota_exhausted": "quota exhausted",
    "paused": "paused",
    "auth_failed": "auth failed",
    "disabled": "disabled",
}


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


def current_account(accounts: Iterable[Account], key: str = "current") -> Account | None:
    return next((a for a in accounts if a.get(key)), None)


def tooltip_text(endpoint_url: str, accounts: list[Account]) -> str:
    lines = [f"SubLane — {endpoint_url}"]
    current = current_account(accounts)
    lines.append(f"Current: {current['name']}" if current else "No current account")
    fable = current_account(accounts, "fable_current")
    if fable is not None and fable is not current:
        lines.append(f"Fable lane: {fable['name']}")
    return "\n".join(lines)
