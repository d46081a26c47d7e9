"""R-UI-14 in the service, whoever brings the account in: adding, importing, enabling or signing
in an account reads its quota at once, for Claude, Codex and Antigravity accounts alike — through
the management API, through the CLI writing the database while a server runs (taken up by the
CLI's own call, or by the credential watch with no traffic at all), and at a server start for an
account the CLI added while none ran. The reads keep the usage endpoint's retry-after and the
poll floor a previous run left. The desktop app's side is tests/gui/test_fresh_gauges.py."""

from __future__ import annotations

import asyncio
import socket
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest

from sublane_desktop.accounts import keyring_watch
from sublane_desktop.core.clock import FakeClock
from sublane_desktop.service import Service
from sublane_desktop.service.offline import OfflineService
from tests.browser_follow import follow
from tests.conftest import Harness, fake_env, started_harness
from tests.offline_cli import offline_cli
from tests.provider_logins import PROVIDERS, ProviderLogin


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


class Pool(ProviderLogin):
    """One provider's side of a test: its fake, its account secrets, what its reads show."""

    def __init__(self, h: Harness, provider: str) -> None:
        super().__init__(provider, h.upstream, h.codex, h.google)
        self.h = h

    async def add_known(self, name: str) -> int:
        """An account the test begins with (the harness takes it up without a read)."""
        if self.provider == "codex":
            return await self.h.add_codex_account(name)
        if self.provider == "antigravity":
            return await self.h.add_antigravity_account(name)
        return await self.h.add_account(name)

    def answer(self, name: str, used: float) -> tuple[str, float]:
        """Script the usage read of `name` to say `used` (0..1) of its first window: returns
        that window's gauge name and the utilization it must show."""
        now = self.h.service.clock.now()
        token = self.token(name)
        if self.provider == "codex":
            self.h.codex.usage_for[token] = {
                "plan_type": "pro",
                "rate_limit": {
                    "allowed": True,
                    "limit_reached": False,
                    "primary_window": {
                        "used_percent": used * 100,
                        "limit_window_seconds": 18000,
                        "reset_after_seconds": 9000,
                    },
                    "secondary_window": {
                        "used_percent": 3,
                        "limit_window_seconds": 604800,
                        "reset_after_seconds": 500000,
                    },
                },
            }
            return "five_hour", used
        if self.provider == "antigravity":
            self.h.google.quota = {
                "gemini-3.1-pro-high": {
                    "displayName": "Gemini 3.1 Pro",
                    "quotaInfo": {"remainingFraction": 1 - used, "resetTime": iso(now + 3600)},
                }
            }
            return "gemini_pro", used
        self.h.upstream.usage_for[token] = {
            "five_hour": {"utilization": used * 100, "resets_at": iso(now + 3600)},
            "seven_day": {"utilization": 10.0, "resets_at": iso(now + 3 * 86400)},
        }
        return "five_hour", used

    def refuse_reads(self) -> None:
        """The usage endpoint answers 429 with its own retry-after."""
        self.h.upstream.usage_for["*"] = 429
        self.h.codex.usage_for["*"] = 429
        self.h.google.quota_status = 429


@pytest.fixture(params=PROVIDERS)
async def pool(request, tmp_path, upstream, codex_upstream, antigravity_upstream, secret_store):
    async with started_harness(
        tmp_path, secret_store, upstream, codex=codex_upstream, google=antigravity_upstream
    ) as h:
        h.api = aiohttp.ClientSession(headers={"Authorization": f"Bearer {h.service.admin_token}"})
        try:
            yield Pool(h, request.param)
        finally:
            await h.api.close()


async def api(h: Harness, method: str, path: str, body: Any = None) -> Any:
    async with h.api.request(method, h.url + path, json=body) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.json()


async def reads_done(service: Service) -> None:
    """Every quota read started so far has landed (they run in the background)."""
    while service.refresher._running:
        await asyncio.gather(*service.refresher._running.values(), return_exceptions=True)


async def gauge(h: Harness, name: str, window: str) -> dict[str, Any]:
    runtime = await api(h, "GET", "/api/accounts/runtime")
    [account] = [a for a in runtime["accounts"] if a["name"] == name]
    return account["gauges"][window]


