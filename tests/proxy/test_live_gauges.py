"""R-GAUGE-2: the scheduler sees a response's quota readings before it admits the next
request. Black-box through the real proxy and the strict fakes: a response says a window is
over its ceiling, and the next request, sent at once, goes to another account.

The save of header readings is batched (`OBSERVATION_LINGER_S`); these tests stretch that
batch to a minute, so a scheduler that waited for the save would still see cold gauges."""

from __future__ import annotations

import anthropic
import pytest

from sublane_desktop.service import quota as quota_feed
from tests.fake_codex import CodexReply, Window, window_headers
from tests.fake_upstream import CLAUDE_CODE_HEADERS
from tests.openai_helpers import oai
from tests.proxy.test_quota_e2e import FABLE, MAIN, H, P
from tests.proxy.test_quota_e2e import clocked as clocked  # the fixture this module uses


@pytest.fixture(autouse=True)
def slow_saves(monkeypatch):
    monkeypatch.setattr(quota_feed, "OBSERVATION_LINGER_S", 60.0)


def sdk(h, key):
    return anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, timeout=30, default_headers=CLAUDE_CODE_HEADERS
    )


def claude_headers(clock, five=0.1, week=0.1, fable=0.1):
    now = clock.now()
    return {
        P + "5h-utilization": str(five),
        P + "5h-reset": str(int(now + 4 * H)),
        P + "7d-utilization": str(week),
        P + "7d-reset": str(int(now + 100 * H)),
        P + "7d_oi-utilization": str(fable),
        P + "7d_oi-reset": str(int(now + 50 * H)),
    }


@pytest.mark.parametrize(
    ("window", "body"),
    [
        ({"fable": 0.99}, FABLE),  # Fable ceiling 0.98
        ({"five": 0.95}, MAIN),  # 5h ceiling 0.90
        ({"week": 0.995}, MAIN),  # 7d ceiling 0.99
    ],
    ids=["fable", "five_hour", "seven_day"],
)
async def test_a_claude_response_over_a_ceiling_moves_the_very_next_request(clocked, window, body):
    h = clocked
    await h.add_account("a", "tok-a")
    await h.add_account("b", "tok-b")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429  # no usage poll: only the response's headers tell
    h.upstream.headers_for["tok-a"] = claude_headers(h.clock, **window)
    h.upstream.headers_for["tok-b"] = claude_headers(h.clock)
    client = sdk(h, key)
    await client.messages.create(**body)  # both cold: a serves, and says it is over
    await client.messages.create(**body)  # sent at once, long before any save
    assert h.upstream.tokens_served() == ["tok-a", "tok-b"]


@pytest.mark.parametrize(
    "windows",
    [
        [Window(95, 300, 1800003600), Window(40, 10080, 1800300000)],  # 5h at 95% (0.90)
        [Window(20, 300, 1800003600), Window(99.5, 10080, 1800300000)],  # 7d at 99.5% (0.99)
    ],
    ids=["primary_5h", "secondary_7d"],
)
async def test_a_codex_response_over_a_ceiling_moves_the_very_next_request(
    clocked_codex_harness, windows
):
    h = clocked_codex_harness
    await h.add_codex_account("a", "tok-a")
    await h.add_codex_account("b", "tok-b")
    key = await h.create_key()
    h.codex.usage_for["*"] = 429
    h.codex.script("tok-a", CodexReply(quota=False, headers=window_headers("codex", windows)))
    client = oai(h, key)
    await client.responses.create(model="gpt-5.4", input="hi")
    await client.responses.create(model="gpt-5.4", input="hi")
    assert [s.token for s in h.codex.seen] == ["tok-a", "tok-b"]


async def test_readings_that_gate_at_once_are_still_saved_by_stop(clocked):
    """The batch behind the gate is not lost when the service stops inside its linger."""
    from sublane_desktop.store import quota as quota_store

    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    h.upstream.headers_for["tok-a"] = claude_headers(h.clock, five=0.66)
    await sdk(h, key).messages.create(**MAIN)
    assert h.service.pool.accounts[acc].gauges.five_hour.utilization == 0.66
    store = h.service.store
    await h.service.quota.save_pending()
    found = await store.read(quota_store.load_observations)
    assert {o.window: o.utilization for o in found[acc]}["five_hour"] == 0.66


def told(h, account_id: int) -> list[int]:
    """The accounts.gauges events for one account (what makes the open windows redraw)."""
    seen: list[int] = []
    h.service.bus.subscribe(
        "accounts.gauges",
        lambda _topic, e: seen.append(e["account_id"]) if e["account_id"] == account_id else None,
    )
    return seen


async def test_readings_of_several_responses_in_one_batch_are_all_saved_and_told_once(clocked):
    from sublane_desktop.store import quota as quota_store

    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    seen = told(h, acc)
    client = sdk(h, key)
    now = h.clock.now()
    h.upstream.headers_for["tok-a"] = {
        P + "5h-utilization": "0.3",
        P + "5h-reset": str(int(now + 4 * H)),
    }
    await client.messages.create(**MAIN)
    h.upstream.headers_for["tok-a"] = {
        P + "7d-utilization": "0.4",
        P + "7d-reset": str(int(now + 100 * H)),
    }
    await client.messages.create(**MAIN)  # within the same batch
    await h.service.quota.save_pending()
    found = await h.service.store.read(quota_store.load_observations)
    assert {o.window: o.utilization for o in found[acc]} == {"five_hour": 0.3, "seven_day": 0.4}
    assert seen == [acc]  # one redraw for the batch


async def test_a_response_s_readings_are_saved_and_told_without_a_stop(clocked, monkeypatch):
    import asyncio

    from sublane_desktop.store import quota as quota_store

    monkeypatch.setattr(quota_feed, "OBSERVATION_LINGER_S", 0.01)
    h = clocked
    acc = await h.add_account("a", "tok-a")
    key = await h.create_key()
    h.upstream.usage_for["*"] = 429
    h.upstream.headers_for["tok-a"] = claude_headers(h.clock, five=0.55)
    redrawn = asyncio.Event()
    h.service.bus.subscribe("accounts.gauges", lambda _topic, _e: redrawn.set())
    await sdk(h, key).messages.create(**MAIN)
    await asyncio.wait_for(redrawn.wait(), 10)
    found = await h.service.store.read(quota_store.load_observations)
    assert {o.window: o.utilization for o in found[acc]}["five_hour"] == 0.55


async def test_claude_traffic_starts_reads_of_stale_claude_accounts_only(clocked_codex_harness):
    """R-GAUGE-3: a response through an account refreshes stale accounts of its own provider;
    a stale Codex account waits for Codex traffic (or a person) instead."""
    import asyncio

    h = clocked_codex_harness
    await h.add_account("work", "tok-work")
    await h.add_codex_account("cx", "tok-cx")
    key = await h.create_key()
    await sdk(h, key).messages.create(**MAIN)
    await asyncio.gather(*h.service.quota.refresher._running.values(), return_exceptions=True)
    assert "tok-work" in h.upstream.usage_reads
    assert h.codex.usage_reads == []
