"""R-LOGIN-4: a credential that vanishes from the keyring, or cannot be read, puts its account in
`auth_failed` with the reason at its next use or within a minute, whichever is first; verify says
"credential missing"; writing a credential again (account add --replace, an import of the same
login, signing in again) mends the account in place, without Remove.

The keyring is the real `keyring` library's file backend (keyrings.alt PlaintextKeyring) the
tests use; an entry is deleted with it, as a keyring manager or another program would, never
through SubLane. Time is a fake clock; nothing sleeps to wait for state.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import pytest
from keyring.backend import KeyringBackend
from keyring.errors import KeyringLocked
from keyrings.alt.file import PlaintextKeyring

from sublane_desktop.accounts import keyring_watch, problems
from sublane_desktop.accounts.secrets import SERVICE, SecretStore, account_secret
from sublane_desktop.core.clock import FakeClock
from sublane_desktop.service import Service
from tests.conftest import Harness, file_keyring, started_harness
from tests.fake_upstream import CLAUDE_CODE_HEADERS
from tests.offline_cli import offline_cli

P = "anthropic-ratelimit-unified-"
BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}
MISSING = "credential missing from the keyring — sign in again"
WORK_TOKEN = "sk-ant-oat01-work-7f3a"
NEW_TOKEN = "sk-ant-oat01-work-new-91c2"
SPARE_TOKEN = "sk-ant-oat01-spare-5d0e"
# What must never reach a person: tokens, the keyring's own names and classes, exception names.
LEAKS = (
    WORK_TOKEN,
    "rt-work",
    "keyring.cfg",
    "PlaintextKeyring",
    "LookupError",
    "KeyError",
    "PasswordDeleteError",
    "Traceback",
)


def login(token: str, refresh: str) -> dict[str, Any]:
    return {"access_token": token, "refresh_token": refresh, "expires_at": 4_000_000_000}


def keyring_file(tmp_path: Path) -> PlaintextKeyring:
    """The keyring file the tests' SecretStore uses, opened by the keyring library itself."""
    return file_keyring(tmp_path / "keyring.cfg")


def delete_entry(tmp_path: Path, account_id: int) -> None:
    keyring_file(tmp_path).delete_password(SERVICE, account_secret(account_id))


def sdk(h: Harness, key: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, timeout=30, default_headers=CLAUDE_CODE_HEADERS
    )


def no_leak(text: str) -> None:
    for secret in LEAKS:
        assert secret not in text, f"{secret!r} leaked into {text!r}"


async def changed(service: Service, predicate: Callable[[], bool], seconds: float = 10) -> None:
    """Wait for the service to announce a change after which `predicate` holds (no polling)."""
    if predicate():
        return
    event = asyncio.Event()

    def on_change(_topic: str, _payload: Any) -> None:
        if predicate():
            event.set()

    unsubscribe = service.bus.subscribe("*", on_change)
    try:
        await asyncio.wait_for(event.wait(), seconds)
    finally:
        unsubscribe()


@pytest.fixture
async def clocked(tmp_path, upstream, secret_store):
    async with started_harness(tmp_path, secret_store, upstream, clock=FakeClock()) as h:
        h.upstream.usage_for["*"] = 429  # keep quota polls out of these tests
        without_arrival_reads(h)
        yield h


def without_arrival_reads(h: Harness) -> None:
    """These tests time each read of a credential. The quota read an account's arrival starts
    (R-UI-14, tests/test_fresh_gauges.py) reads the credential too, in the background, at a
    moment set by timing: it is left out here."""
    h.service.quota.read_new = lambda account_ids: None


async def two_accounts(h: Harness) -> tuple[int, int]:
    """ "work" (the one that loses its credential) and "spare", both stored by the service."""
    work = (await h.service.add_account("anthropic", "work", login(WORK_TOKEN, "rt-work")))["id"]
    spare = (await h.service.add_account("anthropic", "spare", login(SPARE_TOKEN, "rt-spare")))[
        "id"
    ]
    return work, spare


