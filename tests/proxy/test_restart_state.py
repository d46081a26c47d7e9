"""R-OBS-2: a restart keeps what a person or an upstream set. A manual pin keeps its remaining
time, the usage endpoint's retry-after and the 5-minute poll floor keep running, and the forecast
trail reloads. The anthropic SDK -> SubLane -> fake upstream; the service is stopped and a new
one started on the same data dir, as a person quitting and reopening the app would. Time is a
fake wall clock shared by both runs."""

from __future__ import annotations

import asyncio

import aiohttp
import anthropic
import pytest

from sublane_desktop.service import Service
from sublane_desktop.service.offline import OfflineService
from tests.conftest import Harness
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply

P = "anthropic-ratelimit-unified-"
MIN = 60.0
H = 3600.0
MAIN = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}


async def until(predicate, what: str, seconds: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0)


class Runs:
    """One data dir, one fake clock, services started and stopped on it in turn."""

    def __init__(self, tmp_path, upstream, secret_store, clock) -> None:
        self.args = (tmp_path / "data", upstream, secret_store, clock)
        self.h: Harness | None = None
        self.clock = clock
        self.upstream = upstream

    async def start(self) -> Harness:
        data, upstream, secret_store, clock = self.args
        service = Service(
            data,
            port=0,
            secret_store=secret_store,
            clock=clock,
            env={
                "SUBLANE_ANTHROPIC_BASE_URL": upstream.url,
                "SUBLANE_OAUTH_BASE_URL": upstream.url,
            },
        )
        await service.start()
        self.h = Harness(service, upstream)
        return self.h

    async def restart(self) -> Harness:
        await self.stop()
        return await self.start()

    async def stop(self) -> None:
        if self.h is not None and self.h.service.store is not None:
            await self.h.service.stop(drain_timeout=2)


@pytest.fixture
async def runs(tmp_path, upstream, secret_store, clock):
    r = Runs(tmp_path, upstream, secret_store, clock)
    yield r
    await r.stop()


def sdk(h: Harness, key: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, timeout=30, default_headers=CLAUDE_CODE_HEADERS
    )


async def ask(h: Harness, key: str, session: str) -> str:
    """One request in a new conversation; the token of the account that served it."""
    client = sdk(h, key)
    try:
        await client.messages.create(**MAIN, extra_headers={"x-claude-code-session-id": session})
    finally:
        await client.close()
    return h.upstream.tokens_served()[-1]


# --- the manual pin -------------------------------------------------------------------------------


async def test_a_manual_pin_keeps_its_remaining_time_across_a_restart(runs):
    h = await runs.start()
    await h.add_account("a", "tok-a")
    b = await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429  # only the pin decides here
    pinned_at = runs.clock.now()
    await h.service.levers.switch("b")
    runs.clock.advance(2 * MIN)

    h = await runs.restart()
    view = h.service.account_view(b)
    assert view["pinned_until"] == pytest.approx(pinned_at + 5 * MIN)  # not a fresh 5 minutes
    # New conversations would rotate to a first; the pin still sends them to b.
    assert [await ask(h, key, f"s{i}") for i in range(3)] == ["tok-b"] * 3
    runs.clock.advance(3 * MIN)  # the pin's own 5 minutes are over: it lapses as it would have
    h.service.pool.evaluate()
    assert h.service.account_view(b)["pinned_until"] is None
    assert await ask(h, key, "after") == "tok-a"


async def runtime(h: Harness) -> dict[str, dict]:
    """GET /api/accounts/runtime (what the tray and `account list --json` show), by name."""
    async with aiohttp.ClientSession(
        headers={"Authorization": f"Bearer {h.service.admin_token}"}
    ) as session:
        async with session.get(h.url + "/api/accounts/runtime") as resp:
            assert resp.status == 200
            body = await resp.json()
    return {a["name"]: a for a in body["accounts"]}


async def test_a_pin_kept_across_a_restart_is_current_before_any_request(runs):
    """The pinned account is the one new requests go to, so the views say it is current at
    once after a start ("current for Claude" in the tray), not from the next request on."""
    h = await runs.start()
    await h.add_account("a", "tok-a")
    await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    await h.service.levers.switch("b")
    runs.clock.advance(2 * MIN)

    h = await runs.restart()
    shown = await runtime(h)
    assert shown["b"]["pinned_until"] is not None
    assert (shown["b"]["current"], shown["b"]["fable_current"]) == (True, True)
    assert (shown["a"]["current"], shown["a"]["fable_current"]) == (False, False)
    assert await ask(h, key, "s1") == "tok-b"  # and that is where the next request goes