async def cli_adds(
    h: Harness, pool: Pool, name: str, login: str | None = None, replace: bool = False
) -> None:
    """`sublane account add [--replace]` while the server runs: another connection commits the
    account (with the secret of `login`, the name's own by default)."""
    secret = pool.secret(login or name)
    with offline_cli(h.service) as offline:
        await asyncio.to_thread(
            offline.add_account, pool.provider, name, "default", None, 2, secret, replace=replace
        )


# --- the management API -------------------------------------------------------------------------


async def test_enabling_through_the_api_reads_the_quota_at_once(pool: Pool) -> None:
    h = pool.h
    account_id = await pool.add_known("work")
    await api(h, "POST", f"/api/accounts/{account_id}/disable", {})
    window, used = pool.answer("work", 0.37)
    assert pool.reads() == []
    await api(h, "POST", f"/api/accounts/{account_id}/enable", {})
    await reads_done(h.service)
    assert pool.reads() == [pool.token("work")]  # no request went through it
    shown = await gauge(h, "work", window)
    assert not shown["cold"] and shown["utilization"] == pytest.approx(used)


# --- the CLI writing the database while a server runs ---------------------------------------


async def test_an_account_the_cli_adds_is_read_when_the_server_takes_it_up(pool: Pool) -> None:
    """The CLI stores the account, then asks the running server for its account list (its
    `tell_server`), which re-reads the catalog: the read starts there, with no traffic."""
    h = pool.h
    window, used = pool.answer("new", 0.42)
    await cli_adds(h, pool, "new")
    assert pool.reads() == []
    await api(h, "GET", "/api/accounts/runtime")
    await reads_done(h.service)
    assert pool.reads() == [pool.token("new")]
    shown = await gauge(h, "new", window)
    assert not shown["cold"] and shown["utilization"] == pytest.approx(used)
    await api(h, "GET", "/api/accounts/runtime")  # taken up once: no second read
    await reads_done(h.service)
    assert pool.reads() == [pool.token("new")]


async def test_the_credential_watch_takes_up_a_cli_account_with_no_traffic(
    pool: Pool, monkeypatch
) -> None:
    """No request and no management call: the server's own look (every few seconds; shortened
    here) takes the account up and reads it."""
    h = pool.h
    window, used = pool.answer("quiet", 0.25)
    filled = asyncio.Event()
    h.service.bus.subscribe("accounts.gauges", lambda topic, payload: filled.set())
    monkeypatch.setattr(keyring_watch, "LOOK_EVERY_S", 0.01)
    watch = asyncio.create_task(h.service.credentials.watch())
    try:
        await cli_adds(h, pool, "quiet")
        await asyncio.wait_for(filled.wait(), 20)
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
    assert pool.reads() == [pool.token("quiet")]
    shown = await gauge(h, "quiet", window)
    assert shown["utilization"] == pytest.approx(used)


async def test_the_cli_enabling_an_account_while_serving_reads_it(pool: Pool) -> None:
    """`sublane account enable` goes through the API when a server runs; a database write
    by another process (an older CLI, a second data-dir user) is taken up the same way."""
    h = pool.h
    await pool.add_known("work")
    with offline_cli(h.service) as offline:
        await asyncio.to_thread(offline.set_enabled, "work", False)
    await api(h, "GET", "/api/accounts/runtime")  # taken up: disabled
    assert h.service.pool.find("work").enabled is False
    window, used = pool.answer("work", 0.5)
    with offline_cli(h.service) as offline:
        await asyncio.to_thread(offline.set_enabled, "work", True)
    await api(h, "GET", "/api/accounts/runtime")
    await reads_done(h.service)
    assert pool.reads() == [pool.token("work")]
    assert (await gauge(h, "work", window))["utilization"] == pytest.approx(used)


async def test_a_login_the_cli_writes_again_is_read_at_once(pool: Pool) -> None:
    """`sublane account add --replace` (or `account login NAME` storing its tokens) while the
    server runs: a new revision, its gauges void, and read again at once with the new login."""
    h = pool.h
    await pool.add_known("work")
    window, used = pool.answer("relogin", 0.61)  # the new login's reading
    await cli_adds(h, pool, "work", login="relogin", replace=True)
    await api(h, "GET", "/api/accounts/runtime")
    await reads_done(h.service)
    assert pool.reads() == [pool.token("relogin")]
    assert (await gauge(h, "work", window))["utilization"] == pytest.approx(used)


