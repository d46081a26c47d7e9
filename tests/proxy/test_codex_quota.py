"""Codex quota (issue 6 item 5, SPEC §5): x-codex-* headers feed the gauges on every response,
Codex traffic starts background wham/usage reads of stale accounts (two at a time, coalesced),
and a fresh exhausted observation excludes an account without counting as a failure."""

from __future__ import annotations

import asyncio

import openai
import pytest

from tests.openai_helpers import oai

EXHAUSTED = {
    "plan_type": "plus",
    "rate_limit": {
        "allowed": True,
        "limit_reached": True,
        "primary_window": {
            "used_percent": 100,
            "limit_window_seconds": 18000,
            "reset_after_seconds": 3600,
        },
        "secondary_window": {
            "used_percent": 40,
            "limit_window_seconds": 604800,
            "reset_at": 1_800_300_000,
        },
    },
}
HEALTHY = {
    "plan_type": "pro",
    "rate_limit": {
        "allowed": True,
        "limit_reached": False,
        "primary_window": {
            "used_percent": 12.5,
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


async def until(predicate, what: str, seconds: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0)


async def test_headers_feed_codex_gauges(codex_harness):
    h = codex_harness
    acc = await h.add_codex_account("sub", "tok-sub")
    key = await h.create_key()
    h.codex.usage_for["*"] = 429  # keep the poll out of this one
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    account = h.service.pool.accounts[acc]
    await until(lambda: not account.gauges.five_hour.cold, "header-fed 5h gauge")
    view = h.service.account_view(acc)["gauges"]
    assert view["five_hour"]["utilization"] == pytest.approx(0.25)
    assert view["fable"]["cold"] is True  # Codex has no Fable bucket


async def test_traffic_reads_wham_usage_of_stale_accounts_two_at_a_time(codex_harness):
    h = codex_harness
    ids = [await h.add_codex_account(f"c{i}", f"tok-{i}") for i in range(4)]
    key = await h.create_key()
    h.codex.usage_for["*"] = HEALTHY
    h.codex.usage_gate = asyncio.Event()
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")  # never waits for reads
    await until(lambda: h.codex.usage_in_flight == 2, "two reads in flight")
    h.service.refresh_quotas()  # duplicates coalesce into the running reads
    h.codex.usage_gate.set()
    await until(lambda: len(h.codex.usage_reads) == 4, "all four accounts read")
    assert h.codex.usage_max_in_flight == 2
    assert sorted(t for t, _ in h.codex.usage_reads) == ["tok-0", "tok-1", "tok-2", "tok-3"]
    assert all(
        acct == f"acct-c{i}"
        for (t, acct), i in zip(sorted(h.codex.usage_reads), range(4), strict=True)
    )
    await until(
        lambda: all(h.service.pool.accounts[i].gauges.seven_day.source is not None for i in ids),
        "gauges",
    )


async def test_limit_reached_excludes_while_fresh_and_is_not_a_failure(codex_harness):
    h = codex_harness
    spent = await h.add_codex_account("spent", "tok-spent")
    fine = await h.add_codex_account("fine", "tok-fine")
    key = await h.create_key()
    h.codex.usage_for["tok-spent"] = EXHAUSTED
    h.codex.usage_for["tok-fine"] = HEALTHY
    await asyncio.gather(
        *h.service.refresher.want(
            [h.service.pool.accounts[spent], h.service.pool.accounts[fine]], force=True
        )
    )
    view = h.service.account_view(spent)
    assert view["state"] == "quota_exhausted" and view["failure_streak"] == 0
    for _ in range(3):  # new selection avoids the exhausted account
        await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    assert set(h.codex.tokens_served()) == {"tok-fine"}
    # Clear cooldown does not erase subscription quota.
    await h.service.clear_cooldown("spent")
    assert h.service.account_view(spent)["state"] == "quota_exhausted"
    # A conversation already bound there gets quota_exhausted with a recheck hint.
    from sublane_desktop.core.affinity import conversation_digest

    h.service.pool.bindings[(1, conversation_digest("c:thread-x", "codex"))] = spent
    with pytest.raises(openai.RateLimitError) as err:
        await oai(h, key).responses.create(model="gpt-5.4", input="hi", prompt_cache_key="thread-x")
    assert err.value.body["code"] == "quota_exhausted"
    assert 1 <= int(err.value.response.headers["retry-after"]) <= 120