async def admin_get(h: Harness, path: str) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            h.url + path, headers={"Authorization": f"Bearer {h.service.admin_token}"}
        ) as r,
    ):
        return r.status, await r.json()


def untouched(service: Service, account_id: int) -> dict[str, Any]:
    """What must not change on an account when another one's credential vanishes or mends."""
    account = service.pool.accounts[account_id]
    view = service.account_view(account_id)
    return {
        "revision": account.revision,
        "quota_epoch": account.quota_epoch,
        "state": view["state"],
        "auth_reason": view["auth_reason"],
        "gauges": view["gauges"],
        "failure_streak": account.failure_streak,
        "bindings": sorted(k for k, v in service.pool.bindings.items() if v == account_id),
    }


# --- at its next use --------------------------------------------------------------------------


async def test_a_request_through_an_account_whose_credential_vanished_names_it_and_the_fix(
    clocked, tmp_path
):
    h = clocked
    work, spare = await two_accounts(h)
    client = sdk(h, await h.create_key())
    h.upstream.headers_for[SPARE_TOKEN] = {P + "5h-utilization": "0.25"}
    await h.service.switch("spare")
    await client.messages.create(**BODY)  # spare's gauge and a binding-free pool
    await h.service.switch("work")
    await client.messages.create(**BODY)
    assert h.upstream.tokens_served() == [SPARE_TOKEN, WORK_TOKEN]
    await changed(h.service, lambda: not h.service.pool.accounts[spare].gauges.five_hour.cold)
    before = untouched(h.service, spare)

    delete_entry(tmp_path, work)  # behind SubLane's back, at once before the next use

    with pytest.raises(anthropic.APIStatusError) as refused:
        await client.messages.create(**BODY)
    message = refused.value.body["error"]["message"]
    assert message.startswith("account work: credential missing from the keyring; sign in again")
    assert "sublane account login work" in message and "--replace" in message
    no_leak(str(refused.value.body))
    assert len(h.upstream.tokens_served()) == 2  # the vanished credential was not used
    view = h.service.account_view(work)
    assert view["state"] == "auth_failed" and view["auth_reason"] == MISSING
    await h.service.flush_records()
    assert h.service.records[-1].error_code == "credential_unavailable"

    # The pool goes on with the others, which noticed nothing.
    assert untouched(h.service, spare) == before
    await client.messages.create(**BODY)
    assert h.upstream.tokens_served()[-1] == SPARE_TOKEN


async def test_an_unreadable_entry_is_the_accounts_own_problem(clocked, tmp_path):
    h = clocked
    work, _ = await two_accounts(h)
    await h.service.switch("work")
    client = sdk(h, await h.create_key())
    await client.messages.create(**BODY)
    keyring_file(tmp_path).set_password(SERVICE, account_secret(work), "{not json")
    with pytest.raises(anthropic.APIStatusError) as refused:
        await client.messages.create(**BODY)
    message = refused.value.body["error"]["message"]
    assert message.startswith("account work: the stored credential could not be read; sign in")
    assert "{not json" not in message
    view = h.service.account_view(work)
    assert view["auth_reason"] == "the stored credential could not be read — sign in again"
    assert h.service.pool.accounts[work].auth_failed  # gated until a credential is written


class LockableKeyring(PlaintextKeyring):
    """The real file backend, which can be locked the way a desktop keyring locks."""

    locked = False
    asked = 0  # reads while locked: each would prompt the person to unlock

    def get_password(self, service: str, username: str) -> str | None:
        if self.locked:
            self.asked += 1
            raise KeyringLocked("the collection is locked")
        return super().get_password(service, username)