# --- the endpoint's retry-after and the poll floor ------------------------------------------


async def test_an_arrival_keeps_the_usage_endpoints_retry_after(pool: Pool) -> None:
    h = pool.h
    pool.refuse_reads()
    await cli_adds(h, pool, "work")
    await api(h, "GET", "/api/accounts/runtime")
    await reads_done(h.service)
    assert pool.reads() == [pool.token("work")]  # refused, with a retry-after
    account_id = h.service.pool.find("work").id
    await api(h, "POST", f"/api/accounts/{account_id}/disable", {})
    await api(h, "POST", f"/api/accounts/{account_id}/enable", {})
    await reads_done(h.service)
    assert pool.reads() == [pool.token("work")]  # enabled again, but the endpoint said wait


# --- back from a pause ----------------------------------------------------------------------------


@pytest.fixture(params=PROVIDERS)
async def clocked(request, tmp_path, upstream, codex_upstream, antigravity_upstream, secret_store):
    """The management API on a fake clock, so a pause can last half an hour."""
    async with started_harness(
        tmp_path,
        secret_store,
        upstream,
        codex=codex_upstream,
        google=antigravity_upstream,
        clock=FakeClock(),
    ) as h:
        h.api = aiohttp.ClientSession(headers={"Authorization": f"Bearer {h.service.admin_token}"})
        try:
            yield Pool(h, request.param)
        finally:
            await h.api.close()


async def test_unpausing_reads_gauges_that_aged_while_paused_but_not_inside_the_floor(
    clocked: Pool,
) -> None:
    """A paused account is not polled and no traffic reaches it, so its bars age. Unpausing
    reads them at once when they are stale (the tray showed them stale until traffic came),
    within the poll floor: a short pause shows the reading it had and sends nothing."""
    pool, h = clocked, clocked.h
    await pool.add_known("work")
    window, _ = pool.answer("work", 0.2)
    assert h.service.refresh_quotas() == 1  # a person's Refresh: the reading it starts with
    await reads_done(h.service)
    assert pool.reads() == [pool.token("work")]

    await api(h, "POST", "/llmux/pause-account", {"account": "work", "paused": True})
    h.service.clock.advance(30 * 60)
    assert (await gauge(h, "work", window))["stale"]
    window, used = pool.answer("work", 0.45)
    await api(h, "POST", "/llmux/pause-account", {"account": "work", "paused": False})
    await reads_done(h.service)
    assert pool.reads() == [pool.token("work")] * 2  # no request went through it
    shown = await gauge(h, "work", window)
    assert not shown["stale"] and shown["utilization"] == pytest.approx(used)

    h.service.clock.advance(60)  # paused and back inside the floor of that read: nothing sent
    await api(h, "POST", "/llmux/pause-account", {"account": "work", "paused": True})
    await api(h, "POST", "/llmux/pause-account", {"account": "work", "paused": False})
    await reads_done(h.service)
    assert pool.reads() == [pool.token("work")] * 2


async def test_an_account_signed_in_while_paused_is_read_when_it_is_unpaused(
    clocked: Pool,
) -> None:
    """A login the CLI stores again for a paused account is an arrival nothing may read yet
    (paused accounts are not read); unpausing it reads the new login at once."""
    pool, h = clocked, clocked.h
    await pool.add_known("work")
    await api(h, "POST", "/llmux/pause-account", {"account": "work", "paused": True})
    window, used = pool.answer("relogin", 0.61)
    await cli_adds(h, pool, "work", login="relogin", replace=True)
    await api(h, "GET", "/api/accounts/runtime")  # taken up: a new revision, still paused
    await reads_done(h.service)
    assert pool.reads() == []
    await api(h, "POST", "/llmux/pause-account", {"account": "work", "paused": False})
    await reads_done(h.service)
    assert pool.reads() == [pool.token("relogin")]
    assert (await gauge(h, "work", window))["utilization"] == pytest.approx(used)


