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
from pathlib import Path
from typing import Any

import aiohttp

from sublane_desktop.core.clock import Clock, SystemClock
from sublane_desktop.core.events import EventBus
from sublane_desktop.core.gauges import GaugeSet
from sublane_desktop.core.pool import AccountState, Pool
from sublane_desktop.core.records import RequestRecord
from sublane_desktop.core.tasks import spawn
from sublane_desktop.secrets import KeyringUnavailable, SecretStore, account_secret
from sublane_desktop.store import repositories as repo
from sublane_desktop.store.connection import Store

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
DEFAULT_MAX_BODY = 32 * 1024 * 1024
ADMIN_TOKEN = "admin-token"
BASE_URL_ENV = {
    "anthropic": "SUBLANE_ANTHROPIC_BASE_URL",
    "codex": "SUBLANE_CODEX_BASE_URL",
    "antigravity": "SUBLANE_ANTIGRAVITY_BASE_URL",
    "oauth": "SUBLANE_OAUTH_BASE_URL",
}
DEFAULT_BASE_URLS = {
    "anthropic": "https://api.anthropic.com",
    "codex": "https://chatgpt.com/backend-api/codex",
    "antigravity": "https://cloudcode-pa.googleapis.com",
    "oauth": "https://platform.claude.com",
}
STATUS_FILE = "server.json"


def ensure_admin_token(secret_store: SecretStore) -> str:
    token = secret_store.get(ADMIN_TOKEN)
    if not token:
        token = "sla-" + pysecrets.token_urlsafe(32)
        secret_store.set(ADMIN_TOKEN, token)
    return token


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


class Service:
    def __init__(
        self,
        data_dir: Path,
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
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
        self.store: Store | None = None
        self.pool = Pool(self.clock, persistence=_StorePersistence(self), on_change=self._changed)
        self.gauges: dict[int, GaugeSet] = {}
        self.admin_token: str | None = None
        self.http: aiohttp.ClientSession | None = None
        self.records: list[RequestRecord] = []
        self._credentials: dict[int, tuple[int, dict[str, Any]]] = {}
        self._data_version: int | None = None
        self._server = None
        self._idle = asyncio.Event()
        self._idle.set()

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        from sublane_desktop.proxy.server import ProxyServer, build_app

        loop = asyncio.get_running_loop()
        self.store = await loop.run_in_executor(None, Store, self.data_dir / "sublane.db")
        await self.store.write(repo.ensure_admin)
        try:
            if self._secrets is None:
                self._secrets = await loop.run_in_executor(None, SecretStore, self.data_dir)
            self.admin_token = await loop.run_in_executor(None, ensure_admin_token, self._secrets)
        except KeyringUnavailable as exc:
            # Serve anyway: the user sees why accounts and the management API are unavailable.
            self.keyring_problem = str(exc)
            log.warning("%s", exc)
        settings = await self.store.read(repo.all_settings)
        self.pool.cap = int(settings.get("pool.cap", self.pool.cap))
        await self._reload_catalog(force=True)
        self.pool.load_bindings(await self.store.read(repo.load_bindings))
        self.http = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, connect=15, sock_read=600),
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
            skip_auto_headers=("User-Agent",),
        )
        max_body = int(settings.get("proxy.max_body_bytes", DEFAULT_MAX_BODY))
        self._server = ProxyServer(build_app(self, max_body=max_body), self.host, self.port)
        self.port = await self._server.start()
        self._write_status()

    async def stop(self, drain_timeout: float = 10.0) -> None:
        """Let in-flight requests finish (bounded), then close everything (R-UI-5)."""
        if self._server is not None:
            try:
                await asyncio.wait_for(self._idle.wait(), drain_timeout)
            except asyncio.TimeoutError:
                log.warning("quit with %s requests still in flight", self.pool.in_flight)
            await self._server.stop()
            self._server = None
        if self.http is not None:
            await self.http.close()
            self.http = None
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
        def read() -> tuple[int, list[AccountState] | None]:
            version = self.store.db.execute_sql("PRAGMA data_version").fetchone()[0]
            if not force and version == self._data_version:
                return version, None
            return version, load_account_states()

        version, states = await self.store.read(read)
        if states is not None:
            self._data_version = version
            self.pool.sync_accounts(states)

    async def identify(self, key: str) -> repo.KeyIdentity | None:
        """Who a client key belongs to. Also notices accounts added by the CLI meanwhile."""

        def read() -> tuple[repo.KeyIdentity | None, int]:
            version = self.store.db.execute_sql("PRAGMA data_version").fetchone()[0]
            return repo.identify_key(key), version

        identity, version = await self.store.read(read)
        if version != self._data_version:
            await self._reload_catalog()
        return identity

    async def credential(self, account: AccountState) -> dict[str, Any]:
        cached = self._credentials.get(account.id)
        if cached is not None and cached[0] == account.revision:
            return cached[1]
        raw = await self.secrets.aget(account_secret(account.id))
        if not raw:
            raise LookupError("no credential stored")
        credential = json.loads(raw)
        self._credentials[account.id] = (account.revision, credential)
        return credential

    def base_url(self, provider: str) -> str:
        return self.env.get(BASE_URL_ENV[provider]) or DEFAULT_BASE_URLS[provider]

    # --- signals from traffic -------------------------------------------------------------------

    def observe_headers(self, account: AccountState, headers: Any) -> None:
        """Rate-limit headers on a response (gauges arrive with the quota work)."""

    def record(self, record: RequestRecord) -> None:
        self.records.append(record)
        del self.records[:-5000]
        self.bus.publish("records.added", request_id=record.request_id)

    # --- views ----------------------------------------------------------------------------------

    def account_view(self, account_id: int) -> dict[str, Any]:
        account = self.pool.accounts[account_id]
        now = self.clock.now()
        gauges = self.gauges.get(account_id) or GaugeSet()
        return {
            "id": account.id,
            "name": account.name,
            "provider": account.provider,
            "state": self.pool.state_of(account),
            "in_flight": account.in_flight,
            "max_concurrency": account.max_concurrency,
            "paused": account.paused,
            "pinned_until": None,
            "cooldown_until": account.cooldown_until if account.cooling(now) else None,
            "failure_streak": account.failure_streak,
            "current": self.pool.scheduler.is_current(account),
            "fable_current": False,
            "gauges": gauges.to_json(now),
        }

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