async def test_a_keyring_that_cannot_be_read_says_so_in_words_and_recovers(
    tmp_path, upstream, clock
):
    backend = LockableKeyring()
    backend.file_path = str(tmp_path / "keyring.cfg")
    store = SecretStore(tmp_path, backend=backend)
    async with started_harness(tmp_path, store, upstream, clock=clock) as h:
        upstream.usage_for["*"] = 429
        work = (await h.service.add_account("anthropic", "work", login(WORK_TOKEN, "rt-work")))[
            "id"
        ]
        client = sdk(h, await h.create_key())
        await client.messages.create(**BODY)
        backend.locked = True
        clock.advance(keyring_watch.REREAD_IN_BACKGROUND_S)
        assert await h.service.credentials.sweep() == [work]
        view = h.service.account_view(work)
        assert view["state"] == "auth_failed"
        assert view["auth_reason"].startswith("the keyring could not be read: keyring is locked")
        assert view["auth_reason"].endswith("unlock it and retry")
        assert "KeyringLocked" not in view["auth_reason"]
        assert "collection is locked" not in view["auth_reason"]  # the backend's own text
        # a problem of the machine, not of the account: nothing is stored against it
        assert not h.service.pool.accounts[work].auth_failed
        assert backend.asked == 1
        # the background does not keep asking a locked keyring (each ask would prompt) ...
        clock.advance(keyring_watch.REREAD_IN_BACKGROUND_S)
        assert await h.service.credentials.sweep() == []
        # ... a use asks again, and says why it cannot go on
        with pytest.raises(anthropic.APIStatusError) as refused:
            await client.messages.create(**BODY)
        message = refused.value.body["error"]["message"]
        assert message.startswith("account work: the keyring could not be read: keyring is")
        assert "collection is locked" not in message and "KeyringLocked" not in message
        assert backend.asked == 2
        # ... but not at every use: the uses in between fail at once with the same words
        clock.advance(keyring_watch.RETRY_UNREADABLE_S - 1)
        with pytest.raises(anthropic.APIStatusError, match="keyring could not be read"):
            await client.messages.create(**BODY)
        assert backend.asked == 2
        assert h.upstream.tokens_served() == [WORK_TOKEN]

        backend.locked = False  # unlocked: a use after the pause reads it, no person needed
        clock.advance(1)
        await client.messages.create(**BODY)
        assert h.service.account_view(work)["state"] == "ok"
        assert h.upstream.tokens_served() == [WORK_TOKEN, WORK_TOKEN]


async def test_verify_asks_a_keyring_that_failed_at_once(tmp_path, upstream, clock):
    backend = LockableKeyring()
    backend.file_path = str(tmp_path / "keyring.cfg")
    store = SecretStore(tmp_path, backend=backend)
    async with started_harness(tmp_path, store, upstream, clock=clock) as h:
        work = (await h.service.add_account("anthropic", "work", login(WORK_TOKEN, "rt-work")))[
            "id"
        ]
        backend.locked = True
        verdict = await h.service.verify("work")
        assert verdict["result"] == "auth_failed"
        assert verdict["detail"].startswith("the keyring could not be read: keyring is locked")
        backend.locked = False  # the person unlocked it and asks again
        assert (await h.service.verify("work"))["result"] == "ok"
        assert h.service.account_view(work)["state"] == "ok"


async def test_a_quota_read_is_a_use_too_and_fails_in_words(clocked, tmp_path, caplog):
    h = clocked
    work, _ = await two_accounts(h)
    del h.upstream.usage_for["*"]
    delete_entry(tmp_path, work)
    reads = h.service.quota.refresher.want([h.service.pool.accounts[work]], force=True)
    assert await asyncio.gather(*reads) == [False]
    assert h.service.account_view(work)["auth_reason"] == MISSING
    assert h.upstream.usage_reads == []  # nothing was sent without a credential
    said = [r for r in caplog.records if "quota read for account" in r.getMessage()]
    assert [r.levelname for r in said] == ["WARNING"]
    assert "credential missing from the keyring" in said[0].getMessage()
    assert not [r for r in caplog.records if r.levelname == "ERROR"]  # not a fault of ours


class SlowKeyring(PlaintextKeyring):
    """The real file backend, whose reads can be held after they have looked (a slow keyring)."""

    hold: threading.Event | None = None
    looked = threading.Event()

    def get_password(self, service: str, username: str) -> str | None:
        value = super().get_password(service, username)
        hold = self.hold
        if hold is not None:
            self.looked.set()
            hold.wait(10)
        return value


