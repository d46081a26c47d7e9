"""The service object: the one API that the proxy routes, the CLI and the tray all call (R-ARCH-2).

It owns the store, the secret store, the pool and the HTTP server, and keeps the blocking parts
(SQLite, keyring) off the event loop (R-ARCH-3).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets as pysecrets
from collections import deque
from pathlib import Path
from typing import Any

import aiohttp

from sublane_desktop.core.cache_miss import PreviousTurn
from sublane_desktop import credential_problems as problems
from sublane_desktop.core.clock import Clock, SystemClock
from sublane_desktop.core.events import EventBus
from sublane_desktop.core.forecast import BURN_WINDOW_S, UsageTrail, forecast
from sublane_desktop.core.gauges import Observation, windows_for
from sublane_desktop.core.pool import AccountState, Pool
from sublane_desktop.core.quota import QuotaRefresher
from sublane_desktop.core.scheduler import MODES, Ceilings
from sublane_desktop.core.records import RequestRecord
from sublane_desktop.service_antigravity import AntigravityAccounts
from sublane_desktop.service_discovery import ModelDiscovery
from sublane_desktop.core.tasks import spawn
from sublane_desktop.core.turn_memory import TurnMemory
from sublane_desktop.credential_problems import CredentialProblems
from sublane_desktop.secrets import KeyringUnavailable, SecretStore, account_secret
from sublane_desktop.providers import anthropic_quota, codex, codex_quota, oauth
from sublane_desktop.store import quota as quota_store
from sublane_desktop.store import repositories as repo
from sublane_desktop.store.connection import Store
from sublane_desktop.store.records import RequestLog

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
DEFAULT_MAX_BODY = 32 * 1024 * 1024
ADMIN_TOKEN = "admin-token"
BASE_URL_ENV = {
    "anthropic": "SUBLANE_ANTHROPIC_BASE_URL",
    "codex": "SUBLANE_CODEX_BASE_URL",
    "openai": "SUBLANE_OPENAI_BASE_URL",  # API-key accounts of the codex provider
    "antigravity": "SUBLANE_ANTIGRAVITY_BASE_URL",
    "oauth": "SUBLANE_OAUTH_BASE_URL",
}
DEFAULT_BASE_URLS = {
    "anthropic": "https://api.anthropic.com",
    "codex": "https://chatgpt.com/backend-api/codex",
    "openai": "https://api.openai.com",
    "antigravity": "https://cloudcode-pa.googleapis.com",
    "oauth": "https://platform.claude.com",
}
STATUS_FILE = "server.json"
TICK_SECONDS = 30.0
IDENTITY_TTL = 1.0
SCHEDULER_SETTINGS = {
    "scheduler.mode": "score",
    "scheduler.fable_weekly_max": 0.98,
    "scheduler.five_hour_max": 0.90,
    "scheduler.seven_day_max": 0.99,
    "scheduler.account_limits": {},  # account name -> {five_hour_max|seven_day_max|fable_weekly_max}
    "quota.poll_floor_seconds": 300,
    "pool.cap": 8,
    "proxy.max_body_bytes": 32 * 1024 * 1024,
    "server.port": 8765,
    "app.start_at_login": False,
}
RECENT_RECORDS = 100


def ensure_admin_token(secret_store: SecretStore) -> str:
    token = secret_store.get(ADMIN_TOKEN)
    if not token:
        token = "sla-" + pysecrets.token_urlsafe(32)
        secret_store.set(ADMIN_TOKEN, token)
    return token


def recorded_requests(store: Store, now: float) -> list[dict[str, Any]]:
    """The retained request records, oldest first, for the simulator's recorded trace."""
    from sublane_desktop.store import records

    with store.db.atomic():
        records.prune(now)  # cleanup on read, as the server does
    return records.trace_rows(now)


