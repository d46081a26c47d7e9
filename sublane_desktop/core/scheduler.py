"""Which account serves a request: the gate order of SPEC §5, top to bottom, in one file.

1. Hard gates (always): disabled, auth-failed, paused, account-wide cooldown, fresh exhausted
   quota (on Antigravity, the requested model family's); for Fable requests also the
   Fable-scope park and a Fable bucket at its ceiling.
2. Capacity: the per-account limit, and one recovery probe after a cooldown (R-POOL-1, -3, -7).
3. Manual pin: both lanes go to the pinned account for 5 minutes; thresholds, staleness and the
   preemptive Fable exclusion do not break it (R-LANE-2).
4. Preemptive ceilings (main lane, fresh data): 5h above five_hour_max or 7d above seven_day_max.
5. Scores: the Fable lane's perishability (R-LANE-3), the main lane's 1x-4x ramp (R-LANE-5).
6. The policy (core/policies, the `scheduler.mode` setting) chooses among what is left: the
   lane's anchor for independent requests, the account of a new conversation, and whether a
   bound conversation moves. The seeds keep the anchor unless a candidate beats it by
   SWITCH_MARGIN (`score`) or until it is gated (`round_robin`, R-LANE-4), place new
   conversations by rotation (R-POOL-5) and never move a bound one (R-POOL-4); `cost_aware`
   places by score and moves when staying would strand a conversation or the move pays for the
   cache it breaks (R-SIM-4). Steps 1-3 hold for every policy unchanged.

Nothing here awaits; the pool calls it inside its atomic select-and-reserve step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from sublane_desktop.core.account_state import AccountState, Demand
from sublane_desktop.core.clock import Clock
from sublane_desktop.core.cooldown import QUOTA, clock_minutes, window_label
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.gauges import FAMILY_WINDOWS, GaugeSet, family_of
from sublane_desktop.core.policies import MODES, POLICIES, Policy
from sublane_desktop.core.policies.base import SWITCH_MARGIN
from sublane_desktop.core.policies.seeds import NO_ANCHOR
from sublane_desktop.core.turn_memory import TurnMemory

BUSY_RETRY_SECONDS = 2.0
PIN_SECONDS = 300.0
WEEK = 7 * 86400.0
URGENCY_MAX = 100.0
RAMP_MAX = 4.0
# Re-exported: the settings, the simulator and the tests name them from here.
__all__ = ["MODES", "NO_ANCHOR", "SWITCH_MARGIN", "Ceilings", "Decision", "Scheduler"]


@dataclass
class Ceilings:
    """Where preemptive exclusion engages (settings scheduler.*; per-account overrides)."""

    five_hour_max: float = 0.90
    seven_day_max: float = 0.99
    fable_weekly_max: float = 0.98

    def merged(self, overrides: dict[str, float] | None) -> Ceilings:
        if not overrides:
            return self
        return Ceilings(
            **{
                name: overrides.get(name, getattr(self, name))
                for name in ("five_hour_max", "seven_day_max", "fable_weekly_max")
            }
        )


def _util(gauges: GaugeSet, window: str, now: float) -> float:
    """Utilization for scoring: the last reading (cold counts as 0, past reset reads 0)."""
    value = gauges.get(window).reading(now)
    return 0.0 if value is None else value


def headroom(ceiling: float, utilization: float) -> float:
    return max(0.0, ceiling - utilization)


def fable_urgency(gauges: GaugeSet, now: float) -> float:
    """week / time-to-Fable-reset, clamped to [1, 100]; a cold bucket has no known urgency."""
    fable = gauges.fable
    if fable.cold or fable.resets_at is None or fable.past_reset(now):
        return 1.0
    remaining = max(fable.resets_at - now, 1.0)
    return min(URGENCY_MAX, max(1.0, WEEK / remaining))


def main_ramp(gauges: GaugeSet, now: float) -> float:
    """1x to 4x linearly over the 7-day window toward the 7d reset (cold: 1x)."""
    week = gauges.seven_day
    if week.cold or week.resets_at is None or week.past_reset(now):
        return 1.0
    remaining = min(max(week.resets_at - now, 0.0), WEEK)
    return 1.0 + (RAMP_MAX - 1.0) * (1.0 - remaining / WEEK)


def fable_score(gauges: GaugeSet, ceilings: Ceilings, now: float) -> float:
    servable_now = min(
        headroom(ceilings.five_hour_max, _util(gauges, "five_hour", now)),
        headroom(ceilings.seven_day_max, _util(gauges, "seven_day", now)),
        headroom(ceilings.fable_weekly_max, _util(gauges, "fable", now)),
    )
    return servable_now * fable_urgency(gauges, now)


def main_score(gauges: GaugeSet, ceilings: Ceilings, now: float) -> float:
    servable_now = min(
        headroom(ceilings.five_hour_max, _util(gauges, "five_hour", now)),
        headroom(ceilings.seven_day_max, _util(gauges, "seven_day", now)),
    )
    return servable_now * main_ramp(gauges, now)


@dataclass
class Decision:
    """Why an account was chosen, for the scheduling trace.

    A chosen account's score is worked out when first read (`scoring`), not for every
    request: nothing on the request path reads it.
    """

    account: str
    lane: str
    reason: str
    _score: float | None = None
    scoring: Callable[[], float] | None = field(default=None, compare=False, repr=False)

    @property
    def score(self) -> float | None:
        if self.scoring is not None:
            self._score, self.scoring = self.scoring(), None
        return self._score


@dataclass
class Scheduler:
    clock: Clock
    mode: str = "score"
    ceilings: Ceilings = field(default_factory=Ceilings)
    _cursor: dict[int, int] = field(default_factory=dict)  # group -> rotation position
    current: dict[tuple[int, str], int] = field(default_factory=dict)  # main lane anchors
    fable_current: dict[tuple[int, str], int] = field(default_factory=dict)
    last: Decision | None = None
    # Each conversation's last turn (core.turn_memory; the service shares its own, the one the
    # cache-miss rule fills): cost_aware weighs moves and load with it.
    conversations: TurnMemory = field(default_factory=TurnMemory)

    @property
    def policy(self) -> Policy:
        return POLICIES[self.mode]

    def ceilings_for(self, account: AccountState) -> Ceilings:
        return self.ceilings.merged(account.ceilings)

    # 1. hard gates ---------------------------------------------------------------------------

    def hard_gate(
        self, account: AccountState, demand: Demand, now: float, *, pinned: bool = False
    ) -> GatewayError | None:
        """Why this account may not take the request at all, as the error a client should see.

        `pinned` skips only the preemptive Fable exclusion (R-LANE-2); everything else holds.
        """
        if not account.enabled:
            return GatewayError("no_account", f"account {account.name} is disabled")
        if account.auth_failed:
            return GatewayError(
                "auth_failed", f"account {account.name} needs to be signed in again"
            )
        if account.paused:
            return GatewayError("no_account", f"account {account.name} is paused")
        if account.cooling(now) and account.cooldown_until is not None:
            evidence = account.evidence.get("account")
            why = (
                f"reached its {window_label(evidence.window)} limit"
                f" (held until {clock_minutes(account.cooldown_until, now)})"
                if evidence is not None and evidence.kind == QUOTA
                else "cooling down after upstream failures"
            )
            return GatewayError(
                "account_cooling",
                f"account {account.name} is {why}",
                retry_after=account.cooldown_until - now,
            )
        if self.quota_exhausted(account, now):
            return GatewayError(
                "quota_exhausted",
                f"account {account.name} has no quota left",
                retry_after=self.quota_recheck_in(account, now),
            )
        # The model's own quota, where it has one: an Antigravity family, or a Codex per-model
        # limit (R-WF-4) that rests alone while the account serves its other models.
        family = account.gauges.family_for(account.provider, demand.route.upstream_model)
        resting = account.family_resting(family, now) if family is not None else None
        if family is not None and resting is not None:
            # A spent family quota rests until the reset Google named (R-WF-5), not only
            # while the gauge reading is fresh.
            return GatewayError(
                "quota_exhausted",
                f"account {account.name} has no {family.replace('_', ' ')} quota left until"
                f" its reset",
                retry_after=resting - now,
            )
        if family is not None and account.gauges.get(family).exhausted(now):
            gauge = account.gauges.get(family)
            return GatewayError(
                "quota_exhausted",
                f"account {account.name} has no {family.replace('_', ' ')} quota left",
                retry_after=self._recheck(gauge.fresh_until(), now),
            )
        if demand.route.fable:
            if account.fable_cooldown_until is not None and now < account.fable_cooldown_until:
                return GatewayError(
                    "account_cooling",
                    f"account {account.name} is resting its Fable bucket after a 429",
                    retry_after=account.fable_cooldown_until - now,
                )
            fable = account.gauges.fable
            if fable.exhausted(now):
                return GatewayError(
                    "quota_exhausted",
                    f"account {account.name} has no Fable quota left",
                    retry_after=self._recheck(fable.fresh_until(), now),
                )
            ceiling = self.ceilings_for(account).fable_weekly_max
            reading = fable.reading(now)
            if not pinned and reading is not None and reading >= ceiling:
                return GatewayError(
                    "quota_exhausted",
                    f"account {account.name} is at its Fable ceiling ({ceiling:.0%})",
                    retry_after=self._recheck(
                        fable.fresh_until() if not fable.stale(now) else fable.resets_at, now
                    ),
                )
        return None

    def quota_exhausted(self, account: AccountState, now: float) -> bool:
        """Account-wide exhaustion on fresh data: the 5h or 7d window denies or is at 100%
        (on Antigravity, whose quota is per model family: every family is spent)."""
        if account.provider == "antigravity":
            return all(account.gauges.get(w).exhausted(now) for w in FAMILY_WINDOWS)
        return account.gauges.five_hour.exhausted(now) or account.gauges.seven_day.exhausted(now)

    def quota_recheck_in(self, account: AccountState, now: float) -> float:
        """A recheck hint, not a promise: the next freshness deadline or reset (R-LANE-1)."""
        windows = (
            FAMILY_WINDOWS if account.provider == "antigravity" else ("five_hour", "seven_day")
        )
        deadlines = [g.fresh_until() for g in map(account.gauges.get, windows) if g.exhausted(now)]
        return self._recheck(min((d for d in deadlines if d is not None), default=None), now)

    @staticmethod
    def _recheck(deadline: float | None, now: float) -> float:
        return 60.0 if deadline is None else max(1.0, deadline - now)

    # 2. capacity -----------------------------------------------------------------------------

    def has_room(self, account: AccountState, now: float) -> bool:
        if account.recovering(now):
            # After a cooldown only one probe goes, and only when nothing else is in flight.
            return account.in_flight == 0 and not account.probe_in_flight
        return account.in_flight < account.max_concurrency

    def admissible(self, account: AccountState, demand: Demand, now: float) -> bool:
        return self.hard_gate(account, demand, now) is None and self.has_room(account, now)

    # 3. manual pin ---------------------------------------------------------------------------

    def pinned(self, account: AccountState, now: float) -> bool:
        return account.pinned_until is not None and now < account.pinned_until

    def pin(self, account: AccountState, accounts: list[AccountState], now: float) -> None:
        """Manual switch: both lanes of the account's provider go to it for 5 minutes."""
        for other in accounts:
            if other.provider == account.provider:
                other.pinned_until = None
        account.pinned_until = now + PIN_SECONDS
        self.anchor_pin(account)

    def anchor_pin(self, account: AccountState) -> None:
        """The pinned account is the current one of both its provider's lanes in every group
        it serves: the views say so from the moment the pin holds (also a pin a restart kept,
        before any request), as the pin sends new requests there."""
        for group in account.group_ids:
            self.current[(group, account.provider)] = account.id
            self.fable_current[(group, account.provider)] = account.id

    # 4. preemptive ceilings --------------------------------------------------------------------

    def over_ceiling(self, account: AccountState, now: float) -> bool:
        """Main-lane exclusion on fresh data; exactly at the ceiling is still eligible."""
        ceilings = self.ceilings_for(account)
        five, week = account.gauges.five_hour, account.gauges.seven_day
        return (not five.stale(now) and (five.utilization or 0.0) > ceilings.five_hour_max) or (
            not week.stale(now) and (week.utilization or 0.0) > ceilings.seven_day_max
        )

    # 5. scores ----------------------------------------------------------------------------------

    def score(self, account: AccountState, demand: Demand, now: float) -> float:
        ceilings = self.ceilings_for(account)
        if demand.route.fable:
            return fable_score(account.gauges, ceilings, now)
        family = (
            family_of(demand.route.upstream_model) if account.provider == "antigravity" else None
        )
        if family is not None:
            # Antigravity's quota is per model family in ~5 h windows: what the requested
            # family has left is what the account can serve now.
            return headroom(ceilings.five_hour_max, _util(account.gauges, family, now))
        return main_score(account.gauges, ceilings, now)

    # 6. anchoring and the lanes -----------------------------------------------------------------

    def select_independent(
        self, candidates: list[AccountState], demand: Demand, now: float
    ) -> AccountState:
        if not candidates:
            raise self._nothing_serves(demand)
        ordered = sorted(candidates, key=lambda a: a.id)
        lane_name = "fable" if demand.route.fable else "main"
        anchors = self.fable_current if demand.route.fable else self.current
        lane = (demand.group_id, demand.route.provider)
        for account in ordered:  # 3. a live pin beats everything but the hard gates
            if (
                self.pinned(account, now)
                and self.hard_gate(account, demand, now, pinned=True) is None
                and self.has_room(account, now)
            ):
                # The lane's anchor is the pin again (the 30 s tick drops a gated anchor, and
                # a pinned account cooling after 5xx keeps its pin): current is where it goes.
                anchors[lane] = account.id
                self.last = Decision(account.name, lane_name, "manual pin")
                return account
        open_ = [a for a in ordered if self.hard_gate(a, demand, now) is None]
        eligible = [a for a in open_ if demand.route.fable or not self.over_ceiling(a, now)]
        if not eligible:
            if not open_:
                raise self._why_none(ordered, demand, now)
            # Every open account is over a preemptive ceiling: the ceilings steer, they do not
            # refuse, so the request goes to the least-loaded one until the upstream says no.
            chosen = max(open_, key=lambda a: (self.score(a, demand, now), -a.id))
            if not self.has_room(chosen, now):
                raise self._why_none(ordered, demand, now)
            self.last = Decision(chosen.name, lane_name, "all over ceiling: least loaded")
            return chosen
        if demand.route.fable and lane not in anchors and lane in self.current:
            anchors[lane] = self.current[lane]  # seeded from the account-wide current
        anchor_id = anchors.get(lane)
        anchor: AccountState | None = None
        for account in eligible:  # a loop: next() on a generator costs a GeneratorExit
            if account.id == anchor_id:
                anchor = account
                break
        chosen, reason = self.policy.choose_anchor(
            self, eligible, anchor, ordered, anchor_id, demand, now
        )
        anchors[lane] = chosen.id
        if not self.has_room(chosen, now):
            # Saturation does not move the anchor; this one request spills to the best other.
            spill = [a for a in eligible if a is not chosen and self.has_room(a, now)]
            if not spill:
                raise self._why_none(ordered, demand, now)
            chosen = max(spill, key=lambda a: self.score(a, demand, now))
            reason = "anchor busy, spill"
        self.last = Decision(
            chosen.name, lane_name, reason, scoring=partial(self.score, chosen, demand, now)
        )
        return chosen

    def evaluate(self, accounts: list[AccountState], now: float) -> None:
        """The 30 s tick (R-LANE-6): abandon a paused or gated anchor, without any network."""
        by_id = {a.id: a for a in accounts}
        for anchors in (self.current, self.fable_current):
            for lane, account_id in list(anchors.items()):
                account = by_id.get(account_id)
                if (
                    account is None
                    or not account.enabled
                    or account.paused
                    or account.auth_failed
                    or account.cooling(now)
                    or self.quota_exhausted(account, now)
                    or (
                        anchors is self.fable_current
                        and (
                            account.gauges.fable.exhausted(now)
                            or (
                                account.fable_cooldown_until is not None
                                and now < account.fable_cooldown_until
                            )
                        )
                    )
                ):
                    del anchors[lane]
        for account in accounts:
            if account.pinned_until is not None and now >= account.pinned_until:
                account.pinned_until = None

    def place_conversation(
        self, candidates: list[AccountState], demand: Demand, now: float
    ) -> AccountState:
        """Rotate within the group among accounts that can take the request now (R-POOL-5)."""
        if not candidates:
            raise self._nothing_serves(demand)
        ordered = sorted(candidates, key=lambda a: a.id)
        for account in ordered:  # a manual pin places new conversations too
            if (
                self.pinned(account, now)
                and self.has_room(account, now)
                and self.hard_gate(account, demand, now, pinned=True) is None
            ):
                self.last = Decision(account.name, "conversation", "manual pin")
                return account
        start = self._cursor.get(demand.group_id, 0)
        placed = self.policy.place(self, ordered, demand, start, now)
        if placed is None:
            raise self._why_none(ordered, demand, now)
        account, reason = placed
        self._cursor[demand.group_id] = (ordered.index(account) + 1) % len(ordered)
        self.last = Decision(account.name, "conversation", reason)
        return account

    def move_conversation(
        self, bound: AccountState, candidates: list[AccountState], demand: Demand, now: float
    ) -> AccountState | None:
        """Where a bound conversation goes instead, by the policy (the seeds never move it)."""
        target = self.policy.move(self, bound, candidates, demand, now)
        if target is not None:
            self.last = Decision(target.name, "conversation", f"moved from {bound.name}")
        return target

    def on_rejection(self, account: AccountState) -> None:
        """A recorded 429 or auth failure on a pinned account releases the pin (R-LANE-2)."""
        account.pinned_until = None

    def is_current(self, account: AccountState) -> bool:
        return account.id in self.current.values()

    def is_fable_current(self, account: AccountState) -> bool:
        return account.id in self.fable_current.values()

    # errors ------------------------------------------------------------------------------------

    def _nothing_serves(self, demand: Demand) -> GatewayError:
        return GatewayError(
            "no_account",
            f"no {demand.route.provider} account in your group serves"
            f" {demand.route.upstream_model}",
        )

    def _why_none(self, ordered: list[AccountState], demand: Demand, now: float) -> GatewayError:
        """The most useful error when every candidate is out: busy beats waiting beats gone."""
        gated = [self.hard_gate(a, demand, now) for a in ordered]
        if any(g is None for g in gated):
            return GatewayError(
                "account_busy",
                "every eligible account is serving its limit; retry shortly",
                retry_after=BUSY_RETRY_SECONDS,
            )
        waits = [
            g for g in gated if g is not None and g.code in ("account_cooling", "quota_exhausted")
        ]
        if waits:
            soonest = min(waits, key=lambda g: g.retry_after or 0)
            return GatewayError(soonest.code, soonest.message, retry_after=soonest.retry_after)
        return GatewayError(
            "no_account",
            f"no usable {demand.route.provider} account: "
            + "; ".join(g.message for g in gated if g is not None),
        )