async def test_a_use_never_trusts_a_read_that_began_before_it(tmp_path, upstream, clock):
    """A deletion made before a use is seen by that use, even while an earlier read that still
    saw the entry is under way (that read's answer is its own caller's, not the new use's)."""
    backend = SlowKeyring()
    backend.file_path = str(tmp_path / "keyring.cfg")
    store = SecretStore(tmp_path, backend=backend)
    async with started_harness(tmp_path, store, upstream, clock=clock) as h:
        without_arrival_reads(h)
        await h.service.add_account("anthropic", "work", login(WORK_TOKEN, "rt-work"))
        account = h.service.pool.find("work")
        backend.hold = held = threading.Event()
        first = asyncio.ensure_future(h.service.credential(account))
        assert await asyncio.to_thread(backend.looked.wait, 10)  # it saw the entry, and waits
        delete_entry(tmp_path, account.id)
        second = asyncio.ensure_future(h.service.credential(account))
        await asyncio.sleep(0)  # the second use arrives while the first read is under way
        backend.hold = None
        held.set()
        assert (await first)["access_token"] == WORK_TOKEN
        with pytest.raises(problems.CredentialUnavailable, match="credential missing"):
            await second
        assert h.service.account_view(account.id)["auth_reason"] == MISSING


class DesktopLikeKeyring(KeyringBackend):
    """A keyring that, like the OS keyrings (Secret Service, Keychain), cannot say cheaply whether
    it changed: the real file backend behind a backend class of its own, so no file stamp."""

    priority = 1

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.inner = file_keyring(path)

    def get_password(self, service: str, username: str) -> str | None:
        return self.inner.get_password(service, username)

    def set_password(self, service: str, username: str, password: str) -> None:
        self.inner.set_password(service, username, password)

    def delete_password(self, service: str, username: str) -> None:
        self.inner.delete_password(service, username)


async def test_on_a_keyring_that_cannot_say_it_changed_a_use_reads_again_after_a_second(
    tmp_path, upstream, clock
):
    store = SecretStore(tmp_path, backend=DesktopLikeKeyring(tmp_path / "keyring.cfg"))
    assert store.stamp() is None
    async with started_harness(tmp_path, store, upstream, clock=clock) as h:
        upstream.usage_for["*"] = 429
        work = (await h.service.add_account("anthropic", "work", login(WORK_TOKEN, "rt-work")))[
            "id"
        ]
        client = sdk(h, await h.create_key())
        await client.messages.create(**BODY)
        delete_entry(tmp_path, work)
        # within the second after a read, memory is trusted (the entry was there just now) ...
        clock.advance(keyring_watch.REREAD_ON_USE_S / 2)
        await client.messages.create(**BODY)
        assert h.upstream.tokens_served() == [WORK_TOKEN, WORK_TOKEN]
        # ... and verify asks the keyring itself, now
        verdict = await h.service.verify("work")
        assert (verdict["result"], verdict["detail"]) == ("auth_failed", MISSING)


async def test_on_such_a_keyring_the_next_use_after_a_second_sees_the_vanish(
    tmp_path, upstream, clock
):
    store = SecretStore(tmp_path, backend=DesktopLikeKeyring(tmp_path / "keyring.cfg"))
    async with started_harness(tmp_path, store, upstream, clock=clock) as h:
        upstream.usage_for["*"] = 429
        work = (await h.service.add_account("anthropic", "work", login(WORK_TOKEN, "rt-work")))[
            "id"
        ]
        client = sdk(h, await h.create_key())
        await client.messages.create(**BODY)
        delete_entry(tmp_path, work)
        clock.advance(keyring_watch.REREAD_ON_USE_S)
        with pytest.raises(anthropic.APIStatusError, match="credential missing from the keyring"):
            await client.messages.create(**BODY)
        assert h.upstream.tokens_served() == [WORK_TOKEN]
        assert h.service.account_view(work)["auth_reason"] == MISSING