def load_account_states() -> list[AccountState]:
    """Stored accounts with their persisted runtime, as pool states (runs on a DB thread)."""
    runtime = repo.runtime_rows()
    states = []
    for row in repo.account_rows():
        rt = runtime.get(row.id)
        states.append(AccountState(
            id=row.id, name=row.name, provider=row.provider, group_ids=row.group_ids,
            kind=row.kind, base_url=row.base_url, enabled=row.enabled,
            max_concurrency=row.max_concurrency, revision=row.revision,
            paused=bool(rt.paused) if rt else False,
            auth_failed=bool(rt.auth_failed) if rt else False,
            cooldown_until=rt.cooldown_until if rt else None,
            failure_streak=rt.failure_streak if rt else 0,
            runtime_revision=rt.runtime_revision if rt else 0,
        ))
    return states


class _StorePersistence:
    """The pool's persistence port: writes go to the writer thread; failures only log."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def _write(self, what: str, fn) -> None:
        async def run() -> None:
            try:
                await self.service.store.write(fn)
            except Exception as exc:  # R-POOL-10: in-memory state stays in force
                log.error("could not persist %s: %s", what, type(exc).__name__)

        spawn(run(), name=f"persist-{what}")

    def save_runtime(self, account_id: int, fields: dict[str, Any]) -> None:
        self._write("runtime", lambda: repo.save_runtime(account_id, **fields))

    def save_binding(self, group_id: int, digest: str, account_id: int) -> None:
        self._write("binding", lambda: repo.save_binding(group_id, digest, account_id))

    def delete_bindings(self, account_id: int) -> None:
        self._write("binding", lambda: repo.delete_bindings_for(account_id))

    def save_turn(self, group_id: int, digest: str, facts: PreviousTurn) -> None:
        self._write("turn", lambda: repo.save_turn(group_id, digest, facts.account_id,
                                                   facts.ended_at, facts.input_tokens,
                                                   facts.warm_tokens))

    def save_lifecycle(self, account_id: int, enabled: bool, revision: int) -> None:
        self._write("lifecycle", lambda: repo.save_lifecycle(account_id, enabled, revision))


class Service:
    def __init__(
        self,
        data_dir: Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = DEFAULT_PORT,
        clock: Clock | None = None,
        secret_store: SecretStore | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port
        self.clock = clock or SystemClock()
        self.env = dict(os.environ if env is None else env)
        self.bus = EventBus()
        self._secrets = secret_store
        self.keyring_problem: str | None = None
        self.credential_problems = CredentialProblems()  # R-UI-8: why a credential is unusable
        self.store: Store | None = None
        persistence = _StorePersistence(self)
        self.pool = Pool(self.clock, persistence=persistence, on_change=self._changed)
        # Each conversation's last turn, for the cache-miss rule (R-CF-1).
        self.turns = TurnMemory(save=persistence.save_turn)
        self.pool.scheduler.conversations = self.turns  # cost_aware reads the same facts
        self.admin_token: str | None = None
        self.http: aiohttp.ClientSession | None = None
        # The latest records of this process, in memory for live views and quick checks; the
        # history API reads the database, which is the only complete source.
        self.records: deque[RequestRecord] = deque(maxlen=RECENT_RECORDS)
        self.request_log = RequestLog(
            self.clock, on_written=lambda count: self.bus.publish("records.added", count=count))
        self._credentials: dict[int, tuple[int, dict[str, Any]]] = {}
        self._data_version: int | None = None
        self._identities: dict[str, tuple[repo.KeyIdentity, float]] = {}
        self._server = None
        self.refresher = QuotaRefresher(
            self.clock, read=self._read_quota, publish=self._publish_quota,
            take_slot=self.pool.try_metadata_slot, give_slot=self.pool.release_metadata_slot)
        self.discovery = ModelDiscovery(self)
        self.antigravity = AntigravityAccounts(self)
        self._pending_obs: dict[int, tuple[int, dict[str, Observation]]] = {}
        self.usage_trail = UsageTrail()  # the last hour of readings, for forecasts (R-UI-7)
        self._obs_flush: asyncio.Task | None = None
        self._token_refresh: dict[int, asyncio.Task] = {}
        self._tick: asyncio.Task | None = None
        self.settings: dict[str, Any] = dict(SCHEDULER_SETTINGS)
        self._idle = asyncio.Event()
        self._idle.set()

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        from sublane_desktop.proxy.server import ProxyServer, build_app

        loop = asyncio.get_running_loop()
        self.store = await loop.run_in_executor(None, Store, self.data_dir / "sublane.db")
        await self.store.write(repo.ensure_admin)
        self.request_log.start(self.store)
        try:
            if self._secrets is None:
                self._secrets = await loop.run_in_executor(None, SecretStore, self.data_dir)
            self.admin_token = await loop.run_in_executor(None, ensure_admin_token, self._secrets)
        except KeyringUnavailable as exc:
            # Serve anyway: the user sees why accounts and the management API are unavailable.
            self.keyring_problem = str(exc)
            log.warning("%s", exc)
        settings = await self.store.read(repo.all_settings)
        self.settings.update(settings)
        await self._reload_catalog(force=True)
        if self.keyring_problem:  # every credential is out of reach: say so on each account
            for account_id in self.pool.accounts:
                self.credential_problems.note(account_id, problems.KEYRING_UNAVAILABLE)
        self.pool.load_bindings(await self.store.read(repo.load_bindings))
        self.turns.load({key: PreviousTurn(*facts)
                         for key, facts in (await self.store.read(repo.load_turns)).items()})
        for account_id, observations in (await self.store.read(
                quota_store.load_observations)).items():
            if account_id in self.pool.accounts:
                for obs in observations:
                    self.pool.accounts[account_id].gauges.apply(obs)
        recent = await self.store.read(
            lambda: quota_store.load_history(self.clock.now() - BURN_WINDOW_S))
        for account_id, windows in recent.items():
            for window, points in windows.items():
                for at, utilization in points:
                    self.usage_trail.add(account_id, window, at, utilization)
        self._tick = spawn(self._evaluation_tick(), name="scheduler-tick")
        self.http = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, connect=15, sock_read=600),
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
            skip_auto_headers=("User-Agent",),
        )
        max_body = int(settings.get("proxy.max_body_bytes", DEFAULT_MAX_BODY))
        if self.port is None:
            self.port = int(self.settings["server.port"])
        self._server = ProxyServer(build_app(self, max_body=max_body), self.host, self.port)
        self.port = await self._server.start()
        self._write_status()

    async def stop(self, drain_timeout: float = 10.0) -> None:
        """Let in-flight requests finish (bounded), then close everything (R-UI-5)."""
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
        if self._server is not None:
            try:
                await asyncio.wait_for(self._idle.wait(), drain_timeout)
            except asyncio.TimeoutError:
                log.warning("quit with %s requests still in flight", self.pool.in_flight)
            await self._server.stop()
            self._server = None
        # Quota reads still running would go on into a closed session; nobody waits for them.
        reads = list(self.refresher._running.values())
        for task in reads:
            task.cancel()
        await asyncio.gather(*reads, return_exceptions=True)
        if self.http is not None:
            await self.http.close()
            self.http = None
        await self.request_log.stop()
        if self.store is not None:
            store, self.store = self.store, None
            await asyncio.get_running_loop().run_in_executor(None, store.close)
        try:
            (self.data_dir / STATUS_FILE).unlink()
        except FileNotFoundError:
            pass

    @property
    def secrets(self) -> SecretStore:
        if self._secrets is None:
            raise KeyringUnavailable(self.keyring_problem or "no keyring has been opened")
        return self._secrets

    @property
    def endpoint_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _write_status(self) -> None:
        status = {"pid": os.getpid(), "host": self.host, "port": self.port,
                  "url": self.endpoint_url}
        (self.data_dir / STATUS_FILE).write_text(json.dumps(status))

    def _changed(self) -> None:
        if self.pool.in_flight == 0:
            self._idle.set()
        else:
            self._idle.clear()
        self.bus.publish("accounts.changed")

    # --- catalog --------------------------------------------------------------------------------

    async def _reload_catalog(self, force: bool = False) -> None:
        """Re-read accounts when another process (the CLI) committed to the database.

        `PRAGMA data_version` is asked on the writer's own connection, where it changes only
        for *other* connections' commits: our own record and runtime writes never trigger a
        reload.
        """
        def version() -> int:
            return self.store.db.execute_sql("PRAGMA data_version").fetchone()[0]

        current = await self.store.write(version)
        if not force and current == self._data_version:
            return
        states = await self.store.read(load_account_states)
        self._data_version = current
        self._identities.clear()  # keys may have been revoked too
        self.pool.sync_accounts(states)
        self._apply_settings()

    async def refresh_catalog(self) -> None:
        """Pick up accounts another process (the CLI) added or re-authorized."""
        await self._reload_catalog()

    async def identify(self, key: str) -> repo.KeyIdentity | None:
        """Who a client key belongs to (R-PX-1).

        Known keys are answered from memory for IDENTITY_TTL seconds, so the request path takes
        no database round trip; a revocation made by another process shows within that time,
        and one made through this service (revoke_key) at once.
        """
        digest = repo.hash_key(key)
        now = self.clock.monotonic()
        hit = self._identities.get(digest)
        if hit is not None and now - hit[1] < IDENTITY_TTL:
            return hit[0]
        try:
            await self._reload_catalog()
        except Exception as exc:  # serving on the catalog we have beats failing the request
            log.error("could not check the account catalog: %s", type(exc).__name__)
        identity = await self.store.read(lambda: repo.identify_key(key))
        if identity is not None:
            if len(self._identities) > 10_000:  # bounded: unknown keys are never cached
                self._identities.clear()
            self._identities[digest] = (identity, now)
        else:
            self._identities.pop(digest, None)
        return identity

    async def create_key(self, name: str, user: str | None = None, group: str = "default"
                         ) -> tuple[dict[str, Any], str]:
        """A new client key, returned once (the Client keys dialog and the API)."""
        def write() -> tuple[dict[str, Any], str]:
            owner = repo.find_user(user) if user else repo.ensure_admin()
            row, key = repo.create_key(name, owner, repo.find_group(group))
            return {"id": row.id, "name": row.name, "prefix": row.prefix}, key

        return await self.store.write(write)

    async def revoke_key(self, ref: str | int) -> None:
        await self.store.write(lambda: repo.revoke_key(str(ref)))
        self._identities.clear()

    async def list_keys(self) -> list[dict[str, Any]]:
        return await self.store.read(repo.list_keys)

    async def credential(self, account: AccountState) -> dict[str, Any]:
        cached = self._credentials.get(account.id)
        if cached is not None and cached[0] == account.revision:
            credential = cached[1]
        else:
            try:
                raw = await self.secrets.aget(account_secret(account.id))
            except KeyringUnavailable:
                self._credential_problem(account, problems.KEYRING_UNAVAILABLE)
                raise
            if not raw:
                self._credential_problem(account, problems.MISSING, gate=True)
                raise LookupError("no credential stored")
            try:
                credential = json.loads(raw)
            except ValueError:
                self._credential_problem(account, problems.UNREADABLE, gate=True)
                raise LookupError("stored credential is not readable") from None
            self._credentials[account.id] = (account.revision, credential)
            if self.credential_problems.clear(account.id):
                self._changed()
        if oauth.needs_refresh(credential, self.clock.now()):
            credential = await self.refresh_credential(account)
        if account.provider == "antigravity":
            credential = await self.antigravity.with_project(account, credential)
        return credential

    def _credential_problem(self, account: AccountState, reason: str, gate: bool = False
                            ) -> None:
        """R-UI-8: the account shows `auth_failed` with the reason; an unusable credential of
        its own also gates it (stored) until it is added again."""
        news = self.credential_problems.note(account.id, reason)
        if gate and not account.auth_failed:
            self.pool.mark_auth_failed(account)
        elif news:
            self._changed()

    async def open_file_keyring(self, password: str, *, create: bool) -> str:
        """The GUI's "no keyring" dialog: create (or unlock) the encrypted file keyring and use
        it from now on. Returns where the secrets live. Raises KeyringUnavailable (wrong
        password, unreadable file) or ValueError (bad input) and changes nothing then."""
        from sublane_desktop.secrets import FILE_NAME, EncryptedFileKeyring

        if not isinstance(password, str) or len(password) < 8:
            raise ValueError("choose a password of at least 8 characters")
        exists = (self.data_dir / FILE_NAME).exists()
        if create and exists:
            raise ValueError(f"{self.data_dir / FILE_NAME} already exists; unlock it instead")
        if not create and not exists:
            raise ValueError(f"there is no encrypted keyring at {self.data_dir / FILE_NAME}")
        loop = asyncio.get_running_loop()

        def open_store() -> tuple[SecretStore, str]:
            store = SecretStore(self.data_dir, backend=EncryptedFileKeyring(
                self.data_dir, password))
            return store, ensure_admin_token(store)  # writes (create) or checks the password

        store, token = await loop.run_in_executor(None, open_store)
        self._secrets, self.admin_token, self.keyring_problem = store, token, None
        self._credentials.clear()
        self.credential_problems.clear_keyring()
        self._changed()
        self.bus.publish("accounts.settings")
        return store.describe()

    def keyring_file_exists(self) -> bool:
        from sublane_desktop.secrets import FILE_NAME

        return (self.data_dir / FILE_NAME).exists()

    async def refresh_credential(self, account: AccountState) -> dict[str, Any]:
        """One refresh in flight per account (R-ST-3); callers share its result."""
        task = self._token_refresh.get(account.id)
        if task is None or task.done():
            task = spawn(self._refresh_credential(account), name=f"token-refresh-{account.id}")
            self._token_refresh[account.id] = task
        return await asyncio.shield(task)

    async def _refresh_credential(self, account: AccountState) -> dict[str, Any]:
        cached = self._credentials.get(account.id)
        if cached is None:
            raw = await self.secrets.aget(account_secret(account.id))
            cached = (account.revision, json.loads(raw or "{}"))
        old = cached[1]
        base = self.env.get(oauth.OAUTH_BASE_ENV.get(account.provider, BASE_URL_ENV["oauth"])) \
            or oauth.DEFAULT_OAUTH_BASE.get(account.provider, DEFAULT_BASE_URLS["oauth"])
        try:
            fresh = await oauth.refresh(self.http, account.provider, base, old, self.clock.now())
        except oauth.RefreshRejected as exc:
            log.warning("account %s: %s; marking it auth-failed", account.id, exc)
            self.credential_problems.note(account.id, problems.REFUSED)
            self.pool.mark_auth_failed(account)
            return old
        except oauth.RefreshFailed as exc:
            log.warning("account %s: %s; keeping the current token", account.id, exc)
            return old
        await self.secrets.aset(account_secret(account.id), json.dumps(fresh))
        self._credentials[account.id] = (account.revision, fresh)
        return fresh

    def base_url(self, provider: str) -> str:
        return self.env.get(BASE_URL_ENV[provider]) or DEFAULT_BASE_URLS[provider]

    # --- signals from traffic -------------------------------------------------------------------

    def observe_headers(self, account: AccountState, headers: Any) -> None:
        """Every response through an account feeds its gauges (R-GAUGE-2) and lets traffic
        start background refreshes of stale accounts of that provider (R-GAUGE-3)."""
        if account.provider == "anthropic":
            found = anthropic_quota.header_observations(headers, self.clock.now())
            if found:
                self._queue_observations(account, found)
        self.refresh_stale(account.provider)

    def observe_codex_quota(self, account: AccountState, quota: codex.QuotaObservation) -> None:
        """The `x-codex-*` headers (or a `codex.rate_limits` event) of one Codex response."""
        found = codex_quota.header_observations(quota)
        if found:
            self._queue_observations(account, found)

    def _queue_observations(self, account: AccountState, found: list[Observation]) -> None:
        """Header readings are saved (coalesced, latest per window) before they are shown."""
        revision, pending = self._pending_obs.get(account.id, (account.revision, {}))
        for obs in found:
            pending[obs.window] = obs
        self._pending_obs[account.id] = (revision, pending)
        if self._obs_flush is None or self._obs_flush.done():
            self._obs_flush = spawn(self._flush_observations(), name="quota-observations")

    async def _flush_observations(self) -> None:
        while self._pending_obs:
            batch, self._pending_obs = self._pending_obs, {}
            for account_id, (revision, pending) in batch.items():
                account = self.pool.accounts.get(account_id)
                if account is not None:
                    await self._publish_quota(account, revision, list(pending.values()))

    async def _publish_quota(self, account: AccountState, revision: int,
                             observations: list[Observation]) -> bool:
        """Save, then publish; a refresh begun under an older revision is rejected (R-GAUGE-4)."""
        if self.store is None:
            return False
        try:
            saved = await self.store.write(
                lambda: quota_store.save_observations(account.id, revision, observations))
        except Exception as exc:
            log.error("could not save quota observations: %s", type(exc).__name__)
            return False
        if not saved or account.revision != revision:
            return False
        changed = [account.gauges.apply(obs) for obs in observations]
        for obs in observations:
            self.usage_trail.add(account.id, obs.window, obs.observed_at, obs.utilization)
        if any(changed):
            self.bus.publish("accounts.gauges", account_id=account.id)
        return True

    def quota_candidates(self, provider: str | None = None) -> list[AccountState]:
        """Accounts whose quota can be read: OAuth, enabled, signed in, not paused."""
        return [a for a in self.pool.accounts.values()
                if (provider is None or a.provider == provider)
                and a.provider in ("anthropic", "codex", "antigravity")
                and a.kind == "oauth" and a.enabled and not a.auth_failed and not a.paused]

    def refresh_stale(self, provider: str) -> None:
        now = self.clock.now()
        stale = [a for a in self.quota_candidates(provider)
                 if a.gauges.any_stale(now, windows_for(a.provider))]
        if stale:
            self.refresher.want(stale)

    def refresh_quotas(self) -> int:
        """A person asked (Refresh button, opening the Accounts window): skip the poll floor."""
        return len(self.refresher.want(self.quota_candidates(), force=True))

    async def _read_quota(self, account: AccountState) -> list[Observation]:
        if account.provider == "antigravity":
            return await self.antigravity.read_quota(account)
        credential = await self.credential(account)
        if account.provider == "codex":
            base = (account.base_url or self.base_url("codex")).rstrip("/")
            headers = codex.upstream_headers({}, credential)
            headers = {k: v for k, v in headers.items()
                       if k.lower() in ("authorization", "chatgpt-account-id", "originator")}
            return await codex_quota.read_usage(self.http, codex_quota.usage_url(base),
                                                headers, self.clock.now())
        base = (account.base_url or self.base_url("anthropic")).rstrip("/")
        return await anthropic_quota.read_usage(self.http, base, credential["access_token"],
                                                self.clock.now())

    async def _evaluation_tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self.pool.evaluate()

    def record(self, record: RequestRecord) -> None:
        """Queue a request record; never blocks the loop (R-ARCH-3, R-REC-4)."""
        self.records.append(record)
        self.request_log.add(record)

    async def flush_records(self) -> None:
        """Wait until every record so far is in the database (tests, shutdown)."""
        await self.request_log.flush()

    # --- views ----------------------------------------------------------------------------------

    def account_view(self, account_id: int) -> dict[str, Any]:
        account = self.pool.accounts[account_id]
        now = self.clock.now()
        gauges = account.gauges
        state = self.pool.state_of(account)
        reason = self.credential_problems.reason(account.id)
        if reason and state != "disabled":
            state = "auth_failed"
        return {
            "id": account.id,
            "name": account.name,
            "provider": account.provider,
            "state": state,
            "auth_reason": reason if state == "auth_failed" else None,
            "in_flight": account.in_flight,
            "max_concurrency": account.max_concurrency,
            "paused": account.paused,
            "pinned_until": account.pinned_until if self.pool.scheduler.pinned(account, now)
            else None,
            "cooldown_until": account.cooldown_until if account.cooling(now) else None,
            "failure_streak": account.failure_streak,
            "current": self.pool.scheduler.is_current(account),
            "fable_current": self.pool.scheduler.is_fable_current(account),
            "gauges": gauges.to_json(now, windows_for(account.provider)),
            "kind": account.kind,
            "forecast": self._forecasts(account, now),
        }

    def _forecasts(self, account: AccountState, now: float) -> dict[str, dict[str, Any]]:
        """R-UI-7: fresh windows that would run out before their reset, at the last hour's pace."""
        out: dict[str, dict[str, Any]] = {}
        for window in windows_for(account.provider):
            gauge = account.gauges.get(window)
            if gauge.stale(now):
                continue
            found = forecast(self.usage_trail.points(account.id, window), gauge.resets_at, now)
            if found is not None:
                out[window] = {"runs_out_at": found.runs_out_at, "resets_at": found.resets_at,
                               "rate_per_hour": found.rate_per_hour}
        return out

    async def usage_history(self, account_id: int, since: float) -> dict[str, list[Any]]:
        """R-UI-11: one account's readings since `since`, per window, oldest first."""
        found = await self.store.read(lambda: quota_store.load_history(since, account_id))
        return found.get(account_id, {})

    def accounts_runtime(self) -> dict[str, Any]:
        return {
            "accounts": [self.account_view(a) for a in sorted(self.pool.accounts)],
            "in_flight": self.pool.in_flight,
            "cap": self.pool.cap,
        }

    # --- operator levers (R-ARCH-2) -------------------------------------------------------------

    async def set_limit(self, ref: str | int, limit: int) -> dict[str, Any]:
        account = self.pool.set_limit(ref, limit)
        await self.store.write(lambda: repo.set_max_concurrency(account.id, limit))
        return self.account_view(account.id)

    async def resume(self, ref: str | int) -> dict[str, Any]:
        account = self.pool.resume(ref)
        return self.account_view(account.id)

    async def pause(self, ref: str | int, paused: bool = True) -> dict[str, Any]:
        account = self.pool.set_paused(ref, paused)
        return self.account_view(account.id)

    async def unpause(self, ref: str | int) -> dict[str, Any]:
        return await self.pause(ref, False)

    async def clear_cooldown(self, ref: str | int) -> dict[str, Any]:
        """The seed's "resume": the tray and the CLI name it clear-cooldown."""
        return await self.resume(ref)

    async def switch(self, ref: str | int) -> dict[str, Any]:
        account = self.pool.switch(ref)
        return self.account_view(account.id)

    async def reset_usage(self) -> None:
        """Every gauge cold; the poll floor lifts so the feeds repopulate at once (R-LANE-8)."""
        self.pool.reset_usage()
        self.refresher.lift_floor()
        self.usage_trail.clear()
        await self.store.write(quota_store.clear_observations)

    # --- accounts (the Add-account dialog and the API; the CLI shares credentials.py) ---------

    async def add_account(self, provider: str, name: str, secret: Any, *, group: str = "default",
                          base_url: str | None = None, max_concurrency: int = 2,
                          replace: bool = False) -> dict[str, Any]:
        """Validate and store an account; the secret goes straight to the keyring.

        Raises credentials.CredentialError with a clear message on bad input.
        """
        from sublane_desktop import credentials

        clean = credentials.validate_secret(provider, secret)
        account_id, _, _ = await self.store.write(lambda: credentials.store_account(
            self.secrets, provider, name, group, base_url, max_concurrency, clean,
            replace=replace))
        self._credentials.pop(account_id, None)
        self.credential_problems.clear(account_id)
        await self._reload_catalog(force=True)
        return self.account_view(account_id)

    async def import_login(self, which: str, path: Path | None = None,
                           name: str | None = None) -> dict[str, Any]:
        """Import the login of an installed Claude Code ("claude-code"), Codex CLI ("codex"),
        Gemini CLI ("gemini") or an Antigravity account file ("antigravity")."""
        from sublane_desktop import credentials

        loop = asyncio.get_running_loop()
        if which in ("gemini", "antigravity"):
            read = credentials.gemini_cli_secret if which == "gemini" \
                else credentials.antigravity_secret
            file = path or Path.home() / credentials.LOGIN_FILES[which]
            secret = await loop.run_in_executor(None, read, file)
            return await self.add_account("antigravity", name or which, secret, replace=True)
        if which == "claude-code":
            file = path or Path.home() / ".claude" / ".credentials.json"
            secret = await loop.run_in_executor(None, credentials.claude_code_secret, file)
            return await self.add_account("anthropic", name or "claude-code", secret,
                                          replace=True)
        file = path or Path.home() / ".codex" / "auth.json"
        secret = await loop.run_in_executor(None, credentials.codex_secret, file)
        return await self.add_account("codex", name or "codex", secret, replace=True)

    # --- first run (R-UI-9): the welcome window ------------------------------------------------

    def found_logins(self) -> list[dict[str, str]]:
        from sublane_desktop.first_run import found_logins

        return found_logins()

    async def test_request(self, key: str) -> dict[str, Any]:
        """One tiny request through this proxy with a client key; it is recorded like any."""
        from sublane_desktop.first_run import send_test_request

        providers = [a.provider for a in self.pool.accounts.values() if a.enabled]
        result = await send_test_request(self.http, self.endpoint_url, key,
                                         providers[0] if providers else "anthropic")
        latest = self.records[-1] if self.records else None
        if latest is not None and latest.account_id in self.pool.accounts:
            result["account"] = self.pool.accounts[latest.account_id].name
        return result

    async def remove_account(self, ref: str | int) -> None:
        """Delete an account: its secret leaves the keyring, its history stays ("deleted")."""
        account = self.pool.find(ref)
        now = self.clock.now()

        def write() -> None:
            from sublane_desktop.store.models import Account

            Account.update(deleted_at=now, enabled=False,
                           name=f"deleted-{account.id}-{account.name}").where(
                Account.id == account.id).execute()
            repo.delete_bindings_for(account.id)

        await self.store.write(write)
        await self.secrets.adelete(account_secret(account.id))
        self._credentials.pop(account.id, None)
        await self._reload_catalog(force=True)

    # --- settings -------------------------------------------------------------------------------

    def _apply_settings(self) -> None:
        s = self.settings
        self.pool.cap = int(s["pool.cap"])
        self.pool.scheduler.mode = s["scheduler.mode"] if s["scheduler.mode"] in MODES else "score"
        self.pool.scheduler.ceilings = Ceilings(
            five_hour_max=float(s["scheduler.five_hour_max"]),
            seven_day_max=float(s["scheduler.seven_day_max"]),
            fable_weekly_max=float(s["scheduler.fable_weekly_max"]))
        overrides = s.get("scheduler.account_limits") or {}
        for account in self.pool.accounts.values():
            account.ceilings = dict(overrides.get(account.name) or {})
        self.refresher.floor_seconds = float(s["quota.poll_floor_seconds"])

    async def update_settings(self, changes: dict[str, Any]) -> dict[str, Any]:
        """Validate, store and apply settings (the Settings dialog, the API and the CLI)."""
        clean = validate_settings(changes)
        def write() -> None:
            for key, value in clean.items():
                repo.set_setting(key, value)
        await self.store.write(write)
        self.settings.update(clean)
        self._apply_settings()
        self.bus.publish("accounts.settings")
        return dict(self.settings)


