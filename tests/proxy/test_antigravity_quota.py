"""Antigravity quota end to end (R-AG-4, R-GAUGE-3, R-LANE-1): `fetchAvailableModels` on the fake
upstream feeds the `claude` / `gemini_pro` / `gemini_flash` gauges of GET /api/accounts/runtime;
reads happen because of traffic or a person, at most one per account per poll floor, never
while the endpoint's own retry delay runs; an exhausted family refuses its models and only
those. Time is a fake clock."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import aiohttp
import anthropic
import pytest

from sublane_desktop.service import Service
from tests.conftest import Harness

ASK = [{"role": "user", "content": "hi"}]


async def until(predicate, what: str, seconds: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0)


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


@pytest.fixture
async def clocked(tmp_path, upstream, antigravity_upstream, secret_store, clock):
    service = Service(
        tmp_path / "data",
        port=0,
        secret_store=secret_store,
        clock=clock,
        env={
            "SUBLANE_ANTIGRAVITY_BASE_URL": antigravity_upstream.url,
            "SUBLANE_GOOGLE_OAUTH_BASE_URL": antigravity_upstream.url,
        },
    )
    await service.start()
    h = Harness(service, upstream)
    h.clock, h.google = clock, antigravity_upstream
    h.account_id = await h.add_antigravity_account("google")
    h.key = await h.create_key()
    h.clients = []
    yield h
    for client in h.clients:
        await client.close()
    await service.stop(drain_timeout=2)


def set_quota(h, **fractions) -> dict[str, float]:
    """Remaining fraction per model; each model resets at its own time (returned)."""
    resets = {}
    for i, (model, remaining) in enumerate(fractions.items()):
        resets[model] = h.clock.now() + 3600 * (i + 1)
        h.google.quota[model] = {
            "displayName": model,
            "quotaInfo": {"remainingFraction": remaining, "resetTime": iso(resets[model])},
        }
    return resets


def sdk(h) -> anthropic.AsyncAnthropic:
    client = anthropic.AsyncAnthropic(base_url=h.url, api_key=h.key, max_retries=0)
    h.clients.append(client)
    return client


async def runtime(h) -> dict:
    async with (
        aiohttp.ClientSession() as s,
        s.get(
            h.url + "/api/accounts/runtime",
            headers={"Authorization": f"Bearer {h.service.admin_token}"},
        ) as r,
    ):
        return (await r.json())["accounts"][0]


async def test_traffic_reads_fetch_available_models_into_family_gauges(clocked):
    h = clocked
    h.google.quota = {}
    resets = set_quota(
        h,
        **{
            "gemini-3.1-pro-high": 0.6,
            "gemini-3.1-pro-low": 0.8,
            "gemini-3-flash": 1.0,
            "claude-sonnet-4-5": 0.25,
        },
    )
    view = await runtime(h)
    assert set(view["gauges"]) == {"claude", "gemini_pro", "gemini_flash"}
    assert all(g["cold"] for g in view["gauges"].values())  # no traffic, no person: no read
    assert h.google.quota_reads == []

    await sdk(h).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    await until(lambda: h.google.quota_reads, "the traffic-triggered quota read")
    await until(
        lambda: not h.service.pool.accounts[h.account_id].gauges.claude.cold, "published gauges"
    )
    assert h.google.quota_reads == [("ya29.google", "proj-fake-1")]
    gauges = (await runtime(h))["gauges"]
    # a family reads as its tightest model: utilization = 1 - remainingFraction
    assert gauges["gemini_pro"]["utilization"] == pytest.approx(0.4)
    assert gauges["gemini_pro"]["resets_at"] == pytest.approx(resets["gemini-3.1-pro-high"])
    assert gauges["claude"]["utilization"] == pytest.approx(0.75)
    assert gauges["gemini_flash"]["utilization"] == pytest.approx(0.0)
    assert set(gauges["claude"]) == {"utilization", "resets_at", "observed_at", "cold", "stale"}
    assert not gauges["claude"]["cold"] and not gauges["claude"]["stale"]

    # more traffic within the poll floor reads nothing more, even once the gauges are stale
    h.clock.advance(200)
    await sdk(h).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    h.clock.advance(90)
    await sdk(h).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    assert len(h.google.quota_reads) == 1
    # past the floor, traffic reads again
    h.clock.advance(20)
    await sdk(h).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    await until(lambda: len(h.google.quota_reads) == 2, "the second read")


async def test_a_person_refreshing_reads_at_once(clocked):
    h = clocked
    assert h.service.refresh_quotas() == 1
    await until(lambda: h.google.quota_reads, "the person-triggered read")
    await until(lambda: not h.service.pool.accounts[h.account_id].gauges.gemini_pro.cold, "gauges")


async def test_an_exhausted_family_refuses_its_models_only(clocked):
    h = clocked
    set_quota(h, **{"gemini-3.1-pro-high": 0.0, "gemini-3.1-pro-low": 0.3})
    h.service.refresh_quotas()
    await until(
        lambda: h.service.pool.accounts[h.account_id].gauges.gemini_pro.exhausted(h.clock.now()),
        "an exhausted gemini_pro gauge",
    )
    served = len(h.google.seen)
    with pytest.raises(anthropic.RateLimitError) as err:
        await sdk(h).messages.create(model="gemini-3.1-pro-low", max_tokens=8, messages=ASK)
    assert err.value.body["error"]["code"] == "quota_exhausted"
    assert "gemini pro" in err.value.body["error"]["message"]
    assert 1 <= int(err.value.response.headers["retry-after"]) <= 120
    assert len(h.google.seen) == served  # refused before it went upstream
    # Flash and Claude models on the same account keep serving
    await sdk(h).messages.create(model="gemini-3-flash", max_tokens=8, messages=ASK)
    await sdk(h).messages.create(model="antigravity/claude-sonnet-4-6", max_tokens=8, messages=ASK)
    assert len(h.google.seen) == served + 2
    assert h.service.account_view(h.account_id)["state"] == "ok"
    # every family spent: the account as a whole reads quota_exhausted
    h.clock.advance(301)
    h.google.quota = {m: {"quotaInfo": {"remainingFraction": 0.0}} for m in h.google.quota}
    h.service.refresh_quotas()
    await until(
        lambda: h.service.account_view(h.account_id)["state"] == "quota_exhausted",
        "an exhausted account",
    )


async def test_a_rate_limited_quota_read_waits_out_its_retry_delay(clocked):
    h = clocked
    h.google.quota_status = 429  # answers RetryInfo 30s
    h.service.refresh_quotas()
    await until(lambda: h.google.quota_reads, "the first read")
    await until(lambda: not h.service.refresher._running, "the read to finish")
    assert h.service.refresh_quotas() == 0  # a person asking does not override it
    h.clock.advance(31)
    h.google.quota_status = 200
    assert h.service.refresh_quotas() == 1
    await until(lambda: len(h.google.quota_reads) == 2, "the read after the delay")


async def test_models_and_verify_ask_fetch_available_models(clocked):
    """R-AG-5 / R-AG-6 plumbing for Antigravity: /v1/models lists what the login can use, and
    verify is the same one cheap call."""
    h = clocked
    h.google.quota = {"gemini-3.1-pro-high": {}, "claude-sonnet-4-5": {}}
    async with (
        aiohttp.ClientSession() as s,
        s.get(h.url + "/v1/models", headers={"Authorization": f"Bearer {h.key}"}) as r,
    ):
        listed = [m["id"] for m in (await r.json())["data"]]
    assert listed == ["gemini-3.1-pro-high", "claude-sonnet-4-5"]
    assert h.google.quota_reads == [("ya29.google", "proj-fake-1")]
    account = h.service.pool.accounts[h.account_id]
    assert (await h.service.discovery.verify(account))["result"] == "ok"
    h.google.expired.add("ya29.google")  # refresh token unknown upstream: the login is gone
    assert (await h.service.discovery.verify(account))["result"] == "auth_failed"
