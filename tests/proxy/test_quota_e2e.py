"""Quota gauges, lanes, levers and token refresh end to end (SPEC §5, R-ST-3): the anthropic SDK
-> SubLane -> fake upstream, which scripts headers and usage per account and reports which
account token served each request. Time is a fake clock."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import anthropic
import pytest

from sublane_desktop.accounts.secrets import account_secret
from sublane_desktop.service import Service
from tests.conftest import Harness, fake_env
from tests.fake_upstream import CLAUDE_CODE_HEADERS

P = "anthropic-ratelimit-unified-"
H = 3600.0
MAIN = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}
FABLE = {**MAIN, "model": "claude-fable-5"}


async def until(predicate, what: str, seconds: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0)


@pytest.fixture
async def clocked(tmp_path, upstream, secret_store, clock):
    service = Service(
        tmp_path / "data",
        port=0,
        secret_store=secret_store,
        clock=clock,
        env={"SUBLANE_ANTHROPIC_BASE_URL": upstream.url, "SUBLANE_OAUTH_BASE_URL": upstream.url},
    )
    await service.start()
    h = Harness(service, upstream)
    h.clock = clock
    yield h
    await service.stop(drain_timeout=2)


def sdk(h, key):
    # A bounded wait (the SDK's own default is 10 minutes): a lost answer fails, it never hangs.
    return anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, timeout=30, default_headers=CLAUDE_CODE_HEADERS
    )


async def admin(h, method, path, body=None):
    async with aiohttp.ClientSession() as s:
        async with s.request(
            method,
            h.url + path,
            json=body,
            headers={"Authorization": f"Bearer {h.service.admin_token}"},
        ) as r:
            return r.status, await r.json(content_type=None)


def fable_headers(clock, util, resets_in, five=0.1, week=0.1):
    now = clock.now()
    return {
        P + "5h-utilization": str(five),
        P + "5h-reset": str(int(now + 4 * H)),
        P + "7d-utilization": str(week),
        P + "7d-reset": str(int(now + 100 * H)),
        P + "7d_oi-utilization": str(util),
        P + "7d_oi-reset": str(int(now + resets_in)),
    }


async def test_headers_feed_gauges_and_fable_traffic_goes_to_the_perishable_bucket(clocked):
    h = clocked
    a = await h.add_account("a", "tok-a")
    b = await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.headers_for["tok-a"] = fable_headers(h.clock, 0.07, 38 * H)
    h.upstream.headers_for["tok-b"] = fable_headers(h.clock, 0.0, 3 * H)
    h.upstream.usage_for["*"] = 429  # keep the poll out of this test
    client = sdk(h, key)
    # Warm both gauges: one request through each account (a manual switch puts one on b).
    await client.messages.create(**MAIN)
    await h.service.switch("b")
    await client.messages.create(**MAIN)
    h.service.pool.accounts[b].pinned_until = None
    h.service.pool.scheduler.current[(1, "anthropic")] = a
    h.service.pool.scheduler.fable_current.clear()
    await until(
        lambda: (
            not h.service.pool.accounts[b].gauges.fable.cold
            and not h.service.pool.accounts[a].gauges.fable.cold
        ),
        "both fable gauges",
    )
    view = h.service.account_view(a)["gauges"]
    assert view["fable"]["utilization"] == pytest.approx(0.07) and not view["fable"]["stale"]

    await client.messages.create(**FABLE)
    await client.messages.create(**MAIN)
    served = h.upstream.tokens_served()[-2:]
    assert served == ["tok-b", "tok-a"]  # Fable burns b's 3-hour bucket; main stays on a
    runtime = h.service.accounts_runtime()["accounts"]
    assert [x["fable_current"] for x in runtime] == [False, True]
    assert [x["current"] for x in runtime] == [True, False]


async def test_fable_429_without_retry_after_parks_only_the_fable_scope(clocked):
    from tests.fake_upstream import Reply

    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.script(
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
    with pytest.raises(anthropic.RateLimitError):
        await sdk(h, key).messages.create(**FABLE)
    assert h.service.account_view(acc)["state"] == "ok"
    await sdk(h, key).messages.create(**MAIN)  # non-Fable traffic keeps flowing
    with pytest.raises(anthropic.RateLimitError) as err:
        await sdk(h, key).messages.create(**FABLE)
    assert err.value.body["error"]["code"] == "account_cooling"


async def test_fable_429_corroborated_by_5h_parks_account_wide(clocked):
    from tests.fake_upstream import Reply

    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.script(
        "tok-a",
        Reply(
            status=429,
            error_type="rate_limit_error",
            headers={P + "5h-status": "rejected", P + "5h-utilization": "0.6"},
        ),
    )  # the flag, not 100 %
    with pytest.raises(anthropic.RateLimitError):
        await sdk(h, key).messages.create(**FABLE)
    assert h.service.account_view(acc)["state"] == "cooling"
    with pytest.raises(anthropic.RateLimitError) as err:  # other models wait too
        await sdk(h, key).messages.create(**MAIN)
    assert err.value.body["error"]["code"] == "account_cooling"


async def test_fable_429_with_retry_after_parks_account_wide(clocked):
    """R-LANE-7: a 429 that carries retry-after always parks the whole account."""
    from tests.fake_upstream import Reply

    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.script(
        "tok-a",
        Reply(
            status=429,
            error_type="rate_limit_error",
            headers={
                "retry-after": "40",
                P + "7d_oi-status": "rejected",
                P + "5h-status": "allowed",
                P + "7d-status": "allowed",
            },
        ),
    )
    with pytest.raises(anthropic.RateLimitError):
        await sdk(h, key).messages.create(**FABLE)
    view = h.service.account_view(acc)
    assert view["state"] == "cooling" and view["cooldown_until"] == pytest.approx(
        h.clock.now() + 40
    )
    with pytest.raises(anthropic.RateLimitError) as err:
        await sdk(h, key).messages.create(**MAIN)
    assert err.value.body["error"]["code"] == "account_cooling"


async def test_limit_reached_flag_below_100_percent_benches_the_account(clocked):
    """R-LANE-1: a fresh `rejected` status is exhaustion, even at 60 %."""
    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    h.upstream.headers_for["tok-a"] = {
        P + "5h-status": "rejected",
        P + "5h-utilization": "0.6",
        P + "5h-reset": str(int(h.clock.now() + 2 * H)),
    }
    await sdk(h, key).messages.create(**MAIN)
    await until(lambda: h.service.pool.accounts[acc].gauges.five_hour.rejected, "gauge")
    assert h.service.account_view(acc)["state"] == "quota_exhausted"
    with pytest.raises(anthropic.RateLimitError) as err:
        await sdk(h, key).messages.create(**MAIN)
    assert err.value.body["error"]["code"] == "quota_exhausted"


async def test_traffic_polls_stale_accounts_two_at_a_time_coalesced_with_a_floor(clocked):
    h = clocked
    ids = [await h.add_account(f"acc{i}", f"tok-{i}") for i in range(4)]
    key = await h.create_key()
    h.upstream.usage_for["*"] = {
        "five_hour": {"utilization": 37.0, "resets_at": "2027-01-15T10:00:00Z"},
        "limits": [
            {
                "kind": "weekly_scoped",
                "percent": 64,
                "resets_at": "2027-01-18T00:00:00Z",
                "scope": {"model": {"display_name": "Fable"}},
            }
        ],
    }
    h.upstream.usage_gate = asyncio.Event()
    await sdk(h, key).messages.create(**MAIN)  # traffic: stale accounts get refreshed
    await until(lambda: h.upstream.usage_in_flight == 2, "two concurrent reads")
    h.service.refresh_quotas()  # a person presses Refresh meanwhile: duplicates coalesce
    h.upstream.usage_gate.set()
    await until(lambda: len(h.upstream.usage_reads) == 4, "every account read")
    await until(
        lambda: all(not h.service.pool.accounts[i].gauges.fable.cold for i in ids),
        "gauges published",
    )
    assert h.upstream.usage_max_in_flight == 2
    assert sorted(h.upstream.usage_reads) == ["tok-0", "tok-1", "tok-2", "tok-3"]
    g = h.service.account_view(ids[0])["gauges"]
    assert g["five_hour"]["utilization"] == pytest.approx(0.37)
    assert g["fable"]["utilization"] == pytest.approx(0.64)
    # Within the 5-minute floor more traffic polls nothing, even once data goes stale. Reads
    # are held at the endpoint, so any read this traffic started would still be running.
    h.upstream.usage_gate = asyncio.Event()
    h.clock.advance(200)
    assert h.service.pool.accounts[ids[0]].gauges.any_stale(h.clock.now())
    await sdk(h, key).messages.create(**MAIN)  # the response is sent after the refresh ask
    assert h.service.refresher.running == 0
    assert len(h.upstream.usage_reads) == 4
    h.clock.advance(100)  # exactly 5 minutes since the reads started: due again
    await sdk(h, key).messages.create(**MAIN)
    assert h.service.refresher.running == 4
    h.upstream.usage_gate.set()
    await until(lambda: len(h.upstream.usage_reads) == 8, "polls after the floor")


async def test_poll_429_retry_after_is_honoured_and_last_good_observation_kept(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    h.upstream.usage_for["tok-a"] = {"five_hour": {"utilization": 50, "resets_at": None}}
    await asyncio.gather(*h.service.refresher.want([h.service.pool.accounts[acc]], force=True))
    assert h.service.pool.accounts[acc].gauges.five_hour.utilization == 0.5
    h.upstream.usage_for["tok-a"] = 429
    await asyncio.gather(*h.service.refresher.want([h.service.pool.accounts[acc]], force=True))
    assert h.service.pool.accounts[acc].gauges.five_hour.utilization == 0.5  # kept
    reads = len(h.upstream.usage_reads)
    assert h.service.refresh_quotas() == 0  # inside the endpoint's retry-after: no read
    assert len(h.upstream.usage_reads) == reads
    h.clock.advance(361)  # past the 5-minute poll cadence and its grace (R-UI-14)
    assert h.service.account_view(acc)["gauges"]["five_hour"]["stale"] is True


async def test_observations_survive_restart_and_a_reauth_voids_them(
    tmp_path, upstream, secret_store, clock
):
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
    upstream.usage_for["*"] = 429
    upstream.headers_for["tok-a"] = {P + "5h-utilization": "0.66"}
    await sdk(h, await h.create_key()).messages.create(**MAIN)
    await until(lambda: not service.pool.accounts[acc].gauges.five_hour.cold, "header gauge")
    # A refresh that began before a re-auth must not land afterwards.
    from sublane_desktop.core.gauges import Observation
    from sublane_desktop.store.models import Account

    old_revision = service.pool.accounts[acc].revision
    await service.store.write(
        lambda: Account.update(revision=Account.revision + 1).where(Account.id == acc).execute()
    )
    late = Observation("seven_day", 0.9, None, clock.now(), "poll")
    assert await service._publish_quota(service.pool.accounts[acc], old_revision, [late]) is False
    await service.store.write(
        lambda: Account.update(revision=old_revision).where(Account.id == acc).execute()
    )
    await service.stop()

    again = fresh()
    await again.start()
    try:
        assert again.pool.accounts[acc].gauges.five_hour.utilization == 0.66
        assert again.pool.accounts[acc].gauges.seven_day.cold
    finally:
        await again.stop()


async def test_switch_pins_both_lanes_for_5_minutes_and_reset_usage_goes_cold(clocked):
    h = clocked
    a = await h.add_account("a", "tok-a")
    b = await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    status, body = await admin(h, "POST", "/llmux/switch", {"account": "b"})
    assert status == 200 and body["pinned_until"] == pytest.approx(h.clock.now() + 300)
    await sdk(h, key).messages.create(**MAIN)
    await sdk(h, key).messages.create(**FABLE)
    assert h.upstream.tokens_served()[-2:] == ["tok-b", "tok-b"]
    h.clock.advance(301)
    h.service.pool.evaluate()
    assert h.service.account_view(b)["pinned_until"] is None
    status, _ = await admin(h, "POST", "/llmux/switch", {"account": "nope"})
    assert status == 404
    status, _ = await admin(h, "POST", "/llmux/switch", {})
    assert status == 400

    h.upstream.headers_for["tok-a"] = {P + "5h-utilization": "0.5"}
    h.service.pool.scheduler.current[(1, "anthropic")] = a
    await sdk(h, key).messages.create(**MAIN)
    await until(lambda: not h.service.pool.accounts[a].gauges.five_hour.cold, "gauge")
    status, body = await admin(h, "POST", "/llmux/reset-usage", {})
    assert status == 200
    assert all(g["cold"] for acc in body["accounts"] for g in acc["gauges"].values())


async def test_expired_token_refreshes_once_and_retries(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-old")
    key = await h.create_key()
    h.upstream.expired.add("tok-old")
    h.upstream.refresh_grants["rt-a"] = ("tok-new", "rt-new")
    msg = await sdk(h, key).messages.create(**MAIN)
    assert msg.content[0].text
    assert h.upstream.tokens_served()[-1] == "tok-new"
    assert len(h.upstream.refresh_calls) == 1
    stored = json.loads(await h.service.secrets.aget(account_secret(acc)))
    assert stored["access_token"] == "tok-new" and stored["refresh_token"] == "rt-new"
    assert h.service.account_view(acc)["state"] == "ok"


async def test_refresh_before_expiry_single_flight_and_rejection_marks_auth_failed(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    account = h.service.pool.accounts[acc]
    cred = json.loads(await h.service.secrets.aget(account_secret(acc)))
    cred["expires_at"] = h.clock.now() + 60  # inside the refresh margin
    await h.service.secrets.aset(account_secret(acc), json.dumps(cred))
    h.service._credentials.clear()
    h.upstream.refresh_grants["rt-a"] = ("tok-fresh", "rt-2")
    results = await asyncio.gather(*(h.service.credential(account) for _ in range(5)))
    assert {r["access_token"] for r in results} == {"tok-fresh"}
    assert len(h.upstream.refresh_calls) == 1  # one refresh in flight per account

    h.upstream.refresh_grants["rt-2"] = 400
    h.clock.advance(9 * H)  # past the new expiry
    await h.service.credential(account)
    assert h.service.account_view(acc)["state"] == "auth_failed"


async def expiring(h, name: str) -> tuple[int, object]:
    """An account whose token is inside the refresh margin, nothing of it in memory."""
    acc = await h.add_account(name, f"tok-{name}")
    cred = json.loads(await h.service.secrets.aget(account_secret(acc)))
    cred["expires_at"] = h.clock.now() + 60
    await h.service.secrets.aset(account_secret(acc), json.dumps(cred))
    h.service._credentials.clear()
    h.upstream.refresh_grants[f"rt-{name}"] = ("tok-fresh", "rt-2")
    return acc, h.service.pool.accounts[acc]


async def test_a_keyring_read_that_ends_after_a_refresh_does_not_undo_it(clocked):
    """A request that began reading the keyring before another one's refresh ended gets the
    refreshed token: it neither puts the old one back in memory nor spends the single-use
    refresh token a second time (which the upstream refuses: the account would sign out)."""
    h = clocked
    acc, account = await expiring(h, "a")
    credentials = h.service.credentials
    entry = credentials._entry
    reading, gate = asyncio.Event(), asyncio.Event()

    async def slow_first_read(account):
        old = await entry(account)
        if not reading.is_set():
            reading.set()
            await gate.wait()  # this caller's read ends only after the other's refresh
        return old

    credentials._entry = slow_first_read
    slow = asyncio.ensure_future(h.service.credential(account))
    await reading.wait()
    assert (await h.service.credential(account))["access_token"] == "tok-fresh"
    gate.set()
    assert (await slow)["access_token"] == "tok-fresh"
    assert (await h.service.credential(account))["access_token"] == "tok-fresh"
    assert len(h.upstream.refresh_calls) == 1
    assert h.service.account_view(acc)["state"] != "auth_failed"


async def test_asking_to_refresh_a_token_already_replaced_gets_the_replacement(clocked):
    """A caller refused with the token it saw (a 401) asks for a refresh after another caller's
    refresh replaced that token: it gets the new token without a second refresh."""
    h = clocked
    _, account = await expiring(h, "b")
    seen = await h.service.credentials._entry(account)
    fresh = await h.service.refresh_credential(account)
    assert fresh["access_token"] == "tok-fresh"
    again = await h.service.refresh_credential(account, seen=seen)
    assert again["access_token"] == "tok-fresh"
    assert len(h.upstream.refresh_calls) == 1
    # with the token it saw still current, a refresh is made
    h.upstream.refresh_grants["rt-2"] = ("tok-third", "rt-3")
    third = await h.service.refresh_credential(account, seen=fresh)
    assert third["access_token"] == "tok-third" and len(h.upstream.refresh_calls) == 2


async def test_reset_usage_forgets_stored_observations_and_polls_again_at_once(
    tmp_path, upstream, secret_store, clock
):
    """R-LANE-8: after reset-usage the gauges stay cold across a restart, and the next traffic
    reads every account again even inside the 5-minute floor."""

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
    upstream.usage_for["*"] = {"five_hour": {"utilization": 40.0, "resets_at": None}}
    await sdk(h, key).messages.create(**MAIN)
    await until(lambda: not service.pool.accounts[acc].gauges.five_hour.cold, "polled gauge")
    await until(lambda: service.refresher.running == 0, "poll finished")
    assert upstream.usage_reads == ["tok-a"]
    status, _ = await admin(h, "POST", "/llmux/reset-usage", {})
    assert status == 200 and service.pool.accounts[acc].gauges.five_hour.cold
    await service.stop()

    again = fresh()
    await again.start()
    try:
        assert again.pool.accounts[acc].gauges.five_hour.cold  # nothing came back from disk
        h = Harness(again, upstream)
        status, _ = await admin(h, "POST", "/llmux/reset-usage", {})
        clock.advance(10)
        await sdk(h, key).messages.create(**MAIN)
        await until(lambda: len(upstream.usage_reads) == 2, "a poll right after reset-usage")
        await until(lambda: not again.pool.accounts[acc].gauges.five_hour.cold, "gauge back")
    finally:
        await again.stop()


async def test_reset_usage_lifts_the_floor_within_one_process(clocked):
    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = {"five_hour": {"utilization": 40.0, "resets_at": None}}
    await sdk(h, key).messages.create(**MAIN)
    await until(lambda: not h.service.pool.accounts[acc].gauges.five_hour.cold, "polled gauge")
    await until(lambda: h.service.refresher.running == 0, "poll finished")
    h.clock.advance(30)
    status, _ = await admin(h, "POST", "/llmux/reset-usage", {})
    assert status == 200
    await sdk(h, key).messages.create(**MAIN)
    await until(lambda: len(h.upstream.usage_reads) == 2, "a poll right after reset-usage")
    await until(
        lambda: (
            h.service.account_view(acc)["gauges"]["five_hour"]["utilization"] == pytest.approx(0.4)
        ),
        "gauge repopulated",
    )


async def test_the_tick_abandons_a_paused_current_without_traffic(
    tmp_path, upstream, secret_store, clock, monkeypatch
):
    """R-LANE-6: the evaluation tick re-evaluates the lanes by itself (30 s; shortened here)."""
    from sublane_desktop import service as service_module

    monkeypatch.setattr(service_module, "TICK_SECONDS", 0.005)
    service = Service(
        tmp_path / "data",
        port=0,
        secret_store=secret_store,
        clock=clock,
        env={"SUBLANE_ANTHROPIC_BASE_URL": upstream.url, "SUBLANE_OAUTH_BASE_URL": upstream.url},
    )
    await service.start()
    try:
        h = Harness(service, upstream)
        a = await h.add_account("a", "tok-a")
        await h.add_account("b", "tok-b")
        upstream.usage_for["*"] = 429
        await sdk(h, await h.create_key()).messages.create(**MAIN)
        assert service.account_view(a)["current"]
        status, _ = await admin(h, "POST", "/llmux/pause-account", {"account": "a", "paused": True})
        assert status == 200
        await until(lambda: not service.account_view(a)["current"], "the tick", seconds=5)
        assert service.accounts_runtime()["accounts"][0]["state"] == "paused"
    finally:
        await service.stop()