def validate_settings(changes: Any) -> dict[str, Any]:
    """Known keys with values in range, or ValueError naming the first bad one."""
    if not isinstance(changes, dict) or not changes:
        raise ValueError("settings must be a non-empty JSON object")
    clean: dict[str, Any] = {}
    for key, value in changes.items():
        if key not in SCHEDULER_SETTINGS:
            raise ValueError(f"unknown setting {key!r}")
        if key == "scheduler.mode":
            if value not in MODES:
                raise ValueError(f"scheduler.mode must be one of {', '.join(MODES)}")
        elif key.endswith("_max"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    0 < value <= 1):
                raise ValueError(f"{key} must be a fraction in (0, 1]")
            value = float(value)
        elif key == "scheduler.account_limits":
            if not isinstance(value, dict):
                raise ValueError("scheduler.account_limits must map account names to ceilings")
            for name, limits in value.items():
                if not isinstance(limits, dict):
                    raise ValueError(f"ceilings for {name!r} must be an object")
                validate_settings({f"scheduler.{k}": v for k, v in limits.items()}
                                  ) if limits else None
        elif key in ("pool.cap", "server.port", "proxy.max_body_bytes",
                     "quota.poll_floor_seconds"):
            low, high = {"pool.cap": (1, 64), "server.port": (0, 65535),
                         "proxy.max_body_bytes": (1024, 1 << 30),
                         "quota.poll_floor_seconds": (0, 86400)}[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{key} must be an integer from {low} to {high}")
        elif key == "app.start_at_login":
            if not isinstance(value, bool):
                raise ValueError("app.start_at_login must be true or false")
        clean[key] = value
    return clean