async def test_a_disabled_account_is_left_at_rest(clocked, tmp_path):
    h = clocked
    work, spare = await two_accounts(h)
    await h.service.disable("work")
    delete_entry(tmp_path, work)
    assert await h.service.credentials.sweep() == [spare]
    assert h.service.account_view(work)["state"] == "disabled"


# --- within a minute, with no use -------------------------------------------------------------


async def test_an_idle_accounts_vanished_credential_shows_within_a_minute(
    tmp_path, upstream, clock
):
    """On a keyring that cannot say it changed (the OS keyrings), each entry is read again
    every 50 s of the fake clock: once per account, no more, and within the minute."""
    store = SecretStore(tmp_path, backend=DesktopLikeKeyring(tmp_path / "keyring.cfg"))
    async with started_harness(tmp_path, store, upstream, clock=clock) as h:
        upstream.usage_for["*"] = 429
        without_arrival_reads(h)
        work, spare = await two_accounts(h)
        assert sorted(await h.service.credentials.sweep()) == [work, spare]  # first look: both
        assert await h.service.credentials.sweep() == []  # read just now: nothing due
        before = untouched(h.service, spare)

        delete_entry(tmp_path, work)
        clock.advance(40)
        assert await h.service.credentials.sweep() == []  # one read per account per 50 s
        clock.advance(keyring_watch.REREAD_IN_BACKGROUND_S - 40)
        assert sorted(await h.service.credentials.sweep()) == [work, spare]
        view = h.service.account_view(work)
        assert view["state"] == "auth_failed" and view["auth_reason"] == MISSING
        assert untouched(h.service, spare) == before

        # an account known to miss its credential is not read again until one is written
        clock.advance(keyring_watch.REREAD_IN_BACKGROUND_S)
        assert await h.service.credentials.sweep() == [spare]


async def test_on_a_keyring_file_the_next_look_sees_it(clocked, tmp_path):
    """A keyring file says it changed: the next look (every 5 s, and each account list through
    the management API) reads the entries again at once, however recent their last read."""
    h = clocked
    work, spare = await two_accounts(h)
    assert sorted(await h.service.credentials.sweep()) == [work, spare]
    assert await h.service.credentials.sweep() == []
    delete_entry(tmp_path, work)
    status, body = await admin_get(h, "/api/accounts/runtime")
    assert status == 200
    [listed] = [a for a in body["accounts"] if a["name"] == "work"]
    assert (listed["state"], listed["auth_reason"]) == ("auth_failed", MISSING)
    assert await h.service.credentials.sweep() == []  # read once; the vanished one waits


async def test_the_watch_runs_by_itself_within_a_minute(
    tmp_path, upstream, secret_store, monkeypatch
):
    """The service's own watch finds it: its wake-ups are shortened, the minute is the fake
    clock's, so the test waits for the state change and never for time."""
    monkeypatch.setattr(keyring_watch, "LOOK_EVERY_S", 0.01)
    clock = FakeClock()
    async with started_harness(tmp_path, secret_store, upstream, clock=clock) as h:
        work, _ = await two_accounts(h)
        delete_entry(tmp_path, work)
        clock.advance(keyring_watch.REREAD_IN_BACKGROUND_S)  # the fake minute's first 50 s
        await changed(h.service, lambda: h.service.account_view(work)["state"] == "auth_failed")
        assert h.service.account_view(work)["auth_reason"] == MISSING


async def test_after_a_restart_the_reason_comes_back_and_verify_says_credential_missing(
    tmp_path, upstream, secret_store
):
    async with started_harness(tmp_path, secret_store, upstream, clock=FakeClock()) as h:
        work, _ = await two_accounts(h)
        delete_entry(tmp_path, work)
        await h.service.credentials.sweep()
        assert h.service.account_view(work)["state"] == "auth_failed"
    async with started_harness(tmp_path, secret_store, upstream, clock=FakeClock()) as h:
        # the stored failure is back at once; its reason with the first look
        assert h.service.account_view(work)["state"] == "auth_failed"
        await h.service.credentials.sweep()
        assert h.service.account_view(work)["auth_reason"] == MISSING
        verdict = await h.service.verify("work")
        assert verdict["result"] == "auth_failed"
        assert verdict["detail"] == MISSING
        no_leak(json.dumps(verdict))
        assert "unreachable" not in json.dumps(verdict)