# --- a server start -----------------------------------------------------------------------------


class Restarts:
    """Services started one after another on one data dir (never two at once), and the CLI
    writing it while none runs."""

    def __init__(self, provider, tmp_path, upstream, codex, google, secret_store) -> None:
        self.clock = FakeClock()
        self.data_dir = tmp_path / "data"
        self.env = fake_env(upstream, codex, google)
        self.secret_store = secret_store
        self.upstream, self.codex, self.google = upstream, codex, google
        self.provider = provider

    def service(self) -> Service:
        return Service(
            self.data_dir, port=0, clock=self.clock, secret_store=self.secret_store, env=self.env
        )

    def pool(self, service: Service) -> Pool:
        h = Harness(service, self.upstream)
        h.codex, h.google = self.codex, self.google
        return Pool(h, self.provider)

    def cli_adds(self, pool: Pool, name: str, login: str | None = None) -> None:
        """`sublane account add NAME` (with `login`: `--replace` storing that login's tokens,
        as `account login NAME` does) while no server runs."""
        offline = OfflineService(self.data_dir)
        offline._secrets = self.secret_store  # the keyring the CLI's environment names
        try:
            offline.add_account(
                self.provider,
                name,
                "default",
                None,
                2,
                pool.secret(login or name),
                replace=login is not None,
            )
        finally:
            offline.close()

    def cli_re_enables(self, name: str) -> None:
        """`sublane account disable NAME` then `enable NAME` while no server runs."""
        offline = OfflineService(self.data_dir)
        try:
            offline.set_enabled(name, False)
            offline.set_enabled(name, True)
        finally:
            offline.close()

    async def start_reads(self, pool: Pool) -> list[str]:
        """A server started and stopped: the tokens its start read."""
        pool.forget_reads()
        service = self.service()
        pool.h.service = service
        await service.start()
        try:
            await reads_done(service)
            return pool.reads()
        finally:
            await service.stop()


@pytest.fixture(params=PROVIDERS)
async def restarts(request, tmp_path, upstream, codex_upstream, antigravity_upstream, secret_store):
    runs = Restarts(
        request.param, tmp_path, upstream, codex_upstream, antigravity_upstream, secret_store
    )
    first = runs.service()
    await first.start()  # makes the data dir, the database and the administrator
    await first.stop()
    return runs


async def a_start_reads(restarts: Restarts, pool: Pool, used: float | None) -> None:
    """Start a server on the data dir and stop it once its start reads are done: `used` is
    what "work" must then show (read at start), None when the start must read nothing."""
    window, answer = pool.answer("work", used or 0.0)
    service = restarts.service()
    await service.start()
    try:
        await reads_done(service)
        if used is None:
            assert pool.reads() == []
            return
        assert pool.reads() == [pool.token("work")]
        view = service.account_view(service.pool.find("work").id)
        assert view["gauges"][window]["utilization"] == pytest.approx(answer)
    finally:
        await service.stop()
        pool.forget_reads()


async def test_a_server_start_reads_an_account_the_cli_added_or_whose_bars_aged_meanwhile(
    restarts: Restarts,
) -> None:
    pool = restarts.pool(restarts.service())
    restarts.cli_adds(pool, "work")  # `sublane account add` with no server running
    await a_start_reads(restarts, pool, 0.3)
    await a_start_reads(restarts, pool, None)  # its stored reading is fresh, the floor holds
    restarts.clock.advance(12 * 3600)  # the next morning: the stored reading has aged
    await a_start_reads(restarts, pool, 0.05)


# How long each fake's usage endpoint says to wait when it refuses (its retry-after)
REFUSED_FOR_S = {"anthropic": 3600, "codex": 600, "antigravity": 30}


