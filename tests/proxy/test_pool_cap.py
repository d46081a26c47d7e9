"""The global cap (R-POOL-1) reaches as far as the server holds client connections: a team's
shared server with many accounts is not held to 64 requests at once."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from sublane_desktop.core.pool import MAX_CAP
from sublane_desktop.proxy.connections import MAX_CONNECTIONS
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply
from tests.openai_helpers import until

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "stream": True,
    "messages": [{"role": "user", "content": "x"}],
}
HEADERS = {
    **CLAUDE_CODE_HEADERS,
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "oauth-2025-04-20",
}


async def test_nine_logins_serve_72_streams_at_once_under_a_cap_of_80(harness):
    h = harness
    await h.service.update_settings({"pool.cap": 80})  # refused while the cap stopped at 64
    for n in range(9):
        await h.add_account(f"login-{n}", limit=8)
    key = await h.create_key()
    gate = asyncio.Event()
    h.upstream.default = Reply(kind="sse", gate=gate)

    async def stream(session: aiohttp.ClientSession) -> int:
        headers = {**HEADERS, "Authorization": f"Bearer {key}"}
        async with session.post(h.url + "/v1/messages", json=BODY, headers=headers) as r:
            await r.read()
            return r.status

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        streams = [asyncio.create_task(stream(session)) for _ in range(72)]
        await until(
            lambda: sum(h.upstream.in_flight.values()) == 72, "72 streams upstream at once", 30
        )
        gate.set()
        assert await asyncio.gather(*streams) == [200] * 72


@pytest.mark.parametrize("cap", [0, MAX_CAP + 1])
async def test_a_cap_outside_the_range_is_refused_in_words(harness, cap):
    with pytest.raises(ValueError, match=f"pool.cap must be an integer from 1 to {MAX_CAP}"):
        await harness.service.update_settings({"pool.cap": cap})
    assert harness.service.pool.cap == 8


def test_the_cap_stops_where_the_server_stops_holding_connections():
    assert MAX_CAP == MAX_CONNECTIONS