async def test_verify_reads_the_keyring_now(clocked, tmp_path):
    h = clocked
    work, _ = await two_accounts(h)
    del h.upstream.usage_for["*"]  # verify asks a subscription login's usage endpoint
    assert (await h.service.verify("work"))["result"] == "ok"
    delete_entry(tmp_path, work)
    verdict = await h.service.verify("work")
    assert (verdict["result"], verdict["detail"]) == ("auth_failed", MISSING)
    assert h.service.account_view(work)["state"] == "auth_failed"


# --- mending in place -------------------------------------------------------------------------


async def vanished(h: Harness, tmp_path: Path) -> tuple[int, int, anthropic.AsyncAnthropic]:
    """work has served a request and shown a gauge, then lost its credential; spare serves."""
    work, spare = await two_accounts(h)
    client = sdk(h, await h.create_key())
    h.upstream.headers_for[WORK_TOKEN] = {P + "5h-utilization": "0.4"}
    await h.service.switch("work")
    await client.messages.create(**BODY)
    await changed(h.service, lambda: not h.service.pool.accounts[work].gauges.five_hour.cold)
    delete_entry(tmp_path, work)
    with pytest.raises(anthropic.APIStatusError):
        await client.messages.create(**BODY)
    assert h.service.account_view(work)["state"] == "auth_failed"
    return work, spare, client


async def cli_replaces_work_login(h: Harness) -> None:
    """`sublane account add --replace --name work` while the server runs: a new login."""
    with offline_cli(h.service) as offline:
        await asyncio.to_thread(
            offline.add_account,
            "anthropic",
            "work",
            "default",
            None,
            2,
            login(NEW_TOKEN, "rt-new"),
            True,
        )


async def assert_mended(h: Harness, work: int, revision: int, client: Any) -> None:
    account = h.service.pool.accounts[work]
    assert account.revision == revision + 1  # a re-auth: the pool and the gauges start afresh
    assert not account.auth_failed
    view = h.service.account_view(work)
    assert view["state"] == "ok" and view["auth_reason"] is None
    assert view["gauges"]["five_hour"]["cold"]  # readings of the old credential are void
    assert [a["name"] for a in h.service.accounts_runtime()["accounts"]] == ["work", "spare"]
    await h.service.switch("work")
    await client.messages.create(**BODY)
    assert h.upstream.tokens_served()[-1] == NEW_TOKEN


async def test_adding_the_credential_again_with_replace_mends_the_account_in_place(
    clocked, tmp_path
):
    h = clocked
    work, spare, client = await vanished(h, tmp_path)
    revision = h.service.pool.accounts[work].revision
    before = untouched(h.service, spare)
    with pytest.raises(Exception, match="already exists"):  # without --replace: refused as ever
        await h.service.add_account("anthropic", "work", login(NEW_TOKEN, "rt-new"))
    view = await h.service.add_account(
        "anthropic", "work", login(NEW_TOKEN, "rt-new"), replace=True
    )
    assert view["id"] == work
    await assert_mended(h, work, revision, client)
    assert untouched(h.service, spare) == before


async def test_importing_the_same_login_again_mends_the_account_in_place(clocked, tmp_path):
    h = clocked
    work, spare, client = await vanished(h, tmp_path)
    revision = h.service.pool.accounts[work].revision
    before = untouched(h.service, spare)
    creds = tmp_path / "claude" / ".credentials.json"
    creds.parent.mkdir()
    creds.write_text(
        json.dumps(
            {
                "claudeAiOauth": {
                    "accessToken": NEW_TOKEN,
                    "refreshToken": "rt-new",
                    "expiresAt": 4_000_000_000_000,
                }
            }
        )
    )
    view = await h.service.import_login("claude-code", creds, name="work")
    assert view["id"] == work
    await assert_mended(h, work, revision, client)
    assert untouched(h.service, spare) == before


