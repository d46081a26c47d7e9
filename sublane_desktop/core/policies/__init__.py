"""Scheduling policies (SPEC §5 step 6, R-POOL-5, R-SIM-4) behind the one interface the
scheduler calls.

The scheduler (core/scheduler.py) applies the gates every policy shares: hard gates, capacity,
the manual pin, the preemptive ceilings. What is left is a choice among accounts that may all
serve, and that choice is the policy's:

- `choose_anchor`: which eligible account an independent request's lane uses;
- `place`: which account a new conversation is bound to;
- `move`: where a bound conversation goes instead of its account (the seeds never move one).

A policy sees the scheduler only through `Gates` (the questions it may ask), so policies and
the scheduler do not import each other.
"""

from __future__ import annotations

from typing import Protocol

from sublane_desktop.core.account_state import AccountState, Demand
from sublane_desktop.core.policies.base import Gates
from sublane_desktop.core.policies.cost_aware import CostAware
from sublane_desktop.core.policies.seeds import RoundRobin, Score


class Policy(Protocol):
    name: str
    # Whether `move` can ever return an account: the pool asks for the conversation's last
    # turn (and the candidates) only when it can.
    moves_conversations: bool

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
        """The lane's account among `eligible` (non-empty, gates passed), and why."""
        ...

    def place(
        self, gates: Gates, ordered: list[AccountState], demand: Demand, start: int, now: float
    ) -> tuple[AccountState, str] | None:
        """A new conversation's account, and why; None when no account may take it. `start`
        is the group's rotation cursor."""
        ...

    def move(
        self,
        gates: Gates,
        bound: AccountState,
        candidates: list[AccountState],
        demand: Demand,
        now: float,
    ) -> AccountState | None:
        """Where a bound conversation should go instead of `bound`, or None to stay."""
        ...


POLICIES: dict[str, Policy] = {p.name: p for p in (Score(), RoundRobin(), CostAware())}
MODES = tuple(POLICIES)  # the values of the `scheduler.mode` setting

__all__ = ["MODES", "POLICIES", "Gates", "Policy"]