async def test_a_pin_kept_on_an_account_whose_quota_is_spent_is_not_current_after_a_restart(
    runs,
):
    """The pin holds, but the hard gates hold over it (R-LANE-2): new requests go elsewhere,
    so the views do not call the pinned account current."""
    h = await runs.start()
    await h.add_account("a", "tok-a")
    await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.usage_for["tok-a"] = 429
    h.upstream.usage_for["tok-b"] = {
        "five_hour": {"utilization": 100.0, "resets_at": None},
        "seven_day": {"utilization": 10.0, "resets_at": None},
    }
    assert h.service.refresh_quotas() == 2
    await until(lambda: h.service.refresher.running == 0, "reads finished")
    await h.service.levers.switch("b")

    h = await runs.restart()
    shown = await runtime(h)
    assert shown["b"]["pinned_until"] is not None and shown["b"]["state"] != "ok"
    assert not shown["b"]["current"]
    assert await ask(h, key, "s1") == "tok-a"


async def test_the_cli_disabling_a_pinned_account_while_no_server_runs_releases_the_pin(runs):
    """Disabling releases a pin (R-LANE-2, as the running pool does): done by the CLI with no
    server, the pin neither shows on the disabled account nor comes back when it is enabled."""
    h = await runs.start()
    await h.add_account("a", "tok-a")
    await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    await h.service.levers.switch("b")
    await runs.stop()
    offline = OfflineService(h.service.data_dir)
    try:
        offline.set_enabled("b", False)
        assert offline.pool_view()["accounts"][1]["pinned_until"] is None
        offline.set_enabled("b", True)
    finally:
        offline.close()

    h = await runs.start()
    shown = await runtime(h)
    assert shown["b"]["pinned_until"] is None and not shown["b"]["current"]
    assert await ask(h, key, "s1") == "tok-a"  # rotation from the first, as with no pin


async def test_without_a_pin_a_start_has_no_current_account_until_a_request_picks_one(runs):
    """Decided: the lanes' current account is process-local (like the rotation cursors, R-POOL-10)
    and is picked by the first request from the gauges of that moment; before it, the views
    say none is current rather than guess ("No current account yet" in the tray)."""
    h = await runs.start()
    await h.add_account("a", "tok-a")
    await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    client = sdk(h, key)
    try:
        await client.messages.create(**MAIN)  # no conversation: the main lane's pick
    finally:
        await client.close()
    assert [a["current"] for a in (await runtime(h)).values()].count(True) == 1

    h = await runs.restart()
    assert [a["current"] for a in (await runtime(h)).values()] == [False, False]
    client = sdk(h, key)
    try:
        await client.messages.create(**MAIN)
    finally:
        await client.close()
    served = h.upstream.tokens_served()[-1]
    assert {n for n, a in (await runtime(h)).items() if a["current"]} == {served[len("tok-") :]}


async def test_a_pin_released_by_a_429_stays_released_after_a_restart(runs):
    h = await runs.start()
    await h.add_account("a", "tok-a")
    b = await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    await h.service.levers.switch("b")
    h.upstream.script("tok-b", Reply(status=429, error_type="rate_limit_error"))
    with pytest.raises(anthropic.RateLimitError):
        await ask(h, key, "s1")
    assert h.service.account_view(b)["pinned_until"] is None

    h = await runs.restart()
    assert h.service.account_view(b)["pinned_until"] is None
    assert h.service.pool.accounts[b].pinned_until is None


async def test_a_switch_moves_the_saved_pin_to_the_new_account(runs):
    h = await runs.start()
    a = await h.add_account("a", "tok-a")
    b = await h.add_account("b", "tok-b")
    h.upstream.usage_for["*"] = 429
    await h.service.levers.switch("a")
    runs.clock.advance(MIN)
    await h.service.levers.switch("b")

    h = await runs.restart()
    assert h.service.account_view(a)["pinned_until"] is None
    assert h.service.account_view(b)["pinned_until"] == pytest.approx(runs.clock.now() + 5 * MIN)


async def test_a_saved_pin_never_runs_longer_than_5_minutes_when_the_clock_went_back(runs):
    h = await runs.start()
    b = await h.add_account("b", "tok-b")
    h.upstream.usage_for["*"] = 429
    await h.service.levers.switch("b")
    await runs.stop()
    runs.clock.advance(-H)  # the computer's clock was put back an hour while we were closed

    h = await runs.start()
    assert h.service.account_view(b)["pinned_until"] == pytest.approx(runs.clock.now() + 5 * MIN)


# --- the poll floor and the usage endpoint's retry-after -------------------------------------------