async def test_a_credential_written_by_another_process_mends_the_running_pool(
    tmp_path, upstream, secret_store, monkeypatch
):
    """`sublane account add --replace` with the server running writes the database and the
    keyring itself; the server's watch picks the new revision up on its next look (its
    wake-ups shortened here), and the old reason no longer applies."""
    monkeypatch.setattr(keyring_watch, "LOOK_EVERY_S", 0.01)
    async with started_harness(tmp_path, secret_store, upstream, clock=FakeClock()) as h:
        h.upstream.usage_for["*"] = 429
        work, _, client = await vanished(h, tmp_path)
        revision = h.service.pool.accounts[work].revision
        await cli_replaces_work_login(h)
        await changed(h.service, lambda: h.service.account_view(work)["state"] == "ok")
        await assert_mended(h, work, revision, client)


async def test_a_failure_the_running_pool_saves_after_the_cli_mended_the_login_stays_mended(
    clocked, tmp_path
):
    """The race behind a flaky CI run: the CLI stores a new credential (revision + 1, auth
    failure cleared), and before the server's next look its pool saves the account's runtime
    with the old failure still in memory. The failure belongs to the old credential, so the
    save must not write it over the repair: on its next look the pool takes the mended login."""
    h = clocked
    h.upstream.usage_for["*"] = 429
    work, _, client = await vanished(h, tmp_path)
    account = h.service.pool.accounts[work]
    revision = account.revision
    await cli_replaces_work_login(h)
    h.service.pool.mark_auth_failed(account)  # the old failure, saved again after the repair
    await asyncio.sleep(0)  # the save is queued on the writer thread...
    await h.service.db.write(lambda: None)  # ...which runs in order: it has landed now
    await h.service.catalog.reload()
    await assert_mended(h, work, revision, client)


async def test_a_refused_login_written_again_by_another_process_mends_too(
    tmp_path, upstream, secret_store, monkeypatch
):
    """The reason of a refused token refresh belongs to the credential it was seen under, like
    a vanished one's: a credential the CLI writes again clears it in the running pool."""
    monkeypatch.setattr(keyring_watch, "LOOK_EVERY_S", 0.01)
    clock = FakeClock()
    async with started_harness(tmp_path, secret_store, upstream, clock=clock) as h:
        h.upstream.usage_for["*"] = 429
        without_arrival_reads(h)  # the refresh this test times is the request's
        expiring = dict(login(WORK_TOKEN, "rt-never-granted"), expires_at=clock.now() + 10)
        work = (await h.service.add_account("anthropic", "work", expiring))["id"]
        client = sdk(h, await h.create_key())
        await client.messages.create(**BODY)  # the refresh is refused: the login is spent
        view = h.service.account_view(work)
        assert (view["state"], view["auth_reason"]) == ("auth_failed", problems.REFUSED)
        await cli_replaces_work_login(h)
        await changed(h.service, lambda: h.service.account_view(work)["state"] == "ok")
        await client.messages.create(**BODY)
        assert h.upstream.tokens_served()[-1] == NEW_TOKEN


async def test_with_no_server_the_stored_view_says_which_credentials_are_gone(clocked, tmp_path):
    """`account list` with no server running builds the view from the database and reads the
    keyring itself: the same reasons, nothing stored changed."""
    h = clocked
    work, _ = await two_accounts(h)
    key = (await h.service.add_account("anthropic", "key", {"api_key": "sk-ant-api03-k"}))["id"]
    delete_entry(tmp_path, work)
    keyring_file(tmp_path).set_password(SERVICE, account_secret(key), "[]")
    with offline_cli(h.service) as offline:  # what `sublane account …` opens
        view = await asyncio.to_thread(offline.pool_view)
    reasons = {a["name"]: (a["state"], a["auth_reason"]) for a in view["accounts"]}
    assert reasons == {
        "work": ("auth_failed", MISSING),
        "spare": ("ok", None),
        "key": ("auth_failed", "the stored credential could not be read — add its API key again"),
    }
    assert not h.service.pool.accounts[work].auth_failed  # nothing stored was changed


