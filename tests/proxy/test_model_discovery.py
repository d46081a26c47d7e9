"""GET /v1/models asks the upstreams (R-AG-5): per group, ten-minute memory, static fallback,
a metadata operation on the global cap (R-POOL-11). The clients are the real SDKs.

Only with credentials the upstream accepts for the call (R-WF-3): Anthropic's model list takes
API keys, so a subscription login lists the static catalog and is verified by its usage
endpoint, and no metadata call refreshes a token that is not about to expire."""

from __future__ import annotations

import anthropic
import openai
import pytest

from sublane_desktop.core.catalog import CACHE_SECONDS, STATIC_MODELS


@pytest.fixture
def h(clocked_codex_harness):
    return clocked_codex_harness


async def ids(h, key: str) -> list[str]:
    client = openai.AsyncOpenAI(base_url=h.url + "/v1", api_key=key, max_retries=0)
    return [m.id async for m in client.models.list()]


async def test_the_list_is_what_each_upstream_serves_and_is_kept_ten_minutes(h):
    await h.add_account("work", "tok-work", api_key=True)
    await h.add_codex_account("sub", "tok-sub")
    key = await h.create_key()
    listed = await ids(h, key)
    assert listed == h.upstream.model_ids + h.codex.model_ids  # new upstream models show up
    assert h.upstream.models_reads == ["tok-work"] and h.codex.models_reads == ["tok-sub"]
    h.upstream.model_ids = ["claude-next-7"]
    assert await ids(h, key) == listed  # within ten minutes: no new ask
    assert len(h.upstream.models_reads) == 1
    h.clock.advance(CACHE_SECONDS)
    assert "claude-next-7" in await ids(h, key)
    assert len(h.upstream.models_reads) == 2
    assert h.service.pool.metadata_in_flight == 0 and h.service.pool.in_flight == 0


async def test_an_upstream_that_cannot_say_gives_the_static_menu(h):
    await h.add_account("work", "tok-work", api_key=True)
    h.upstream.model_ids = 500
    key = await h.create_key()
    page = await anthropic.AsyncAnthropic(base_url=h.url, api_key=key, max_retries=0).models.list()
    assert [m.id for m in page.data] == list(STATIC_MODELS["anthropic"])


async def test_a_full_global_cap_lists_the_menu_without_asking(h):
    await h.add_account("work", "tok-work", api_key=True)
    key = await h.create_key()
    pool = h.service.pool
    taken = 0
    while pool.try_metadata_slot():
        taken += 1
    try:
        assert await ids(h, key) == list(STATIC_MODELS["anthropic"])
        assert h.upstream.models_reads == []
    finally:
        for _ in range(taken):
            pool.release_metadata_slot()


async def test_each_group_sees_only_its_own_providers(h):
    await h.add_account("work", "tok-work", api_key=True)
    await h.add_codex_account("lab", "tok-lab", group="lab")
    default_key = await h.create_key("a")
    lab_key = await h.create_key("b", group="lab")
    assert await ids(h, default_key) == h.upstream.model_ids
    assert await ids(h, lab_key) == h.codex.model_ids


async def test_a_subscription_login_lists_the_static_catalog_without_asking(h):
    """R-WF-3: /v1/models refuses OAuth tokens; listing every minute must not ask it, and must
    not refresh (and so rotate) the login's token on the refusal."""
    await h.add_account("sub", "sk-ant-oat01-sub")
    key = await h.create_key()
    for _ in range(3):
        assert await ids(h, key) == list(STATIC_MODELS["anthropic"])
        h.clock.advance(CACHE_SECONDS)
    assert h.upstream.models_reads == [] and h.upstream.refresh_calls == []
    assert h.service.pool.metadata_in_flight == 0


async def test_an_api_key_in_the_group_asks_for_the_subscription_login_too(h):
    await h.add_account("sub", "sk-ant-oat01-sub")  # the older account: asked first before
    await h.add_account("plain", "sk-ant-api03-plain", api_key=True)
    key = await h.create_key()
    assert await ids(h, key) == h.upstream.model_ids
    assert h.upstream.models_reads == ["sk-ant-api03-plain"]


async def test_verify_of_a_subscription_login_reads_its_usage_endpoint(h):
    account_id = await h.add_account("sub", "sk-ant-oat01-sub")
    account = h.service.pool.accounts[account_id]
    verdict = await h.service.discovery.verify(account)
    assert (verdict["result"], verdict["detail"]) == ("ok", "the credential works")
    assert h.upstream.usage_reads == ["sk-ant-oat01-sub"]
    assert h.upstream.models_reads == [] and h.upstream.refresh_calls == []
    # refused, with an expiry hours away: that is the answer, not a reason to rotate the token
    h.upstream.expired.add("sk-ant-oat01-sub")
    h.upstream.refresh_grants["rt-sub"] = ("sk-ant-oat01-new", "rt-new")
    assert (await h.service.discovery.verify(account))["result"] == "auth_failed"
    assert h.upstream.refresh_calls == [] and h.upstream.models_reads == []


async def test_verify_refreshes_a_token_about_to_expire_once_before_asking(h):
    account_id = await h.add_account("sub", "sk-ant-oat01-old")
    account = h.service.pool.accounts[account_id]
    h.upstream.refresh_grants["rt-sub"] = ("sk-ant-oat01-new", "rt-new")
    h.clock.advance(4_000_000_000 - h.clock.now() - 60)  # a minute before it expires
    assert (await h.service.discovery.verify(account))["result"] == "ok"
    assert [c["refresh_token"] for c in h.upstream.refresh_calls] == ["rt-sub"]
    assert h.upstream.usage_reads == ["sk-ant-oat01-new"]
    # the next one spends the rotated refresh token; the spent one is never offered again
    h.upstream.refresh_grants["rt-new"] = ("sk-ant-oat01-newer", "rt-newer")
    h.clock.advance(28_800 - 60)
    assert (await h.service.discovery.verify(account))["result"] == "ok"
    assert [c["refresh_token"] for c in h.upstream.refresh_calls] == ["rt-sub", "rt-new"]
    assert h.upstream.usage_reads[-1] == "sk-ant-oat01-newer"


async def test_an_api_key_is_still_verified_by_the_model_list(h):
    account_id = await h.add_account("plain", "sk-ant-api03-plain", api_key=True)
    account = h.service.pool.accounts[account_id]
    assert (await h.service.discovery.verify(account))["result"] == "ok"
    assert h.upstream.models_reads == ["sk-ant-api03-plain"] and h.upstream.usage_reads == []
