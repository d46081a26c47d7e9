"""What a policy may ask the scheduler (`Gates`), and the margin every policy shares."""

from __future__ import annotations

from typing import Protocol

from sublane_desktop.core.account_state import AccountState, Demand
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.turn_memory import TurnMemory

# A candidate must score this much better than the current account before traffic moves to
# it: small differences in readings are noise, and every move costs a warm cache (R-LANE-4).
SWITCH_MARGIN = 0.25


class Limits(Protocol):
    five_hour_max: float
    seven_day_max: float
    fable_weekly_max: float


class Gates(Protocol):
    """The scheduler's shared gates and scores, as the policies see them."""

    conversations: TurnMemory

    def hard_gate(
        self, account: AccountState, demand: Demand, now: float, *, pinned: bool = False
    ) -> GatewayError | None: ...

    def has_room(self, account: AccountState, now: float) -> bool: ...

    def admissible(self, account: AccountState, demand: Demand, now: float) -> bool: ...

    def pinned(self, account: AccountState, now: float) -> bool: ...

    def over_ceiling(self, account: AccountState, now: float) -> bool: ...

    def score(self, account: AccountState, demand: Demand, now: float) -> float: ...

    def ceilings_for(self, account: AccountState) -> Limits: ...
