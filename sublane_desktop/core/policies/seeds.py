"""The seed policies: `score` (seed 000) and `round_robin` (seed 001).

Both place a new conversation by rotation within its group among the accounts that can take
it (R-POOL-5) and never move a bound conversation (R-POOL-4). They differ in the lane's anchor
for independent requests: `score` moves to a candidate that beats the anchor by SWITCH_MARGIN,
`round_robin` keeps the anchor until it is gated, then takes the next one in order (R-LANE-4).
"""

from __future__ import annotations

from sublane_desktop.core.account_state import AccountState, Demand
from sublane_desktop.core.policies.base import SWITCH_MARGIN, Gates

NO_ANCHOR = "best score (no eligible anchor)"


def best_scoring(
    gates: Gates,
    eligible: list[AccountState],
    anchor: AccountState | None,
    demand: Demand,
    now: float,
) -> tuple[AccountState, str]:
    """The best-scoring account, unless the anchor is within SWITCH_MARGIN of it."""
    if len(eligible) == 1:  # the usual single account: no score to compare
        return eligible[0], "anchor kept" if anchor is not None else NO_ANCHOR
    best = max(eligible, key=lambda a: (gates.score(a, demand, now), -a.id))
    if anchor is None:
        return best, NO_ANCHOR
    if best is not anchor and gates.score(best, demand, now) > gates.score(anchor, demand, now) * (
        1.0 + SWITCH_MARGIN
    ):
        return best, "beats anchor by margin"
    return anchor, "anchor kept"


def rotation(
    gates: Gates, ordered: list[AccountState], demand: Demand, start: int, now: float
) -> tuple[AccountState, str] | None:
    """The next account in the group's rotation that can take the request; accounts over a
    preemptive ceiling only when every one is (placement steers, it does not refuse)."""
    n = len(ordered)
    for step in range(n):
        account = ordered[(start + step) % n]
        if gates.admissible(account, demand, now) and (
            demand.route.fable or not gates.over_ceiling(account, now)
        ):
            return account, "rotation"
    for step in range(n):
        account = ordered[(start + step) % n]
        if gates.admissible(account, demand, now):
            return account, "rotation (over ceiling)"
    return None


class Score:
    name = "score"
    moves_conversations = False

    def choose_anchor(
        self,
        gates: Gates,
        eligible: list[AccountState],
        anchor: AccountState | None,
        ordered: list[AccountState],
        anchor_id: int | None,
        demand: Demand,
        now: float,
    ) -> tuple[AccountState, str]:
        return best_scoring(gates, eligible, anchor, demand, now)

    def place(
        self, gates: Gates, ordered: list[AccountState], demand: Demand, start: int, now: float
    ) -> tuple[AccountState, str] | None:
        return rotation(gates, ordered, demand, start, now)

    def move(
        self,
        gates: Gates,
        bound: AccountState,
        candidates: list[AccountState],
        demand: Demand,
        now: float,
    ) -> AccountState | None:
        return None  # a bound conversation never moves by itself (R-POOL-4)


class RoundRobin(Score):
    name = "round_robin"

    def choose_anchor(
        self,
        gates: Gates,
        eligible: list[AccountState],
        anchor: AccountState | None,
        ordered: list[AccountState],
        anchor_id: int | None,
        demand: Demand,
        now: float,
    ) -> tuple[AccountState, str]:
        if anchor is not None:
            return anchor, "round robin: anchor kept"
        ids = [a.id for a in ordered]
        start = ids.index(anchor_id) + 1 if anchor_id in ids else 0
        for step in range(len(ordered)):
            account = ordered[(start + step) % len(ordered)]
            if account in eligible:
                return account, "round robin: next after gated anchor"
        return best_scoring(gates, eligible, anchor, demand, now)  # not reached: eligible ⊂ ordered
