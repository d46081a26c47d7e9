"""The account pool runtime (SPEC §4): leases, affinity, cooldown and recovery.

Everything here runs on the event loop thread and never awaits, so choosing an account and
reserving its slot is one atomic step (R-POOL-2). Persistence is delegated to a `Persistence`
port that the service implements off the loop; a failed write never undoes in-memory state
(R-POOL-10).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from sublane_desktop.core.account_state import ACCOUNT, FABLE_SCOPE

# Re-exported (the `X as X` form): the service, the proxy and the tests name them from here.
from sublane_desktop.core.account_state import AccountState as AccountState
from sublane_desktop.core.account_state import Demand as Demand
from sublane_desktop.core.clients import (
    CLAUDE_CODE_ONLY,
    claude_code_only_message,
    serves_client,
)
from sublane_desktop.core.clock import Clock
from sublane_desktop.core.cooldown import (
    ERROR,
    PACING,
    QUOTA,
    Evidence,
    QuotaHit,
    cooldown_seconds,
    hold_cause,
    hold_words,
    quota_hold_until,
)
from sublane_desktop.core.errors import GatewayError
from sublane_desktop.core.gauges import Observation, clean_observation
from sublane_desktop.core.scheduler import PIN_SECONDS, Scheduler

log = logging.getLogger(__name__)

MIN_LIMIT, MAX_LIMIT = 1, 8
DEFAULT_CAP = 8
# The most the global cap may be set to. A team's shared server may pool dozens of accounts at 8
# requests each (32 of them fill 256 slots); the cap should not be what stops them. It stops at
# the number of client connections the server holds at once (proxy.connections.MAX_CONNECTIONS):
# past that, a higher cap could never fill.
MAX_CAP = 512
BUSY_RETRY_SECONDS = 2.0


class Persistence(Protocol):
    def save_runtime(self, account_id: int, fields: dict[str, Any]) -> None: ...
    def save_binding(self, group_id: int, digest: str, account_id: int) -> None: ...
    def delete_bindings(self, account_id: int) -> None: ...
    def save_lifecycle(self, account_id: int, enabled: bool, revision: int) -> None: ...


class NoPersistence:
    def save_runtime(self, account_id: int, fields: dict[str, Any]) -> None:
        pass

    def save_binding(self, group_id: int, digest: str, account_id: int) -> None:
        pass

    def delete_bindings(self, account_id: int) -> None:
        pass

    def save_lifecycle(self, account_id: int, enabled: bool, revision: int) -> None:
        pass


Chooser = Callable[[list[AccountState], Demand, float], AccountState]


class Outcome:
    SUCCESS = "success"
    FAILURE = "failure"  # network error, 5xx, 529, 429: cools the account
    FABLE_FAILURE = "fable_failure"  # 429 on a Fable request, uncorroborated: Fable scope only
    AUTH_FAILURE = "auth_failure"  # 401: hard gate until the credential changes
    NEUTRAL = "neutral"  # client error, client cancel: says nothing about the account


@dataclass
class Lease:
    """One reserved model-request slot. Released exactly once (R-POOL-2)."""

    pool: Pool
    account: AccountState
    seq: int
    runtime_revision: int
    probe: bool
    bound: bool
    released: bool = False
    # A conversation placed on another provider by a spill (R-WF-6): only a success keeps it.
    spill_key: tuple[int, str] | None = None

    def release(
        self,
        outcome: str = Outcome.NEUTRAL,
        retry_after: float | None = None,
        status: int | None = None,
        quota: QuotaHit | None = None,
    ) -> bool:
        """Returns False when already released, so callers may call it from every exit path.
        `quota`: the window a 429 named (R-OBS-3); without it a 429 is pacing."""
        if self.released:
            return False
        self.released = True
        self.pool._finish(self, outcome, retry_after, status, quota)
        return True


class Pool:
    def __init__(
        self,
        clock: Clock,
        *,
        cap: int = DEFAULT_CAP,
        persistence: Persistence | None = None,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.clock = clock
        self.cap = cap
        self.in_flight = 0
        self.metadata_in_flight = 0
        self.accounts: dict[int, AccountState] = {}
        self.bindings: dict[tuple[int, str], int] = {}
        # Conversations placed by a spill (R-WF-6) -> the provider they came from. Kept in
        # memory only: a spill is overflow, and the conversation's home is its own provider.
        self.spilled: dict[tuple[int, str], str] = {}
        # Whether an account serves a model (the service asks the account's model list); the
        # spill goes only where the model is served.
        self.serves: Callable[[AccountState, str], bool] = lambda account, model: True
        self.scheduler = Scheduler(clock)
        self._persist = persistence or NoPersistence()
        self._on_change = on_change or (lambda: None)

    # --- catalog ----------------------------------------------------------------------------

    def sync_accounts(self, rows: Iterable[AccountState]) -> None:
        """Adopt the stored account list, keeping process-local counters of known accounts."""
        fresh: dict[int, AccountState] = {}
        restored_pin = False
        for row in rows:
            known = self.accounts.get(row.id)
            if known is not None:
                for name in (
                    "name",
                    "provider",
                    "group_ids",
                    "kind",
                    "base_url",
                    "enabled",
                    "max_concurrency",
                ):
                    setattr(known, name, getattr(row, name))
                if row.revision != known.revision:  # re-auth repairs an auth failure
                    known.revision = row.revision
                    known.auth_failed = row.auth_failed
                    known.gauges.clear()  # observations of the old credential are void
                    known.quota_epoch += 1
                fresh[row.id] = known
            else:
                if row.pinned_until is not None:
                    # A pin saved by an earlier run keeps its wall-clock end (R-OBS-2), but
                    # never more than a fresh pin's 5 minutes, even if the clock went back.
                    row.pinned_until = min(row.pinned_until, self.clock.now() + PIN_SECONDS)
                    if self.scheduler.pinned(row, self.clock.now()):
                        restored_pin = True
                        # Its lanes' current account at once, not after the next request.
                        self.scheduler.anchor_pin(row)
                fresh[row.id] = row
        if restored_pin:
            # ...unless it may not serve now (disabled or paused by the CLI while no server
            # ran, cooling): the tick's own rule drops such an anchor, as it would in 30 s.
            self.scheduler.evaluate(list(fresh.values()), self.clock.now())
        self.accounts = fresh
        self.bindings = {k: v for k, v in self.bindings.items() if v in fresh}
        self._on_change()

    def load_bindings(self, bindings: dict[tuple[int, str], int]) -> None:
        self.bindings = {k: v for k, v in bindings.items() if v in self.accounts}

    def find(self, ref: str | int) -> AccountState:
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
            account = self.accounts.get(int(ref))
            if account is not None:
                return account
        for account in self.accounts.values():
            if account.name == ref:
                return account
        raise KeyError(f"unknown account {ref!r}")

    # --- admission ----------------------------------------------------------------------------

    def acquire(self, demand: Demand) -> Lease:
        """Choose and reserve in one step. Raises GatewayError with a stable code."""
        now = self.clock.now()
        if demand.conversation is not None:
            key = (demand.group_id, demand.conversation)
            bound_id = self.bindings.get(key)
            if bound_id is not None and key in self.spilled:
                bound_account = self.accounts.get(bound_id)
                if bound_account is None or not self.serves(
                    bound_account, demand.route.upstream_model
                ):
                    # A spilled conversation now asks for a model the spill provider does not
                    # serve: it goes home (R-WF-6).
                    self._unbind_spill(key)
                    bound_id = None
            bound = self.accounts.get(bound_id) if bound_id is not None else None
            if bound is not None and serves_client(bound.provider, bound.kind, demand.claude_code):
                # (A binding made by another client on a login that refuses this one does not
                # hold this request: it is placed as a new conversation below.)
                if self.scheduler.policy.moves_conversations:
                    target = self.scheduler.move_conversation(
                        bound, self._candidates(demand), demand, now
                    )
                    if target is not None:
                        return self._bind(target, demand, key, now)
                return self._admit_bound(bound, demand, now)
            account = self._place(demand, now, self.scheduler.place_conversation)
            if account.provider != demand.route.provider:
                return self._bind_spill(account, demand, key, now)
            return self._bind(account, demand, key, now)
        account = self._place(demand, now, self.scheduler.select_independent)
        return self._admit(account, now, bound=False)

    def _bind(
        self, account: AccountState, demand: Demand, key: tuple[int, str], now: float
    ) -> Lease:
        assert demand.conversation is not None
        lease = self._admit(account, now, bound=True)
        self.bindings[key] = account.id
        self.spilled.pop(key, None)  # placed at home (or moved) now: no longer a spill
        self._persist.save_binding(demand.group_id, demand.conversation, account.id)
        return lease

    def _bind_spill(
        self, account: AccountState, demand: Demand, key: tuple[int, str], now: float
    ) -> Lease:
        """A conversation placed by a spill: bound in memory only (never persisted), and only
        for as long as it succeeds there (R-WF-6)."""
        lease = self._admit(account, now, bound=True)
        self.bindings[key] = account.id
        self.spilled[key] = demand.route.provider
        lease.spill_key = key
        return lease

    def _unbind_spill(self, key: tuple[int, str]) -> None:
        self.spilled.pop(key, None)
        self.bindings.pop(key, None)

    def send_spills_home(self, account: AccountState) -> None:
        """An operator action on an account frees the spilled conversations it serves and
        those that left its provider (R-WF-6): their next request is placed afresh."""
        for key, home in list(self.spilled.items()):
            if self.bindings.get(key) == account.id or home == account.provider:
                self._unbind_spill(key)

    def _place(self, demand: Demand, now: float, choose: Chooser) -> AccountState:
        """The route's own provider first; its spill providers only when none of its accounts
        can take the request (R-AG-3), and there only accounts that serve the model (R-WF-6).
        The spilled choice runs as that provider's demand, so its lanes and anchors are that
        provider's and the preferred provider's stay intact. A full global cap is no reason
        to spill: `_candidates` refuses it again below."""
        try:
            return choose(self._candidates(demand), demand, now)
        except GatewayError as refusal:
            model = demand.route.upstream_model
            for provider in demand.route.spill:
                spilled = replace(demand, route=replace(demand.route, provider=provider))
                candidates = [a for a in self._candidates(spilled) if self.serves(a, model)]
                if candidates:
                    try:
                        return choose(candidates, spilled, now)
                    except GatewayError as spill_refusal:
                        # this provider cannot take it either: the next one may. Where the
                        # route's own provider has no account at all, the spill provider's
                        # reason (busy, resting until…) is the useful one.
                        if refusal.code == "no_account" and not self._candidates(demand):
                            refusal = spill_refusal
            withheld = self._withheld(demand)
            if withheld and not self._candidates(demand) and refusal.code == "no_account":
                # Only logins that refuse this client could have served it (R-WF-2): say
                # so and what would serve it, not "no account".
                raise GatewayError(CLAUDE_CODE_ONLY, claude_code_only_message(withheld)) from None
            raise refusal

    def _candidates(self, demand: Demand) -> list[AccountState]:
        """The group's accounts of the route's provider that accept the demand's client."""
        self._check_cap()
        claude_code = demand.claude_code
        return [
            a
            for a in self.accounts.values()
            if demand.group_id in a.group_ids
            and a.provider == demand.route.provider
            and serves_client(a.provider, a.kind, claude_code)
        ]

    def _withheld(self, demand: Demand) -> list[str]:
        """Names of the group's accounts of the route's provider kept from this client."""
        return [
            a.name
            for a in self.accounts.values()
            if demand.group_id in a.group_ids
            and a.provider == demand.route.provider
            and not serves_client(a.provider, a.kind, demand.claude_code)
        ]

    def _check_cap(self) -> None:
        if self.in_flight + self.metadata_in_flight >= self.cap:
            raise GatewayError(
                "capacity_exhausted",
                f"all {self.cap} upstream slots are in use; retry shortly",
                retry_after=BUSY_RETRY_SECONDS,
            )

    def try_metadata_slot(self) -> bool:
        """Quota reads and other metadata calls share the global cap, not account slots
        (R-POOL-11). Returns False when the cap is full; pair with release_metadata_slot."""
        if self.in_flight + self.metadata_in_flight >= self.cap:
            return False
        self.metadata_in_flight += 1
        return True

    def release_metadata_slot(self) -> None:
        self.metadata_in_flight -= 1

    def _admit_bound(self, account: AccountState, demand: Demand, now: float) -> Lease:
        self._check_cap()
        reason = self.scheduler.hard_gate(account, demand, now)
        if reason is not None:
            raise reason
        if not self.scheduler.has_room(account, now):
            raise GatewayError(
                "account_busy",
                f"account {account.name} is serving its limit of {account.max_concurrency};"
                " this conversation stays on it",
                retry_after=BUSY_RETRY_SECONDS,
            )
        return self._admit(account, now, bound=True)

    def _admit(self, account: AccountState, now: float, *, bound: bool) -> Lease:
        probe = account.recovering(now)
        account.in_flight += 1
        self.in_flight += 1
        account.probe_in_flight = account.probe_in_flight or probe
        seq = account.next_seq
        account.next_seq += 1
        self._on_change()
        return Lease(self, account, seq, account.runtime_revision, probe, bound)

    # --- outcomes -----------------------------------------------------------------------------

    def _finish(
        self,
        lease: Lease,
        outcome: str,
        retry_after: float | None,
        status: int | None,
        quota: QuotaHit | None = None,
    ) -> None:
        account = lease.account
        account.in_flight -= 1
        self.in_flight -= 1
        if lease.probe:
            account.probe_in_flight = False
        key = lease.spill_key
        if key is not None and outcome != Outcome.SUCCESS and self.bindings.get(key) == account.id:
            self._unbind_spill(key)  # a failed spill binds nothing (R-WF-6)
        if (status == 429 or outcome == Outcome.AUTH_FAILURE) and account.pinned_until is not None:
            self.scheduler.on_rejection(account)
            self._persist.save_runtime(account.id, account.runtime_fields())  # R-OBS-2
        if lease.runtime_revision == account.runtime_revision:
            self._apply(account, lease, outcome, retry_after, status, quota)
        self._on_change()

    def _apply(
        self,
        account: AccountState,
        lease: Lease,
        outcome: str,
        retry_after: float | None,
        status: int | None = None,
        quota: QuotaHit | None = None,
    ) -> None:
        if outcome == Outcome.NEUTRAL:
            return
        if outcome == Outcome.AUTH_FAILURE:
            account.auth_failed = True
            self._persist.save_runtime(account.id, account.runtime_fields())
            return
        if outcome == Outcome.FABLE_FAILURE:
            # Only the Fable scope rests; the account keeps serving other models (R-LANE-7).
            account.fable_streak += 1
            if quota is not None and quota.window == "fable":
                self._hold_fable(account, quota)
            else:
                now = self.clock.now()
                account.fable_cooldown_until = now + cooldown_seconds(account.fable_streak)
                account.evidence[FABLE_SCOPE] = Evidence(PACING, None, now)
            self._persist.save_runtime(account.id, account.runtime_fields())  # R-FT-10
            return
        # Outcomes are ordered by admission sequence, not by when they arrive (R-POOL-8).
        if lease.seq <= account.decided_seq:
            return
        account.decided_seq = lease.seq
        if outcome == Outcome.SUCCESS:
            fable_healed = account.fable_streak > 0
            account.fable_streak = 0
            if account.failure_streak == 0 and account.cooldown_until is None:
                if fable_healed:
                    self._persist.save_runtime(account.id, account.runtime_fields())
                return
            account.failure_streak = 0
            account.cooldown_until = None
            account.evidence.pop(ACCOUNT, None)
        else:
            account.failure_streak += 1
            now = self.clock.now()
            streak = account.failure_streak
            if status == 429 and quota is not None and quota.window != "fable":
                # A window of the whole account is spent: held until it resets (R-OBS-3).
                account.cooldown_until = quota_hold_until(quota, now, streak, retry_after)
                account.evidence[ACCOUNT] = Evidence(QUOTA, quota.window, now, quota.resets_at)
            else:
                account.cooldown_until = now + cooldown_seconds(streak, retry_after)
                kind = PACING if status == 429 else ERROR
                account.evidence[ACCOUNT] = Evidence(kind, None, now)
                if status == 429 and quota is not None:
                    # Only the Fable bucket is spent, but the upstream asked the whole account
                    # to wait (R-LANE-7): the account paces, the bucket waits for its reset.
                    account.fable_streak += 1
                    self._hold_fable(account, quota)
        self._persist.save_runtime(account.id, account.runtime_fields())

    def _hold_fable(self, account: AccountState, quota: QuotaHit) -> None:
        now = self.clock.now()
        account.fable_cooldown_until = quota_hold_until(quota, now, account.fable_streak)
        account.evidence[FABLE_SCOPE] = Evidence(QUOTA, "fable", now, quota.resets_at)

    def note_readings(self, account: AccountState, observations: list[Observation]) -> None:
        """Fresh readings end the quota holds they show open (R-OBS-3): a usage read with the
        window below its ceiling, or a response saying it is allowed. Pacing and errors keep
        the ladder; readings taken before a hold began say nothing about it."""
        if not account.evidence or not observations:
            return  # the usual response: nothing is held
        now = self.clock.now()
        ended = False
        if account.cooling(now) and self._shows_open(account, ACCOUNT, observations):
            account.cooldown_until = None
            account.failure_streak = 0  # the window is open: no probe needed
            ended = True
        fable_until = account.fable_cooldown_until
        if (
            fable_until is not None
            and now < fable_until
            and self._shows_open(account, FABLE_SCOPE, observations)
        ):
            account.fable_cooldown_until = None
            account.fable_streak = 0
            ended = True
        for family, until in list(account.family_cooldowns.items()):
            if now < until and self._shows_open(account, family, observations):
                del account.family_cooldowns[family]
                ended = True
        if ended:
            self._forget_ended(account, now)
            self._persist.save_runtime(account.id, account.runtime_fields())
            self._on_change()

    def _shows_open(self, account: AccountState, scope: str, found: list[Observation]) -> bool:
        evidence = account.evidence.get(scope)
        if scope not in (ACCOUNT, FABLE_SCOPE) and evidence is None:
            evidence = Evidence(QUOTA, scope, 0.0)  # a family rests on its own quota
        if evidence is None or evidence.kind != QUOTA:
            return False
        # A hold that named no window (a usage limit): every account-wide window read must
        # be open.
        windows = (evidence.window,) if evidence.window else ("five_hour", "seven_day")
        readings = [o for o in found if o.window in windows and o.observed_at >= evidence.since]
        return bool(readings) and all(self._open(account, o) for o in readings)

    def _open(self, account: AccountState, obs: Observation) -> bool:
        """A response says `allowed` (not rejected, below 100%); a usage read must show the
        window below its ceiling, where the scheduler would place traffic again."""
        if obs.rejected or obs.absent:
            return False
        ceiling = 1.0
        if obs.source != "headers":
            ceilings = self.scheduler.ceilings_for(account)
            ceiling = {
                "five_hour": ceilings.five_hour_max,
                "seven_day": ceilings.seven_day_max,
                "fable": ceilings.fable_weekly_max,
            }.get(obs.window, 1.0)
        return obs.utilization < ceiling

    @staticmethod
    def _forget_ended(account: AccountState, now: float) -> None:
        """Evidence outlives its cooldown only while the scope still rests."""
        for scope in list(account.evidence):
            if scope == ACCOUNT:
                resting = account.cooling(now)
            elif scope == FABLE_SCOPE:
                until = account.fable_cooldown_until
                resting = until is not None and now < until
            else:
                resting = account.family_resting(scope, now) is not None
            if not resting:
                del account.evidence[scope]

    # --- operator levers (R-ARCH-2: the tray, CLI and API all land here) ------------------------

    def resume(self, ref: str | int) -> AccountState:
        """Clear cooldown and streak; outcomes admitted earlier are ignored from now (R-POOL-9)."""
        account = self.find(ref)
        account.cooldown_until = None
        account.failure_streak = 0
        account.family_cooldowns.clear()
        fable = account.evidence.get(FABLE_SCOPE)  # the Fable scope's rest is not cleared here
        account.evidence = {FABLE_SCOPE: fable} if fable is not None else {}
        account.runtime_revision += 1
        self.send_spills_home(account)
        self._persist.save_runtime(account.id, account.runtime_fields())
        self._on_change()
        return account

    def set_limit(self, ref: str | int, limit: int) -> AccountState:
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not (MIN_LIMIT <= limit <= MAX_LIMIT)
        ):
            raise ValueError(f"max_concurrency must be an integer from {MIN_LIMIT} to {MAX_LIMIT}")
        account = self.find(ref)
        account.max_concurrency = limit  # running requests finish; admission waits (R-POOL-3)
        self.send_spills_home(account)
        self._on_change()
        return account

    def set_paused(self, ref: str | int, paused: bool) -> AccountState:
        account = self.find(ref)
        account.paused = paused
        self.send_spills_home(account)
        if paused:
            self.free_bindings(account.id)
        self._persist.save_runtime(account.id, account.runtime_fields())
        self._on_change()
        return account

    def set_enabled(self, ref: str | int, enabled: bool) -> AccountState:
        """Disable or enable an account (R-AG-6); its settings stay as they are.

        A disabled account serves nothing and gives up its conversations and any pin. Enabling
        advances both revisions: the account comes back as a new lifecycle, so outcomes of
        requests admitted before it was disabled can no longer cool or clear it.
        """
        account = self.find(ref)
        if account.enabled == enabled:
            return account
        account.enabled = enabled
        self.send_spills_home(account)
        if enabled:
            account.revision += 1
            account.runtime_revision += 1
            self._persist.save_runtime(account.id, account.runtime_fields())
        else:
            self.free_bindings(account.id)
            if account.pinned_until is not None:
                self.scheduler.on_rejection(account)
                self._persist.save_runtime(account.id, account.runtime_fields())
        self._persist.save_lifecycle(account.id, enabled, account.revision)
        self._on_change()
        return account

    def switch(self, ref: str | int) -> AccountState:
        """Manual switch: both lanes go to this account for 5 minutes (R-LANE-2).

        Switching away is an operator action on the other accounts of that provider, so their
        conversations are freed and re-placed (on the pinned account) — otherwise a switch would
        do nothing for Claude Code, whose every request belongs to a conversation.
        """
        account = self.find(ref)
        self.send_spills_home(account)
        for other in list(self.accounts.values()):
            if other.provider == account.provider and other.id != account.id:
                self.free_bindings(other.id)
        pinned_before = {a.id for a in self.accounts.values() if a.pinned_until is not None}
        self.scheduler.pin(account, list(self.accounts.values()), self.clock.now())
        for changed in pinned_before | {account.id}:  # its remaining time outlives a restart
            self._persist.save_runtime(changed, self.accounts[changed].runtime_fields())
        self._on_change()
        return account

    def reset_usage(self) -> None:
        """Every gauge back to cold (R-LANE-8)."""
        for account in self.accounts.values():
            account.gauges.clear()
            account.quota_epoch += 1  # readings taken before now can no longer land (R-FT-9)
        self._on_change()

    def evaluate(self) -> None:
        """The 30 s local tick (R-LANE-6)."""
        self.scheduler.evaluate(list(self.accounts.values()), self.clock.now())
        self._on_change()

    def mark_auth_failed(self, account: AccountState) -> None:
        """A refresh token refused: hard gate until the credential changes (R-ST-3)."""
        account.auth_failed = True
        self.scheduler.on_rejection(account)
        self._persist.save_runtime(account.id, account.runtime_fields())
        self._on_change()

    def rest_family(self, account: AccountState, family: str, until: float) -> None:
        """A spent Antigravity family quota: that family rests until its reset, the gauge reads
        it spent, and the account keeps serving the other families (R-WF-5)."""
        account.family_cooldowns[family] = until
        now = self.clock.now()
        account.evidence[family] = Evidence(QUOTA, family, now, until)
        spent = clean_observation(family, 1.0, until, now, "headers", rejected=True)
        if spent is not None:
            account.gauges.apply(replace(spent, epoch=account.quota_epoch))
        self._persist.save_runtime(account.id, account.runtime_fields())  # R-POOL-10
        self._on_change()

    def free_bindings(self, account_id: int) -> None:
        """An operator action frees the account's conversations (R-POOL-4)."""
        self.bindings = {k: v for k, v in self.bindings.items() if v != account_id}
        self.spilled = {k: v for k, v in self.spilled.items() if k in self.bindings}
        self._persist.delete_bindings(account_id)

    # --- views --------------------------------------------------------------------------------

    def holds_of(self, account: AccountState) -> list[dict[str, Any]]:
        """What holds the account now and on which evidence (R-OBS-3): the account-wide
        cooldown first, then its Fable bucket's and its model families' rests."""
        now = self.clock.now()
        scopes: list[tuple[str, float]] = []
        if account.cooldown_until is not None and account.cooling(now):
            scopes.append((ACCOUNT, account.cooldown_until))
        fable_until = account.fable_cooldown_until
        if fable_until is not None and now < fable_until:
            scopes.append((FABLE_SCOPE, fable_until))
        scopes += sorted((f, u) for f, u in account.family_cooldowns.items() if now < u)
        holds = []
        for scope, until in scopes:
            evidence = account.evidence.get(scope)
            if evidence is None and scope not in (ACCOUNT, FABLE_SCOPE):
                evidence = Evidence(QUOTA, scope, now, until)  # a family rests on its quota
            kind = evidence.kind if evidence is not None else ERROR
            holds.append(
                {
                    "kind": kind,
                    "scope": scope,
                    "window": evidence.window if evidence is not None else None,
                    "until": until,
                    "resets_at": evidence.resets_at if evidence is not None else None,
                    "words": hold_words(evidence, scope, until, now),
                    "cause": hold_cause(kind),
                }
            )
        return holds

    def state_of(self, account: AccountState) -> str:
        now = self.clock.now()
        if not account.enabled:
            return "disabled"
        if account.auth_failed:
            return "auth_failed"
        if account.paused:
            return "paused"
        if account.cooling(now):
            return "cooling"
        if account.recovering(now):
            return "probing"
        if self.scheduler.quota_exhausted(account, now):
            return "quota_exhausted"
        if account.in_flight >= account.max_concurrency:
            return "busy"
        return "ok"