# --- the rules' own edges (accounts/keyring_watch.py) ----------------------------------------


def test_a_use_trusts_memory_only_while_the_keyring_file_is_unchanged():
    readings = keyring_watch.Readings()
    assert not readings.good_for_use(1, 1, 100.0, (1, 2, 3, 4))  # never read
    readings.record(1, 1, 100.0, (1, 2, 3, 4))
    assert readings.good_for_use(1, 1, 10_000.0, (1, 2, 3, 4))  # unchanged file: any age
    assert not readings.good_for_use(1, 1, 100.0, (1, 2, 3, 5))  # the file changed
    assert not readings.good_for_use(1, 2, 100.0, (1, 2, 3, 4))  # a new credential
    assert not readings.good_for_use(2, 1, 100.0, (1, 2, 3, 4))  # another account


def test_a_keyring_that_cannot_say_whether_it_changed_is_read_again_after_a_second():
    readings = keyring_watch.Readings()
    readings.record(1, 1, 100.0, None)
    assert readings.good_for_use(1, 1, 100.0 + keyring_watch.REREAD_ON_USE_S - 0.01, None)
    assert not readings.good_for_use(1, 1, 100.0 + keyring_watch.REREAD_ON_USE_S, None)
    readings.forget(1)
    assert not readings.good_for_use(1, 1, 100.0, None)


def test_the_background_reads_each_entry_every_fifty_seconds_or_when_the_file_changed():
    readings = keyring_watch.Readings()
    assert readings.due_in_background(1, 1, 0.0, None)
    readings.record(1, 1, 100.0, (1,))
    later = 100.0 + keyring_watch.REREAD_IN_BACKGROUND_S
    assert not readings.due_in_background(1, 1, later - 1, (1,))
    assert not readings.due_in_background(1, 1, later - 1, None)  # the keyring cannot say
    assert readings.due_in_background(1, 1, later, (1,))
    assert readings.due_in_background(1, 1, 101.0, (2,))  # the keyring file changed
    assert readings.due_in_background(1, 2, 101.0, (1,))  # a new credential is read at once
    readings.record(3, 1, 100.0, None)  # read when the keyring could not say
    assert not readings.due_in_background(3, 1, 101.0, (2,))
    # looked at every few seconds, an idle vanish shows within the rule's minute
    assert keyring_watch.REREAD_IN_BACKGROUND_S + keyring_watch.LOOK_EVERY_S < 60


def test_problems_belong_to_the_revision_they_were_seen_under():
    seen = problems.CredentialProblems()
    assert seen.note(1, MISSING, revision=3)
    assert not seen.note(1, MISSING, revision=3)  # no news
    assert seen.reason(1, 3) == MISSING and seen.own(1, 3)
    assert seen.reason(1, 4) is None and not seen.own(1, 4)  # written again since
    assert not seen.clear_passing(1)  # a good read does not clear the account's own problem
    seen.note(2, problems.keyring_unreadable("keyring is locked"), machine=True, revision=1)
    assert seen.clear_passing(2) and seen.reason(2) is None
    seen.note(2, problems.KEYRING_UNAVAILABLE, machine=True)
    assert seen.clear_keyring() == [2] and seen.reason(1, 3) == MISSING


def test_the_fix_fits_the_kind_of_login():
    assert problems.own_reason(problems.MISSING, "oauth") == MISSING
    assert problems.own_reason(problems.MISSING, "api_key") == (
        "credential missing from the keyring — add its API key again"
    )
    text = str(problems.CredentialUnavailable("k", "api_key", "x", problems.MISSING))
    assert text.startswith("account k: credential missing from the keyring; add its API key")
    assert "login" not in text
    machine = problems.CredentialUnavailable("k", "oauth", problems.KEYRING_UNAVAILABLE)
    assert str(machine) == f"account k: {problems.KEYRING_UNAVAILABLE}" and not machine.own