async def test_a_restart_keeps_the_poll_floor_and_retry_after_of_a_refused_start_read(
    restarts: Restarts,
) -> None:
    """A server restarted in a loop does not ask a usage endpoint again and again: the start's
    read keeps the floor (5 min) and the endpoint's own retry-after a previous run left."""
    service = restarts.service()
    pool = restarts.pool(service)
    pool.refuse_reads()
    restarts.cli_adds(pool, "work")
    await service.start()
    try:
        await reads_done(service)
        assert pool.reads() == [pool.token("work")]  # refused: the gauges stay cold
    finally:
        await service.stop()

    async def restart_reads() -> int:
        again = restarts.service()
        await again.start()
        try:
            await reads_done(again)
        finally:
            await again.stop()
        return len(pool.reads()) - 1

    restarts.clock.advance(60)  # inside the floor
    assert await restart_reads() == 0
    restarts.clock.advance(400 - 60)  # past the floor: only the endpoint's retry-after holds
    waited_out = REFUSED_FOR_S[restarts.provider] <= 400
    assert await restart_reads() == (1 if waited_out else 0)


async def test_a_start_reads_an_account_signed_in_again_or_re_enabled_inside_the_floor(
    restarts: Restarts,
) -> None:
    """The poll floor a previous run left belongs to the revision it was taken under (R-OBS-2):
    a login the CLI stored again, or an account it disabled and enabled, while no server ran,
    is a new revision with void gauges, read at the next start even within 5 minutes of the
    last read (a revision taken up while serving is read at once the same way)."""
    pool = restarts.pool(restarts.service())
    pool.answer("work", 0.3)
    restarts.cli_adds(pool, "work")
    assert await restarts.start_reads(pool) == [pool.token("work")]

    restarts.clock.advance(60)  # inside the floor of that read
    window, used = pool.answer("relogin", 0.61)
    restarts.cli_adds(pool, "work", login="relogin")  # signed in again with the CLI
    assert await restarts.start_reads(pool) == [pool.token("relogin")]

    restarts.clock.advance(60)
    restarts.cli_re_enables("work")
    service = restarts.service()
    pool.h.service = service
    pool.forget_reads()
    await service.start()
    try:
        await reads_done(service)
        assert pool.reads() == [pool.token("relogin")]
        view = service.account_view(service.pool.find("work").id)
        assert view["gauges"][window]["utilization"] == pytest.approx(used)
    finally:
        await service.stop()

    restarts.clock.advance(60)  # nothing changed since: the floor of that read holds
    assert await restarts.start_reads(pool) == []


async def test_a_new_revision_at_start_still_keeps_the_endpoints_retry_after(
    restarts: Restarts,
) -> None:
    """The revision voids the floor only: what the usage endpoint asked for stays its own."""
    pool = restarts.pool(restarts.service())
    pool.refuse_reads()
    restarts.cli_adds(pool, "work")
    assert await restarts.start_reads(pool) == [pool.token("work")]  # refused, retry-after
    restarts.clock.advance(10)  # inside every fake's retry-after (30 s at the least)
    restarts.cli_re_enables("work")
    assert await restarts.start_reads(pool) == []


# --- a browser sign-in --------------------------------------------------------------------------


async def test_a_sign_in_waits_for_its_arrivals_read_and_keeps_the_retry_after(
    tmp_path, upstream, codex_upstream, antigravity_upstream, secret_store
) -> None:
    """Signing in waits for the account's first read and says how it went (R-LOGIN-1); that
    read is the arrival's, so signing in again while the usage endpoint says wait sends none
    (a sign-in used to read past the endpoint's retry-after, outside the global cap)."""
    async with started_harness(
        tmp_path, secret_store, upstream, codex=codex_upstream, google=antigravity_upstream
    ) as h:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        codex_upstream.redirect_ports = {port}
        h.service.env.update(
            {"SUBLANE_CODEX_AUTH_BASE_URL": codex_upstream.url, "SUBLANE_LOGIN_PORT": str(port)}
        )
        codex_upstream.usage_for["*"] = 429  # with a retry-after of 10 minutes
        settled = await h.service.sign_in("codex", browser=follow)
        assert settled["verdict"]["result"] == "ok"
        assert settled["quota"].startswith("not read yet")
        assert len(codex_upstream.usage_reads) == 1
        again = await h.service.sign_in("", account=settled["account"]["id"], browser=follow)
        assert again["verdict"]["result"] == "ok"
        assert again["quota"] == (
            "not read yet (the usage endpoint asked to wait; the next poll reads it)"
        )
        assert len(codex_upstream.usage_reads) == 1  # the endpoint said wait: nothing sent
