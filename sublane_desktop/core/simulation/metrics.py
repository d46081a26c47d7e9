"""What one simulated run measured (R-SIM-1), and the one place a turn's cache miss is judged.

`classify_turn` follows R-CF-1 (first_turn / account_switch / ttl_expired / prefix_changed and
the tokens read again), so a simulated cache break means what a recorded one means. It is the
seam for core/cache_miss.py: when that module lands, this function becomes a call to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sublane_desktop.core.simulation.upstream import CACHE_TTL, SimAccount

JSON_FIELDS = ("trace", "policy", "seed", "requests", "quota_used", "quota_wasted", "http_429",
               "refused", "cache_breaks", "reread_tokens")


@dataclass(frozen=True)
class PreviousTurn:
    account_id: int
    at: float
    total_input: int
    cached_tokens: int


def classify_turn(previous: PreviousTurn | None, account_id: int, now: float,
                  total_input: int, cached_tokens: int) -> tuple[str | None, int]:
    """(cause, reread_tokens) for one turn of a conversation; cause None is a hit (R-CF-1)."""
    if previous is None:
        return "first_turn", 0
    if previous.account_id != account_id:
        cause: str | None = "account_switch"
    elif now - previous.at > CACHE_TTL:
        cause = "ttl_expired"
    elif cached_tokens < previous.total_input / 2:
        cause = "prefix_changed"
    else:
        return None, 0
    # The previous turn cached or wrote its whole input; whatever of it this turn did not get
    # from the cache was read again at full price.
    reread = max(0, min(previous.total_input, total_input) - cached_tokens)
    return cause, reread


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


def window_ledger(accounts: dict[int, SimAccount], last_turned_away: dict[str, float | None]
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
            wasted = sum(unused for start, _end, unused in window.resets
                         if turned_away is not None and turned_away >= start)
            rows[name] = {"offered": window.offered, "used": window.spent, "wasted": wasted,
                          "left": window.offered - window.spent - wasted}
        ledger[account.name] = rows
    return ledger


def quota_fractions(ledger: dict[str, dict[str, dict[str, float]]], windows: tuple[str, ...]
                    ) -> tuple[float, float, float]:
    """(used, wasted, left) as fractions of the capacity the `windows` offered."""
    offered = sum(rows[w]["offered"] for rows in ledger.values() for w in windows)
    if offered <= 0:
        return 0.0, 0.0, 0.0
    def share(part: str) -> float:
        return round(sum(rows[w][part] for rows in ledger.values() for w in windows) / offered, 4)

    return share("used"), share("wasted"), share("left")
