"""The quota feed: what fills the gauges (SPEC §4).

Two sources: the headers of every response through an account (R-GAUGE-2), and background
usage reads of stale accounts, started by traffic or by a person (R-GAUGE-3). A response's
readings reach the in-memory gauges the moment its headers arrive, so the scheduler gates the
very next request on them (Claude Code sends a tool loop's next turn within milliseconds);
their save is batched behind them. A usage read is saved before it is shown, and a reading
begun under an older account revision or quota epoch is dropped (R-GAUGE-4, R-FT-9).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sublane_desktop.accounts.problems import CredentialUnavailable
from sublane_desktop.core.forecast import BURN_WINDOW_S, UsageTrail
from sublane_desktop.core.gauges import Observation, windows_for
from sublane_desktop.core.pool import AccountState
from sublane_desktop.core.quota import PollMarks, QuotaReadError, QuotaRefresher
from sublane_desktop.core.tasks import spawn
from sublane_desktop.providers import anthropic_quota, codex, codex_quota
from sublane_desktop.store import quota as quota_store

# Header readings wait this long before they are saved (they gate at once), so a busy proxy
# saves one batch (latest reading per window) instead of a database write per response.
OBSERVATION_LINGER_S = 0.1

if TYPE_CHECKING:
    from sublane_desktop.service import Service

log = logging.getLogger(__name__)


class QuotaFeed:
    def __init__(self, service: Service) -> None:
        self.service = service
        pool = service.pool
        self.refresher = QuotaRefresher(
            service.clock,
            read=self.read,
            publish=self.publish,
            take_slot=pool.try_metadata_slot,
            give_slot=pool.release_metadata_slot,
            remember=self._remember_poll,
        )
        # account id -> (revision, window -> (latest reading, the quota epoch it came under))
        self._pending_obs: dict[int, tuple[int, dict[str, tuple[Observation, int]]]] = {}
        self.usage_trail = UsageTrail()  # the last hour of readings, for forecasts (R-UI-7)
        self._obs_flush: asyncio.Task | None = None
        self._dirty: set[int] = set()  # accounts whose gauges changed since the last save
        self._saving = False  # the flush is past its linger, writing

    async def load(self) -> None:
        """At start: the stored observations of every known account into its gauges."""
        pool = self.service.pool
        stored = await self.service.db.read(quota_store.load_observations)
        for account_id, observations in stored.items():
            if account_id in pool.accounts:
                for obs in observations:
                    pool.accounts[account_id].gauges.apply(obs)
        self.refresher.restore(await self.service.db.read(quota_store.load_polls))
        now = self.service.clock.now()
        recent = await self.service.db.read(
            lambda: quota_store.load_history(now - BURN_WINDOW_S, trail=True)
        )
        for account_id, windows in recent.items():
            for window, points in windows.items():
                for at, utilization in points:
                    self.usage_trail.add(account_id, window, at, utilization)

    def _remember_poll(self, account_id: int, marks: PollMarks) -> None:
        """The poll floor (with the revision it belongs to) and the endpoint's back-off are
        saved so a restart keeps them (R-OBS-2); written behind the read, which never waits."""
        store = self.service.store
        if store is None:
            return

        async def save() -> None:
            try:
                await store.write(lambda: quota_store.save_poll(account_id, *marks))
            except Exception as exc:  # the floor still holds in memory for this run
                log.error("could not save when quota may be read again: %s", type(exc).__name__)

        spawn(save(), name="quota-poll")

    async def cancel_reads(self) -> None:
        """Quota reads still running would go on into a closed session; nobody waits for them."""
        reads = list(self.refresher._running.values())
        for task in reads:
            task.cancel()
        await asyncio.gather(*reads, return_exceptions=True)

    async def save_pending(self) -> None:
        """At stop: the header readings still waiting for their batch are saved now, not lost
        with the linger (they have been gating requests already)."""
        flush = self._obs_flush
        if flush is not None and not flush.done():
            if not self._saving:
                flush.cancel()  # still lingering: its batch is saved just below
            # (saving: waited for, since cancelled mid-save it would lose the batch it holds)
            await asyncio.gather(flush, return_exceptions=True)
        await self._save_batches()

    def observe_headers(self, account: AccountState, headers: Any) -> None:
        """Every response through an account feeds its gauges (R-GAUGE-2) and lets traffic
        start background refreshes of stale accounts of that provider (R-GAUGE-3)."""
        if account.provider == "anthropic":
            found = anthropic_quota.header_observations(headers, self.service.clock.now())
            if found:
                self._queue(account, found)
        self.refresh_stale(account.provider)

    def observe_codex_quota(self, account: AccountState, quota: codex.QuotaObservation) -> None:
        """The `x-codex-*` headers (or a `codex.rate_limits` event) of one Codex response."""
        found = codex_quota.header_observations(quota)
        if found:
            self._queue(account, found)

    def _queue(self, account: AccountState, found: list[Observation]) -> None:
        """Header readings gate at once (R-GAUGE-2) and are saved in a batch behind them
        (coalesced, latest per window, stamped with the epoch they came under)."""
        revision, pending = self._pending_obs.get(account.id, (account.revision, {}))
        if revision != account.revision:
            # The account changed lifecycle since these were queued: their save would be
            # refused (R-GAUGE-4), and the new ones must not wait behind it.
            revision, pending = account.revision, {}
        gauges = account.gauges
        changed = False
        for obs in found:
            changed = gauges.apply(obs) or changed
            pending[obs.window] = (obs, account.quota_epoch)
        self._pending_obs[account.id] = (revision, pending)
        if changed:
            self._dirty.add(account.id)
        self.service.pool.note_readings(account, found)
        if self._obs_flush is None or self._obs_flush.done():
            self._obs_flush = spawn(self._flush(), name="quota-observations")

    async def _flush(self) -> None:
        await asyncio.sleep(OBSERVATION_LINGER_S)
        self._saving = True
        try:
            await self._save_batches()
        finally:
            self._saving = False

    async def _save_batches(self) -> None:
        while self._pending_obs:
            batch, self._pending_obs = self._pending_obs, {}
            dirty, self._dirty = self._dirty, set()
            for account_id, (revision, pending) in batch.items():
                account = self.service.pool.accounts.get(account_id)
                if account is not None:
                    stamped = [replace(obs, epoch=epoch) for obs, epoch in pending.values()]
                    saved = await self.save(account, revision, stamped)
                    for obs in saved:
                        self.usage_trail.add(
                            account.id, obs.window, obs.observed_at, obs.utilization
                        )
                    if saved and account_id in dirty:
                        self.service.bus.publish("accounts.gauges", account_id=account.id)

    async def publish(
        self, account: AccountState, revision: int, observations: list[Observation]
    ) -> bool:
        """A usage read: saved, then shown; a read begun under an older revision is rejected
        (R-GAUGE-4). A read that shows a held window below its ceiling ends the hold (R-OBS-3)."""
        saved = await self.save(account, revision, observations)
        if not saved:
            return False
        changed = [account.gauges.apply(obs) for obs in saved]
        for obs in saved:
            self.usage_trail.add(account.id, obs.window, obs.observed_at, obs.utilization)
        self.service.pool.note_readings(account, saved)
        if any(changed):
            self.service.bus.publish("accounts.gauges", account_id=account.id)
        return True

    async def save(
        self, account: AccountState, revision: int, observations: list[Observation]
    ) -> list[Observation]:
        """The readings saved (those still of the account's revision and quota epoch), or []."""
        store = self.service.store
        if store is None:  # a reading that lands after stop() is dropped
            return []

        def current() -> list[Observation]:
            """The readings still of this account's quota epoch (R-FT-9). Asked again on
            the writer thread and after the save: a reset may come at any point between."""
            return [obs for obs in observations if obs.epoch == account.quota_epoch]

        def write() -> bool:
            fresh = current()
            return bool(fresh) and quota_store.save_observations(account.id, revision, fresh)

        try:
            saved = await store.write(write)
        except Exception as exc:
            log.error("could not save quota observations: %s", type(exc).__name__)
            return []
        if not saved or account.revision != revision:
            return []
        return current()

    async def history(self, account_id: int, since: float) -> dict[str, list[Any]]:
        """R-UI-11: one account's readings since `since`, per window, oldest first."""
        found = await self.service.db.read(lambda: quota_store.load_history(since, account_id))
        return found.get(account_id, {})

    def candidates(self, provider: str | None = None) -> list[AccountState]:
        """Accounts whose quota can be read: OAuth, enabled, signed in, not paused."""
        return [
            a
            for a in self.service.pool.accounts.values()
            if (provider is None or a.provider == provider)
            and a.provider in ("anthropic", "codex", "antigravity")
            and a.kind == "oauth"
            and a.enabled
            and not a.auth_failed
            and not a.paused
        ]

    def refresh_stale(self, provider: str) -> None:
        self.read_if_stale(self.candidates(provider))

    def read_if_stale(self, accounts: list[AccountState]) -> None:
        """Read those of `accounts` whose gauges are stale or cold, within the poll floor and
        the endpoint's retry-after (R-GAUGE-3): what traffic through them would start."""
        now = self.service.clock.now()
        due = self.refresher.due  # asked first: after a read, nothing is due for minutes
        stale = [
            a for a in accounts if due(a, now) and a.gauges.any_stale(now, windows_for(a.provider))
        ]
        if stale:
            self.refresher.want(stale)

    def read_unpaused(self, account_ids: list[int]) -> None:
        """These accounts serve again after a pause, which read nothing (R-UI-14,
        service/fresh_gauges.py): stale or cold gauges are read now, within the floor."""
        wanted = set(account_ids)
        self.read_if_stale([a for a in self.candidates() if a.id in wanted])

    def read_new(self, account_ids: list[int]) -> None:
        """These accounts just came into service (R-UI-14, service/fresh_gauges.py): read their
        quota now, in the background, past the poll floor but not the endpoint's retry-after.
        Skipped for an account whose quota cannot be read (API key, paused)."""
        wanted = set(account_ids)
        self.refresher.want([a for a in self.candidates() if a.id in wanted], force=True)

    async def read_signed_in(self, account: AccountState) -> str:
        """A sign-in waits for its account's first read (R-LOGIN-1) and says how it went: the
        read its arrival started is joined, not sent twice; one is started if none ran yet
        under this revision (still within the endpoint's retry-after and the global cap)."""
        read_already = not account.gauges.all_cold(windows_for(account.provider))
        if read_already and account.id not in self.refresher._running:
            return "read"  # the arrival's read has landed already
        tasks = self.refresher.want([account], force=True)
        if not tasks:
            return "not read yet (the usage endpoint asked to wait; the next poll reads it)"
        try:
            landed = await tasks[0]
        except Exception:  # the account is signed in all the same; the next poll reads it
            landed = False
        if landed:
            return "read"
        failure = self.refresher.failures.get(account.id)
        return f"not read yet ({failure or 'the next poll reads it'})"

    def refresh_all(self) -> int:
        """A person asked (Refresh button, opening the Accounts window): skip the poll floor."""
        return len(self.refresher.want(self.candidates(), force=True))

    async def read(self, account: AccountState) -> list[Observation]:
        """A usage read, its readings stamped with the quota epoch it began under (R-FT-9)."""
        epoch = account.quota_epoch
        try:
            observations = await self._read(account)
        except CredentialUnavailable as exc:  # noted on the account; a failed read, in words
            raise QuotaReadError(str(exc)) from None
        return [replace(obs, epoch=epoch) for obs in observations]

    async def _read(self, account: AccountState) -> list[Observation]:
        service = self.service
        if account.provider == "antigravity":
            return await service.antigravity.read_quota(account)
        credential = await service.credential(account)
        if account.provider == "codex":
            base = (account.base_url or service.base_url("codex")).rstrip("/")
            headers = codex.upstream_headers({}, credential)
            headers = {
                k: v
                for k, v in headers.items()
                if k.lower() in ("authorization", "chatgpt-account-id", "originator")
            }
            return await codex_quota.read_usage(
                service.http, codex_quota.usage_url(base), headers, service.clock.now()
            )
        base = (account.base_url or service.base_url("anthropic")).rstrip("/")
        return await anthropic_quota.read_usage(
            service.http, base, credential["access_token"], service.clock.now()
        )
