"""GET /v1/models asks the upstreams (R-AG-5): per group, ten-minute memory, static fallback,
a metadata operation on the global cap (R-POOL-11). The clients are the real SDKs."""

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
    await h.add_account("work", "tok-work")
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
    await h.add_account("work", "tok-work")
    h.upstream.model_ids = 500
    key = await h.create_key()
    page = await anthropic.AsyncAnthropic(base_url=h.url, api_key=key, max_retries=0).models.list()
    assert [m.id for m in page.data] == list(STATIC_MODELS["anthropic"])


async def test_a_full_global_cap_lists_the_menu_without_asking(h):
    await h.add_account("work", "tok-work")
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
    await h.add_account("work", "tok-work")
    await h.add_codex_account("lab", "tok-lab", group="lab")
    default_key = await h.create_key("a")
    lab_key = await h.create_key("b", group="lab")
    assert await ids(h, default_key) == h.upstream.model_ids
    assert await ids(h, lab_key) == h.codex.model_ids
