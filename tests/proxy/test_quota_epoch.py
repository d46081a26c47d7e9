"""The quota epoch (R-FT-9): no gauge comes back from before a reset-usage or a re-auth, even
when its reading was already on its way (queued, being saved, or between save and publish)."""

from __future__ import annotations

import asyncio
import threading

import anthropic

from sublane_desktop.store import quota as quota_store
from tests.conftest import fake_env
from tests.fake_upstream import CLAUDE_CODE_HEADERS
from tests.openai_helpers import until
from tests.proxy.test_quota_e2e import MAIN, H, fable_headers
from tests.proxy.test_quota_e2e import clocked as clocked  # the fixture this module uses


async def stored_windows(h, account_id):
    found = await h.service.store.read(quota_store.load_observations)
    return {obs.window for obs in found.get(account_id, [])}


async def test_reset_usage_between_save_and_publish_keeps_the_gauge_cold(clocked, monkeypatch):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.headers_for["tok-a"] = fable_headers(h.clock, 0.5, 30 * H, five=0.6)
    h.upstream.usage_for["*"] = 429  # keep the usage poll out of this test
    loop = asyncio.get_running_loop()
    saved, go = asyncio.Event(), threading.Event()
    real_save = quota_store.save_observations

    def save_then_hold(*args, **kwargs):  # runs on the writer thread
        result = real_save(*args, **kwargs)
        loop.call_soon_threadsafe(saved.set)
        go.wait(10)
        return result

    monkeypatch.setattr(quota_store, "save_observations", save_then_hold)
    client = anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, default_headers=CLAUDE_CODE_HEADERS
    )
    await client.messages.create(**MAIN)
    await saved.wait()  # the header reading is saved, its batch not yet finished
    account = h.service.pool.accounts[acc]
    assert account.gauges.five_hour.utilization == 0.6  # it gated at once (R-GAUGE-2)
    reset = asyncio.ensure_future(h.service.reset_usage())
    await until(lambda: account.quota_epoch == 1, "reset-usage advanced the epoch")
    go.set()
    await reset
    flush = h.service.quota._obs_flush
    if flush is not None:
        await flush
    assert account.gauges.five_hour.cold and account.gauges.fable.cold
    assert await stored_windows(h, acc) == set()  # and nothing to come back after a restart
    # The next response feeds the gauge again: only the old reading was refused.
    monkeypatch.setattr(quota_store, "save_observations", real_save)
    await client.messages.create(**MAIN)
    await until(lambda: not account.gauges.five_hour.cold, "a fresh reading lands")


async def test_a_reading_queued_before_reset_usage_is_discarded(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    account = h.service.pool.accounts[acc]
    h.upstream.usage_for["*"] = 429
    h.service.observe_headers(account, fable_headers(h.clock, 0.5, 30 * H, five=0.6))
    await h.service.reset_usage()  # before the queued reading's save ran
    flush = h.service.quota._obs_flush
    if flush is not None:
        await flush
    assert account.gauges.five_hour.cold
    assert await stored_windows(h, acc) == set()


async def test_a_usage_read_begun_before_reset_usage_is_discarded(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    account = h.service.pool.accounts[acc]
    gate = asyncio.Event()
    h.upstream.usage_gate = gate
    h.upstream.usage_for["*"] = {"five_hour": {"utilization": 40.0, "resets_at": None}}
    h.service.refresh_quotas()
    await until(lambda: h.upstream.usage_in_flight == 1, "the read is at the upstream")
    await h.service.reset_usage()
    gate.set()
    await until(lambda: h.service.refresher.running == 0, "the read finished")
    assert account.gauges.five_hour.cold
    assert await stored_windows(h, acc) == set()


# --- R-FT-10: the Fable-scope cooldown survives a restart -----------------------------------------


async def test_the_fable_scope_cooldown_survives_a_restart(tmp_path, upstream, secret_store, clock):
    from sublane_desktop.service import Service
    from tests.conftest import Harness
    from tests.fake_upstream import Reply
    from tests.proxy.test_quota_e2e import FABLE, P

    def fresh():
        return Service(
            tmp_path / "data",
            port=0,
            secret_store=secret_store,
            clock=clock,
            env=fake_env(upstream),
        )

    service = fresh()
    await service.start()
    h = Harness(service, upstream)
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    upstream.usage_for["*"] = 429
    upstream.script(
        "tok-a",
        Reply(
            status=429,
            error_type="rate_limit_error",
            headers={
                P + "7d_oi-status": "rejected",
                P + "5h-status": "allowed",
                P + "7d-status": "allowed",
            },
        ),
    )
    client = anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, default_headers=CLAUDE_CODE_HEADERS
    )
    try:
        await client.messages.create(**FABLE)
    except anthropic.RateLimitError:
        pass
    until_before = service.pool.accounts[acc].fable_cooldown_until
    assert until_before is not None and service.pool.accounts[acc].cooldown_until is None
    await service.stop()

    again = fresh()
    await again.start()
    try:
        account = again.pool.accounts[acc]
        assert (account.fable_cooldown_until, account.fable_streak) == (until_before, 1)
        client = anthropic.AsyncAnthropic(
            base_url=again.endpoint_url,
            api_key=key,
            max_retries=0,
            default_headers=CLAUDE_CODE_HEADERS,
        )
        try:
            await client.messages.create(**FABLE)
            raise AssertionError("a Fable request went to a resting Fable scope")
        except anthropic.RateLimitError as err:
            assert err.body["error"]["code"] == "account_cooling"
        await client.messages.create(**MAIN)  # the rest of the account still serves
    finally:
        await again.stop()
