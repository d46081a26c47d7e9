"""The service: the one API that the proxy routes, the CLI and the tray all call (R-ARCH-2).

`Service` is a thin façade. It owns the shared parts (the store, the secret store, the pool, the
HTTP session and server) and their lifecycle, keeps the blocking parts (SQLite, keyring) off the
event loop (R-ARCH-3), and hands each job to one collaborator:

- `accounts.AccountCatalog`: stored accounts and client keys, kept in step with the database;
- `credentials.CredentialCache`: account credentials from the keyring, refreshed in one flight;
- `quota.QuotaFeed`: response headers and usage reads into the gauges;
- `fresh_gauges.FreshGauges`: an account that is added, enabled or signed in is read at once;
- `levers.OperatorLevers`: pause, disable/enable, verify, limits, switch, reset-usage, settings;
- `records.RequestHistory`: request records, queued and written by one writer;
- `settings` and `views`: the settings' defaults and validation, and what an account looks like;
- `offline.OfflineService`: the same database and keyring for the CLI when no server runs.

Importing this package stays light (no aiohttp, no providers): the CLI's quick commands import
`service.offline`, and with it this module. The collaborators that talk to upstreams are
imported when a `Service` is built.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sublane_desktop import file_modes, heap, startup
from sublane_desktop.accounts.problems import CredentialProblems
from sublane_desktop.accounts.secrets import KeyringUnavailable, SecretHome, SecretStore
from sublane_desktop.core.clients import serves_client
from sublane_desktop.core.clock import Clock, SystemClock
from sublane_desktop.core.events import EventBus
from sublane_desktop.core.pool import AccountState, Pool
from sublane_desktop.core.records import RequestRecord
from sublane_desktop.core.tasks import spawn
from sublane_desktop.core.turn_memory import TurnMemory
from sublane_desktop.instance_lock import ServerLock
from sublane_desktop.service.accounts import (
    IDENTITY_TTL,
    AccountCatalog,
    StorePersistence,
    load_account_states,
)
from sublane_desktop.service.admin import ADMIN_TOKEN, ensure_admin_token
from sublane_desktop.service.levers import OperatorLevers
from sublane_desktop.service.metrics import TrafficTally
from sublane_desktop.service.records import RECENT_RECORDS, RequestHistory, recorded_requests
from sublane_desktop.service.settings import (
    BASE_URL_ENV,
    DEFAULT_BASE_URLS,
    DEFAULT_MAX_BODY,
    DEFAULT_PORT,
    SCHEDULER_SETTINGS,
    put_in_force,
    validate_settings,
)
from sublane_desktop.service.views import account_view, pool_view
from sublane_desktop.store import repositories as repo
from sublane_desktop.store.connection import Store

if TYPE_CHECKING:
    import aiohttp

    from sublane_desktop.core.gauges import Observation
    from sublane_desktop.core.history import HistoryQuery
    from sublane_desktop.providers import codex

__all__ = [
    "ADMIN_TOKEN",
    "BASE_URL_ENV",
    "DEFAULT_BASE_URLS",
    "DEFAULT_MAX_BODY",
    "DEFAULT_PORT",
    "IDENTITY_TTL",
    "RECENT_RECORDS",
    "SCHEDULER_SETTINGS",
    "STATUS_FILE",
    "TICK_SECONDS",
    "Service",
    "ensure_admin_token",
    "load_account_states",
    "recorded_requests",
    "validate_settings",
]

log = logging.getLogger(__name__)

STATUS_FILE = "server.json"
TICK_SECONDS = 30.0


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
        from sublane_desktop.service.antigravity import AntigravityAccounts
        from sublane_desktop.service.credentials import CredentialCache
        from sublane_desktop.service.discovery import ModelDiscovery
        from sublane_desktop.service.fresh_gauges import FreshGauges
        from sublane_desktop.service.quota import QuotaFeed

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
        persistence = StorePersistence(self)
        self.pool = Pool(self.clock, persistence=persistence, on_change=self._changed)
        # Each conversation's last turn, for the cache-miss rule (R-CF-1).
        self.turns = TurnMemory(save=persistence.save_turn)
        self.pool.scheduler.conversations = self.turns  # cost_aware reads the same facts
        self.admin_token: str | None = None
        self.http: aiohttp.ClientSession | None = None
        self.history = RequestHistory(self)
        self.traffic = TrafficTally()  # what GET /metrics counts (R-OBS-1)
        self.records = self.history.recent
        self.request_log = self.history.log
        self.catalog = AccountCatalog(self)
        self.credentials = CredentialCache(self)
        self.quota = QuotaFeed(self)
        self.refresher = self.quota.refresher
        self.usage_trail = self.quota.usage_trail
        self.fresh_gauges = FreshGauges(self)  # R-UI-14: an account that comes in is read
        self.discovery = ModelDiscovery(self)
        self.antigravity = AntigravityAccounts(self)
        # A spill goes only to accounts that serve the model (R-WF-6).
        self.pool.serves = lambda account, model: (
            account.provider != "antigravity" or self.antigravity.serves(account, model)
        )
        self.levers = OperatorLevers(self)
        self._server: Any = None
        self._tick: asyncio.Task | None = None
        self._credential_watch: asyncio.Task | None = None  # R-LOGIN-4
        self.settings: dict[str, Any] = dict(SCHEDULER_SETTINGS)
        self._idle = asyncio.Event()
        self._idle.set()
        self._was_idle = True
        self._lock = ServerLock(self.data_dir)

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the data dir and the store, then listen (R-FT-7).

        A failure a person can fix raises StartupError (one sentence); whatever the failure,
        everything already opened is closed again, so nothing is left running or unclosed.
        """
        try:
            await self._start()
        except BaseException:
            await self.stop(drain_timeout=0)
            raise

    async def _start(self) -> None:
        import aiohttp

        from sublane_desktop.proxy.relay import ClockedConnector
        from sublane_desktop.proxy.server import ProxyServer, build_app

        if self.port is not None:
            startup.check_port(self.port)
        loop = asyncio.get_running_loop()
        with startup.data_dir_stage(self.data_dir):
            file_modes.private_dir(self.data_dir)
            self._lock.acquire()  # before anything else touches the data dir
            file_modes.tighten_data_dir(self.data_dir)
        with startup.database_stage(self.data_dir):
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
        await self.catalog.load()
        await self.quota.load()
        # The lanes a pin kept by the last run anchors (Pool.sync_accounts), judged now with
        # the stored gauges too: a pinned account whose quota is spent is no lane's current.
        self.pool.evaluate()
        self._tick = spawn(self._evaluation_tick(), name="scheduler-tick")
        self._credential_watch = spawn(self.credentials.watch(), name="credential-watch")
        self.http = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, connect=15, sock_read=600),
            connector=ClockedConnector(limit=0, ttl_dns_cache=300),
            skip_auto_headers=("User-Agent",),
            # A relay keeps no cookies: one account's upstream cookies must never ride along
            # on another account's requests (and the jar's bookkeeping costs every request).
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        self.fresh_gauges.start()  # reads can go out now: the accounts never read are read
        max_body = int(settings.get("proxy.max_body_bytes", DEFAULT_MAX_BODY))
        if self.port is None:
            self.port = int(self.settings["server.port"])
            startup.check_port(self.port)
        self._server = ProxyServer(build_app(self, max_body=max_body), self.host, self.port)
        with startup.listen_stage(self.host, self.port):
            self.port = await self._server.start()
        self._write_status()

    async def stop(self, drain_timeout: float = 10.0) -> None:
        """Let in-flight requests finish (bounded), then close everything (R-UI-5)."""
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
        if self._credential_watch is not None:
            self._credential_watch.cancel()
            self._credential_watch = None
        if self._server is not None:
            try:
                if not self._idle.is_set():
                    await asyncio.wait_for(self._idle.wait(), drain_timeout)
            except TimeoutError:
                log.warning("quit with %s requests still in flight", self.pool.in_flight)
            await self._server.stop()
            self._server = None
        self.fresh_gauges.stop()
        await self.quota.cancel_reads()
        await self.quota.save_pending()  # readings that gate already are kept (R-GAUGE-4)
        if self.http is not None:
            await self.http.close()
            self.http = None
        await self.request_log.stop()
        if self.store is not None:
            store, self.store = self.store, None
            await asyncio.get_running_loop().run_in_executor(None, store.close)
        if self._lock.held:  # a server that never got the lock must not touch the owner's file
            try:
                (self.data_dir / STATUS_FILE).unlink()
            except FileNotFoundError:
                pass
            self._lock.release()

    @property
    def secrets(self) -> SecretStore:
        if self._secrets is None:
            raise KeyringUnavailable(self.keyring_problem or "no keyring has been opened")
        return self._secrets

    @property
    def db(self) -> Store:
        """The open store: between start() and stop() only."""
        if self.store is None:
            raise RuntimeError("the service is not started: no database is open")
        return self.store

    @property
    def session(self) -> aiohttp.ClientSession:
        """The upstream HTTP session: between start() and stop() only."""
        if self.http is None:
            raise RuntimeError("the service is not started: no HTTP session is open")
        return self.http

    @property
    def endpoint_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _write_status(self) -> None:
        status = {
            "pid": os.getpid(),
            "host": self.host,
            "port": self.port,
            "url": self.endpoint_url,
        }
        file_modes.write_private(self.data_dir / STATUS_FILE, json.dumps(status))

    def _changed(self) -> None:
        idle = self.pool.in_flight == 0
        if idle != self._was_idle:  # runs twice per request: the event only on a change
            self._was_idle = idle
            if idle:
                self._idle.set()
            else:
                self._idle.clear()
        self.bus.publish("accounts.changed")

    async def _evaluation_tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self.pool.evaluate()
            # weeks of uptime: freed heap pages go back to the system (heap.py)
            await heap.give_back_off_loop()

    def base_url(self, provider: str) -> str:
        return self.env.get(BASE_URL_ENV[provider]) or DEFAULT_BASE_URLS[provider]

    def apply_settings(self) -> None:
        put_in_force(self.settings, self.pool, self.refresher)

    # --- catalog: accounts and client keys ------------------------------------------------------

    async def _reload_catalog(self, force: bool = False) -> None:
        await self.catalog.reload(force)

    async def refresh_catalog(self) -> None:
        """Pick up accounts another process (the CLI) added or re-authorized."""
        await self.catalog.reload()

    async def identify(self, key: str) -> repo.KeyIdentity | None:
        return await self.catalog.identify(key)

    def known_identity(self, key: str) -> repo.KeyIdentity | None:
        return self.catalog.known(key)

    async def create_key(
        self, name: str, user: str | None = None, group: str = "default"
    ) -> tuple[dict[str, Any], str]:
        return await self.catalog.create_key(name, user, group)

    async def revoke_key(self, ref: str | int) -> dict[str, Any]:
        return await self.catalog.revoke_key(ref)

    async def list_keys(self) -> list[dict[str, Any]]:
        return await self.catalog.list_keys()

    async def add_account(
        self,
        provider: str,
        name: str,
        secret: Any,
        *,
        group: str = "default",
        base_url: str | None = None,
        max_concurrency: int = 2,
        replace: bool = False,
    ) -> dict[str, Any]:
        """Validate and store an account (raises credentials.CredentialError on bad input)."""
        account_id = await self.catalog.add_account(
            provider,
            name,
            secret,
            group=group,
            base_url=base_url,
            max_concurrency=max_concurrency,
            replace=replace,
        )
        return self.account_view(account_id)

    async def sign_in(self, which: str, **options: Any) -> dict[str, Any]:
        """Browser sign-in (R-LOGIN-1): a new account of a provider, or `account=` again in
        place; verified and its quota read before this returns (accounts.signin)."""
        from sublane_desktop.accounts.signin import sign_in_for

        return await sign_in_for(self, which, **options)

    async def import_login(
        self, which: str, path: Path | None = None, name: str | None = None, detach: bool = False
    ) -> dict[str, Any]:
        """Import a tool's login (R-LOGIN-2/3): "claude-code", "codex", "gemini", "antigravity"."""
        return self.account_view(await self.catalog.import_login(which, path, name, detach))

    async def remove_account(self, ref: str | int) -> None:
        await self.catalog.remove_account(ref)

    async def add_user(self, name: str) -> int:
        """A new member; raises repositories.Conflict when the name is taken."""
        return await self.catalog.add_user(name)

    # --- first run (R-UI-9): the welcome window ------------------------------------------------

    def found_logins(self) -> list[dict[str, Any]]:
        from sublane_desktop.first_run import found_logins

        return found_logins(environ=self.env)

    async def test_request(self, key: str) -> dict[str, Any]:
        """One tiny request through this proxy with a client key; it is recorded like any."""
        from sublane_desktop.first_run import send_test_request

        enabled = [a for a in self.pool.accounts.values() if a.enabled]
        # SubLane's own request is no Claude Code request, and an Anthropic subscription login
        # serves Claude Code only (R-WF-2): test with an account that serves any client, and
        # where there is none, check the login with Anthropic instead of sending a message.
        served = [a for a in enabled if serves_client(a.provider, a.kind, claude_code=False)]
        if enabled and not served:
            return await self._check_login(enabled[0])
        result = await send_test_request(
            self.session, self.endpoint_url, key, served[0].provider if served else "anthropic"
        )
        # The figures the Requests window shows for this request, so the welcome's test and
        # its record agree (issue 25, fault 16): the record's account and duration.
        record = next(
            (r for r in reversed(self.records) if r.request_id == result.get("request_id")), None
        )
        if record is not None:
            if record.account_id in self.pool.accounts:
                result["account"] = self.pool.accounts[record.account_id].name
            if record.duration_ms is not None:
                result["ms"] = record.duration_ms
        return result

    async def _check_login(self, account: AccountState) -> dict[str, Any]:
        """The welcome's test for a pool of Claude subscription logins only: a verify."""
        started = self.clock.monotonic()
        verified = await self.verify(account.id)
        ok = verified["result"] == "ok"
        return {
            "ok": ok,
            "checked_login": True,
            "account": account.name,
            "ms": round((self.clock.monotonic() - started) * 1000),
            "model": None,
            **({} if ok else {"error": verified["detail"]}),
        }

    # --- credentials ----------------------------------------------------------------------------

    @property
    def _credentials(self) -> dict[int, tuple[int, dict[str, Any]]]:
        return self.credentials.cache

    async def credential(self, account: AccountState) -> dict[str, Any]:
        return await self.credentials.credential(account)

    def ready_credential(self, account: AccountState) -> dict[str, Any] | None:
        return self.credentials.ready(account)

    async def open_file_keyring(self, password: str, *, create: bool) -> str:
        return await self.credentials.open_file_keyring(password, create=create)

    def keyring_file_exists(self) -> bool:
        return self.credentials.keyring_file_exists()

    def secret_home(self) -> SecretHome | None:
        """Where a new secret would go; None while no keyring is open (keyring_problem)."""
        return self._secrets.home() if self._secrets is not None else None

    async def refresh_credential(
        self, account: AccountState, seen: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return await self.credentials.refresh(account, seen)

    # --- quota: signals from traffic, reads on demand -------------------------------------------

    def refresh_stale_quota(self, provider: str) -> None:
        """Traffic the pool turned away is traffic too (R-GAUGE-3): a held account's stale
        gauges are read, and a read that shows headroom ends its quota hold (R-OBS-3)."""
        self.quota.refresh_stale(provider)

    def observe_headers(self, account: AccountState, headers: Any) -> None:
        self.quota.observe_headers(account, headers)

    def observe_codex_quota(self, account: AccountState, quota: codex.QuotaObservation) -> None:
        self.quota.observe_codex_quota(account, quota)

    @property
    def _obs_flush(self) -> asyncio.Task | None:
        """The task saving queued header readings (tests await it)."""
        return self.quota._obs_flush

    async def _publish_quota(
        self, account: AccountState, revision: int, observations: list[Observation]
    ) -> bool:
        return await self.quota.publish(account, revision, observations)

    async def usage_history(self, account_id: int, since: float) -> dict[str, list[Any]]:
        return await self.quota.history(account_id, since)

    def quota_candidates(self, provider: str | None = None) -> list[AccountState]:
        return self.quota.candidates(provider)

    def refresh_stale(self, provider: str) -> None:
        self.quota.refresh_stale(provider)

    def refresh_quotas(self) -> int:
        return self.quota.refresh_all()

    # --- records --------------------------------------------------------------------------------

    def record(self, record: RequestRecord) -> None:
        self.traffic.count_record(record)
        self.history.record(record)

    async def flush_records(self) -> None:
        await self.history.flush()

    async def admin_user_id(self) -> int | None:
        """The administrator user, whose requests the personal views of the desktop show."""
        return await self.history.admin_user_id()

    async def request_page(self, query: HistoryQuery, *, owner: int | None) -> dict[str, Any]:
        return await self.request_log.page(query, owner=owner)

    async def request_filters(self, *, owner: int | None) -> dict[str, Any]:
        return await self.request_log.filters(owner=owner)

    async def request_misses(
        self, *, owner: int | None, since: float | None = None, until: float | None = None
    ) -> dict[str, Any]:
        return await self.request_log.misses(owner=owner, since=since, until=until)

    # --- views ----------------------------------------------------------------------------------

    def account_view(self, account_id: int) -> dict[str, Any]:
        return account_view(
            self.pool,
            self.clock,
            self.usage_trail,
            self.credential_problems,
            account_id,
            self.refresher.floor_seconds,
        )

    def accounts_runtime(self) -> dict[str, Any]:
        return pool_view(
            self.pool,
            self.clock,
            self.usage_trail,
            self.credential_problems,
            self.refresher.floor_seconds,
        )

    # --- operator levers (R-ARCH-2) -------------------------------------------------------------

    async def set_limit(self, ref: str | int, limit: int) -> dict[str, Any]:
        return await self.levers.set_limit(ref, limit)

    async def resume(self, ref: str | int) -> dict[str, Any]:
        return await self.levers.resume(ref)

    async def disable(self, ref: str | int) -> dict[str, Any]:
        return await self.levers.set_enabled(ref, False)

    async def enable(self, ref: str | int) -> dict[str, Any]:
        return await self.levers.set_enabled(ref, True)

    async def verify(self, ref: str | int) -> dict[str, Any]:
        return await self.levers.verify(ref)

    async def pause(self, ref: str | int, paused: bool = True) -> dict[str, Any]:
        return await self.levers.pause(ref, paused)

    async def unpause(self, ref: str | int) -> dict[str, Any]:
        return await self.pause(ref, False)

    async def clear_cooldown(self, ref: str | int) -> dict[str, Any]:
        """The seed's "resume": the tray and the CLI name it clear-cooldown."""
        return await self.resume(ref)

    async def switch(self, ref: str | int) -> dict[str, Any]:
        return await self.levers.switch(ref)

    async def reset_usage(self) -> None:
        await self.levers.reset_usage()

    async def update_settings(self, changes: dict[str, Any]) -> dict[str, Any]:
        return await self.levers.update_settings(changes)
