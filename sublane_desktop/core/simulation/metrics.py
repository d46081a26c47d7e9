"""What one simulated run measured (R-SIM-1).

A cache break is judged by core/cache_miss.py through core/turn_memory.py, the same rule and
memory the request records use (R-CF-1): a turn whose cause is `account_switch` while the
previous turn's cache was still within its TTL. So a simulated cache break and a recorded one
mean the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sublane_desktop.core import cache_miss
from sublane_desktop.core.simulation.upstream import SimAccount

JSON_FIELDS = (
    "trace",
    "policy",
    "seed",
    "requests",
    "served",
    "quota_used",
    "quota_wasted",
    "http_429",
    "refused",
    "cache_breaks",
    "reread_tokens",
)


def is_cache_break(
    previous: cache_miss.PreviousTurn | None, turn: cache_miss.Turn, miss: cache_miss.CacheMiss
) -> bool:
    """A move while the cache was warm: `account_switch`, and the previous turn ended within
    the TTL (after it, the cache had expired anyway and the move broke nothing)."""
    return (
        miss.cause == cache_miss.ACCOUNT_SWITCH
        and previous is not None
        and turn.started_at - previous.ended_at <= turn.ttl
    )


@dataclass
class Sample:
    at: float
    utilization: dict[str, dict[str, float]]  # account -> window -> fraction


@dataclass
class RunResult:
    trace: str
    policy: str
    seed: int
    requests: int = 0  # turns the trace asked for
    served: int = 0
    given_up: int = 0  # turns the client abandoned after its retries
    spilled: int = 0  # turns served by another provider's account (R-AG-3, R-WF-6)
    http_429: int = 0  # the upstream said no
    refused: int = 0  # the pool said no (busy, cooling, exhausted, no account)
    cache_breaks: int = 0
    reread_tokens: int = 0
    refusals: dict[str, int] = field(default_factory=dict)  # pool refusals by error code
    quota_used: float = 0.0
    quota_wasted: float = 0.0
    quota_left: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    ledger: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    elapsed_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in JSON_FIELDS}


def window_ledger(
    accounts: dict[int, SimAccount], last_turned_away: dict[str, float | None]
) -> dict[str, dict[str, dict[str, float]]]:
    """Per account and window: offered = used + wasted + left, in quota units.

    Capacity that reset unused counts as wasted only when traffic that could have used it was
    turned away during that period or later (`last_turned_away` per window kind); otherwise
    nobody needed it, and it is left, like what remains in the open period at the end.
    """
    ledger: dict[str, dict[str, dict[str, float]]] = {}
    for account in accounts.values():
        rows: dict[str, dict[str, float]] = {}
        for name, window in account.windows.items():
            turned_away = last_turned_away.get(name)
            wasted = sum(
                unused
                for start, _end, unused in window.resets
                if turned_away is not None and turned_away >= start
            )
            rows[name] = {
                "offered": window.offered,
                "used": window.spent,
                "wasted": wasted,
                "left": window.offered - window.spent - wasted,
            }
        ledger[account.name] = rows
    return ledger


def quota_fractions(
    ledger: dict[str, dict[str, dict[str, float]]], windows: tuple[str, ...]
) -> tuple[float, float, float]:
    """(used, wasted, left) as fractions of the capacity the `windows` offered."""
    offered = sum(rows[w]["offered"] for rows in ledger.values() for w in windows if w in rows)
    if offered <= 0:
        return 0.0, 0.0, 0.0

    def share(part: str) -> float:
        total = sum(rows[w][part] for rows in ledger.values() for w in windows if w in rows)
        return round(total / offered, 4)

    return share("used"), share("wasted"), share("left")
