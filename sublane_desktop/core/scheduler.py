"""Which account serves a request: the gate order of SPEC §5, top to bottom, in one file.

1. Hard gates (always): disabled, auth-failed, paused, account-wide cooldown, probe in flight.
2. Capacity: the per-account limit (R-POOL-1, R-POOL-3).
3. Placement: a new conversation rotates within its group (R-POOL-5); an independent request
   stays on the lane's current account while it can serve, else the next eligible one (R-POOL-6).

Nothing here awaits; the pool calls it inside its atomic select-and-reserve step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sublane_desktop.core.clock import Clock
from sublane_desktop.core.errors import GatewayError

if TYPE_CHECKING:
    from sublane_desktop.core.pool import AccountState, Demand

BUSY_RETRY_SECONDS = 2.0
PROBE_RETRY_SECONDS = 2.0


class Scheduler:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._cursor: dict[int, int] = {}  # group -> rotation position (process-local)
        self.current: dict[tuple[int, str], int] = {}  # (group, provider) -> account id

    # 1. hard gates ---------------------------------------------------------------------------

    def hard_gate(self, account: AccountState, demand: Demand, now: float) -> GatewayError | None:
        """Why this account may not take the request at all, as the error a client should see."""
        if not account.enabled:
            return GatewayError("no_account", f"account {account.name} is disabled")
        if account.auth_failed:
            return GatewayError(
                "auth_failed", f"account {account.name} needs to be signed in again"
            )
        if account.paused:
            return GatewayError("no_account", f"account {account.name} is paused")
        if account.cooling(now):
            return GatewayError(
                "account_cooling",
                f"account {account.name} is cooling down after upstream failures",
                retry_after=account.cooldown_until - now,
            )
        if self.quota_exhausted(account, now):
            return GatewayError(
                "quota_exhausted",
                f"account {account.name} has no quota left",
                retry_after=self.quota_recheck_in(account, now),
            )
        return None

    def quota_exhausted(self, account: AccountState, now: float) -> bool:
        return False  # gauges arrive with the quota work (SPEC §5)

    def quota_recheck_in(self, account: AccountState, now: float) -> float:
        return 120.0

    # 2. capacity -----------------------------------------------------------------------------

    def has_room(self, account: AccountState, now: float) -> bool:
        if account.recovering(now):
            # After a cooldown only one probe goes, and only when nothing else is in flight.
            return account.in_flight == 0 and not account.probe_in_flight
        return account.in_flight < account.max_concurrency

    def admissible(self, account: AccountState, demand: Demand, now: float) -> bool:
        return self.hard_gate(account, demand, now) is None and self.has_room(account, now)

    # 3. placement ----------------------------------------------------------------------------

    def place_conversation(
        self, candidates: list[AccountState], demand: Demand, now: float
    ) -> AccountState:
        """Rotate within the group among accounts that can take the request now."""
        if not candidates:
            raise self._nothing_serves(demand)
        ordered = sorted(candidates, key=lambda a: a.id)
        start = self._cursor.get(demand.group_id, 0)
        for step in range(len(ordered)):
            account = ordered[(start + step) % len(ordered)]
            if self.admissible(account, demand, now):
                self._cursor[demand.group_id] = (start + step + 1) % len(ordered)
                return account
        raise self._why_none(ordered, demand, now)

    def select_independent(
        self, candidates: list[AccountState], demand: Demand, now: float
    ) -> AccountState:
        """Stay on the lane's current account while it can serve; otherwise the next one."""
        if not candidates:
            raise self._nothing_serves(demand)
        ordered = sorted(candidates, key=lambda a: a.id)
        lane = (demand.group_id, demand.route.provider)
        current_id = self.current.get(lane)
        current = next((a for a in ordered if a.id == current_id), None)
        if current is not None and self.admissible(current, demand, now):
            return current
        start = ordered.index(current) + 1 if current is not None else 0
        for step in range(len(ordered)):
            account = ordered[(start + step) % len(ordered)]
            if self.admissible(account, demand, now):
                # Saturation alone does not move the anchor; a gate does.
                if current is None or self.hard_gate(current, demand, now) is not None:
                    self.current[lane] = account.id
                return account
        raise self._why_none(ordered, demand, now)

    def on_hard_failure(self, account: AccountState) -> None:
        """A failure or auth error on an account; the lanes re-anchor on the next request."""

    def is_current(self, account: AccountState) -> bool:
        return account.id in self.current.values()

    # errors ------------------------------------------------------------------------------------

    def _nothing_serves(self, demand: Demand) -> GatewayError:
        return GatewayError(
            "no_account",
            f"no {demand.route.provider} account in your group serves"
            f" {demand.route.upstream_model}",
        )

    def _why_none(self, ordered: list[AccountState], demand: Demand, now: float) -> GatewayError:
        """The most useful error when every candidate is out: busy beats cooling beats gone."""
        gated = [self.hard_gate(a, demand, now) for a in ordered]
        if any(g is None for g in gated):
            return GatewayError(
                "account_busy",
                "every eligible account is serving its limit; retry shortly",
                retry_after=BUSY_RETRY_SECONDS,
            )
        waits = [g for g in gated if g is not None and g.code in ("account_cooling",
                                                                   "quota_exhausted")]
        if waits:
            soonest = min(waits, key=lambda g: g.retry_after or 0)
            return GatewayError(soonest.code, soonest.message, retry_after=soonest.retry_after)
        return GatewayError(
            "no_account",
            f"no usable {demand.route.provider} account: "
            + "; ".join(g.message for g in gated if g is not None),
        )