async def test_a_restart_polls_neither_inside_the_floor_nor_inside_the_endpoints_retry_after(
    runs,
):
    """R-GAUGE-3 across a restart: one read per account per 5 minutes, none while the usage
    endpoint's own retry-after (the fake says 3600 s) runs."""
    h = await runs.start()
    await h.add_account("a", "tok-a")
    await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.usage_for["tok-a"] = {"five_hour": {"utilization": 40.0, "resets_at": None}}
    h.upstream.usage_for["tok-b"] = 429  # with retry-after: 3600
    await ask(h, key, "s1")  # traffic: both cold accounts are read
    await until(lambda: len(h.upstream.usage_reads) == 2, "both accounts read")
    await until(lambda: h.service.refresher.running == 0, "reads finished")
    runs.clock.advance(200)  # the reading is stale now (2 minutes), the floor still holds

    h = await runs.restart()
    assert h.service.pool.accounts[1].gauges.any_stale(runs.clock.now())
    await ask(h, key, "s2")  # the response goes out after traffic asked for refreshes
    assert h.service.refresher.running == 0
    assert h.service.refresh_quotas() == 1  # a person's Refresh skips the floor, not the back-off
    await until(lambda: len(h.upstream.usage_reads) == 3, "the forced read")
    assert h.upstream.usage_reads[-1] == "tok-a"
    await until(lambda: h.service.refresher.running == 0, "read finished")

    runs.clock.advance(H)  # past the floor and the endpoint's hour: both read again
    h = await runs.restart()
    await ask(h, key, "s3")
    await until(lambda: len(h.upstream.usage_reads) == 5, "reads after the back-off")
    assert sorted(h.upstream.usage_reads[3:]) == ["tok-a", "tok-b"]
    await until(lambda: h.service.refresher.running == 0, "reads finished")


async def test_reset_usage_lifts_the_saved_floor_but_not_the_endpoints_retry_after(runs):
    h = await runs.start()
    await h.add_account("a", "tok-a")
    await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.usage_for["tok-a"] = {"five_hour": {"utilization": 40.0, "resets_at": None}}
    h.upstream.usage_for["tok-b"] = 429
    await ask(h, key, "s1")
    await until(lambda: len(h.upstream.usage_reads) == 2, "both accounts read")
    await until(lambda: h.service.refresher.running == 0, "reads finished")
    await h.service.levers.reset_usage()
    runs.clock.advance(10)

    h = await runs.restart()
    await ask(h, key, "s2")
    await until(lambda: len(h.upstream.usage_reads) == 3, "a read right after reset-usage")
    assert h.upstream.usage_reads[-1] == "tok-a"
    await until(lambda: h.service.refresher.running == 0, "read finished")


# --- the forecast trail ------------------------------------------------------------------------


async def test_the_forecast_trail_reloads_so_the_forecast_is_the_same_after_a_restart(runs):
    h = await runs.start()
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429  # only the headers feed
    resets_at = runs.clock.now() + 4 * H
    for i in range(6):  # 5 % every 10 minutes: 30 %/h
        now = runs.clock.now()
        h.upstream.headers_for["tok-a"] = {
            P + "5h-utilization": str(0.30 + 0.05 * i),
            P + "5h-reset": str(int(resets_at)),
        }
        await ask(h, key, f"s{i}")
        await h.service._obs_flush
        assert h.service.pool.accounts[acc].gauges.five_hour.observed_at == now
        if i < 5:
            runs.clock.advance(10 * MIN)
    before = h.service.account_view(acc)["forecast"]
    assert before["five_hour"]["rate_per_hour"] == pytest.approx(0.30)

    runs.clock.advance(MIN)
    h = await runs.restart()
    after = h.service.account_view(acc)["forecast"]
    assert after == before


async def test_after_reset_usage_a_restart_brings_back_no_forecast_from_before_it(runs):
    """reset-usage voids the readings so far for forecasts (R-LANE-8); a restart must not load
    them back into the trail, while the chart keeps showing them (R-UI-11)."""
    h = await runs.start()
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    resets_at = runs.clock.now() + 4 * H
    for i in range(4):
        h.upstream.headers_for["tok-a"] = {
            P + "5h-utilization": str(0.30 + 0.05 * i),
            P + "5h-reset": str(int(resets_at)),
        }
        await ask(h, key, f"s{i}")
        await h.service._obs_flush
        runs.clock.advance(10 * MIN)
    await h.service.levers.reset_usage()
    runs.clock.advance(MIN)
    h.upstream.headers_for["tok-a"] = {
        P + "5h-utilization": "0.48",
        P + "5h-reset": str(int(resets_at)),
    }
    await ask(h, key, "after-reset")  # one fresh reading: too little for a forecast
    await h.service._obs_flush
    assert h.service.account_view(acc)["forecast"] == {}

    h = await runs.restart()
    assert h.service.usage_trail.points(acc, "five_hour") == [(runs.clock.now(), 0.48)]
    assert h.service.account_view(acc)["forecast"] == {}
    chart = await h.service.usage_history(acc, runs.clock.now() - H)
    assert [u for _, u in chart["five_hour"]] == pytest.approx([0.30, 0.35, 0.40, 0.45, 0.48])
