"""Shared fixtures: a fake upstream server, a started SubLane service, real keyring backends."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from keyrings.alt.file import PlaintextKeyring

from sublane_desktop.accounts.secrets import SecretStore, account_secret
from sublane_desktop.core import routing, timeouts
from sublane_desktop.core.clock import FakeClock
from sublane_desktop.providers import anthropic as anthropic_provider
from sublane_desktop.proxy import relay
from sublane_desktop.service import Service
from sublane_desktop.store import repositories as repo
from tests.fake_antigravity import FakeAntigravity
from tests.fake_codex import FakeCodex
from tests.fake_upstream import FakeAnthropic

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_API", "pyside6")


@pytest.fixture(autouse=True)
def _rules_uncached() -> None:
    """The request path caches a few pure rules per input: the route per model name, the
    checked timeouts per setting value and the pass-back verdict per upstream header name.
    Every test starts with them empty, so it runs the
    rule itself and not an answer computed earlier, when test modules were imported (the
    mutation run's workers are forked after that import and would inherit the answers of
    the unmutated code)."""
    routing._route.cache_clear()
    timeouts._checked.cache_clear()
    for verdicts in relay._VERDICTS.values():
        verdicts.clear()
    anthropic_provider._NAME_VERDICTS.clear()  # the relayed-header verdict per client header name
    anthropic_provider._OFFERS.clear()  # the Accept-Encoding sent per client offer


def file_keyring(path: Path) -> PlaintextKeyring:
    backend = PlaintextKeyring()
    backend.file_path = str(path)  # a real backend, pointed at the test's temp dir
    return backend


@pytest.fixture
def secret_store(tmp_path: Path) -> SecretStore:
    return SecretStore(tmp_path, backend=file_keyring(tmp_path / "keyring.cfg"))


@pytest.fixture
async def upstream():
    fake = FakeAnthropic()
    await fake.start()
    yield fake
    await fake.stop()


class Harness:
    """A started service plus shortcuts to give it accounts and client keys."""

    def __init__(self, service: Service, upstream: FakeAnthropic) -> None:
        self.service = service
        self.upstream = upstream
        # A test that breaks the store on purpose says so; every other one loses no record.
        self.records_may_drop = False

    @property
    def url(self) -> str:
        return self.service.endpoint_url

    async def _take_up(self) -> None:
        """The service takes up the accounts the shortcuts above wrote. They stand for accounts
        a test begins with, so they are taken up as already known: no read at once, which the
        tests of R-UI-14 make through the real ways in (tests/test_fresh_gauges.py); the rest
        count the reads that traffic and people start, and expect cold gauges until then."""
        quota = self.service.quota
        quota.read_new = lambda account_ids: None  # shadows the method for this re-read only
        try:
            await self.service._reload_catalog(force=True)
        finally:
            del quota.read_new

    async def add_account(
        self,
        name: str,
        token: str | None = None,
        *,
        limit: int = 2,
        provider: str = "anthropic",
        group: str = "default",
        api_key: bool = False,
    ) -> int:
        token = token or f"sk-ant-oat01-{name}"

        def write() -> int:
            g = repo.get_or_create_group(group)
            account = repo.add_account(
                provider, name, "api_key" if api_key else "oauth", g, max_concurrency=limit
            )
            return account.id

        account_id = await self.service.store.write(write)
        secret = (
            {"api_key": token}
            if api_key
            else {"access_token": token, "refresh_token": "rt-" + name, "expires_at": 4_000_000_000}
        )
        await self.service.secrets.aset(account_secret(account_id), json.dumps(secret))
        await self._take_up()
        return account_id

    async def add_codex_account(
        self,
        name: str,
        token: str | None = None,
        *,
        limit: int = 2,
        group: str = "default",
        api_key: bool = False,
        base_url: str | None = None,
    ) -> int:
        """A ChatGPT-subscription account (token + ChatGPT account id), or an OpenAI API key."""
        token = token or f"codex-at-{name}"

        def write() -> int:
            g = repo.get_or_create_group(group)
            account = repo.add_account(
                "codex",
                name,
                "api_key" if api_key else "oauth",
                g,
                base_url=base_url,
                max_concurrency=limit,
            )
            return account.id

        account_id = await self.service.store.write(write)
        secret = (
            {"api_key": token}
            if api_key
            else {
                "access_token": token,
                "refresh_token": "rt-" + name,
                "expires_at": 4_000_000_000,
                "account_id": f"acct-{name}",
            }
        )
        await self.service.secrets.aset(account_secret(account_id), json.dumps(secret))
        await self._take_up()
        return account_id

    async def add_antigravity_account(
        self,
        name: str,
        token: str | None = None,
        *,
        limit: int = 2,
        group: str = "default",
        project: str | None = "proj-fake-1",
        expires_at: float = 4_000_000_000,
        base_url: str | None = None,
    ) -> int:
        """A Google login (access + refresh token, project id unless `project` is None)."""
        token = token or f"ya29.{name}"

        def write() -> int:
            g = repo.get_or_create_group(group)
            return repo.add_account(
                "antigravity", name, "oauth", g, base_url=base_url, max_concurrency=limit
            ).id

        account_id = await self.service.store.write(write)
        secret = {"access_token": token, "refresh_token": "1//rt-" + name, "expires_at": expires_at}
        if project:
            secret["project_id"] = project
        await self.service.secrets.aset(account_secret(account_id), json.dumps(secret))
        await self._take_up()
        return account_id

    async def create_key(
        self, name: str = "test", *, user: str | None = None, group: str = "default"
    ) -> str:
        def write() -> str:
            u = repo.add_user(user) if user else repo.ensure_admin()
            g = repo.get_or_create_group(group)
            return repo.create_key(name, u, g)[1]

        return await self.service.store.write(write)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def fake_env(
    upstream: FakeAnthropic,
    codex: FakeCodex | None = None,
    google: FakeAntigravity | None = None,
) -> dict[str, str]:
    """Every upstream base URL the service reads, pointed at the fakes the test runs."""
    env = {"SUBLANE_ANTHROPIC_BASE_URL": upstream.url, "SUBLANE_OAUTH_BASE_URL": upstream.url}
    if codex is not None:
        env["SUBLANE_CODEX_BASE_URL"] = env["SUBLANE_OPENAI_BASE_URL"] = codex.url
    if google is not None:
        env["SUBLANE_ANTIGRAVITY_BASE_URL"] = env["SUBLANE_GOOGLE_OAUTH_BASE_URL"] = google.url
    return env


@contextlib.asynccontextmanager
async def started_harness(
    tmp_path: Path,
    secret_store: SecretStore,
    upstream: FakeAnthropic,
    *,
    codex: FakeCodex | None = None,
    google: FakeAntigravity | None = None,
    clock: FakeClock | None = None,
) -> AsyncIterator[Harness]:
    """A started service on the fakes (and a fake clock, when given); stopped afterwards.

    A test that ends without an error must also have lost no request record (R-FT-2): the
    stop writes every record still queued, and any the store could not keep fail the test.
    """
    service = Service(
        tmp_path / "data",
        port=0,
        clock=clock,
        secret_store=secret_store,
        env=fake_env(upstream, codex, google),
    )
    await service.start()
    h = Harness(service, upstream)
    if codex is not None:
        h.codex = codex
    if google is not None:
        h.google = google
    if clock is not None:
        h.clock = clock
    try:
        yield h
    finally:
        await service.stop(drain_timeout=2)
    # Reached only when the test body passed, so a real failure is never masked by this one.
    dropped = service.request_log.dropped
    assert h.records_may_drop or dropped == 0, (
        f"{dropped} request records were dropped instead of saved"
    )


@pytest.fixture
async def harness(tmp_path: Path, upstream: FakeAnthropic, secret_store: SecretStore):
    async with started_harness(tmp_path, secret_store, upstream) as h:
        yield h


@pytest.fixture
async def codex_upstream():
    fake = FakeCodex()
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def codex_harness(
    tmp_path: Path, upstream: FakeAnthropic, codex_upstream: FakeCodex, secret_store: SecretStore
):
    """A started service whose Anthropic, Codex and OpenAI base URLs are the fakes."""
    async with started_harness(tmp_path, secret_store, upstream, codex=codex_upstream) as h:
        yield h


@pytest.fixture
async def clocked_codex_harness(
    tmp_path: Path, upstream: FakeAnthropic, codex_upstream: FakeCodex, secret_store: SecretStore
):
    """The same on a fake clock (`h.clock`), for rules that turn on time."""
    async with started_harness(
        tmp_path, secret_store, upstream, codex=codex_upstream, clock=FakeClock()
    ) as h:
        yield h


@pytest.fixture
async def antigravity_upstream():
    fake = FakeAntigravity()
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def antigravity_harness(
    tmp_path: Path,
    upstream: FakeAnthropic,
    antigravity_upstream: FakeAntigravity,
    secret_store: SecretStore,
):
    """A started service whose Antigravity and Google OAuth base URLs are the fake."""
    async with started_harness(tmp_path, secret_store, upstream, google=antigravity_upstream) as h:
        h.clients = []  # SDK clients the test opened: closed here, not by a late collector
        yield h
        for client in h.clients:
            await client.close()


@pytest.fixture(scope="session")
def qapp_cls():
    """pytest-qt's application is the desktop's own class, as `sublane` makes it."""
    from sublane_desktop.gui.main import DesktopApplication

    return DesktopApplication
