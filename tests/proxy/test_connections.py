"""What the server holds for clients (R-FT-12): half-open connections are dropped, the number
of connections is bounded, a revoked key is refused the moment revocation returns — and the
server keeps serving through all of it."""

from __future__ import annotations

import asyncio
import threading
from urllib.parse import urlsplit

import aiohttp
import pytest

from sublane_desktop.proxy.connections import HEADER_DEADLINE_S, MAX_CONNECTIONS
from sublane_desktop.store import repositories as repo
from tests.fake_upstream import CLAUDE_CODE_HEADERS

CLAUDE = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}


@pytest.fixture
async def ready(harness):
    await harness.add_account("work", limit=8)
    return harness, await harness.create_key()


def gate(h):
    return h.service._server.site.gate


async def serves(h, key) -> None:
    async with (
        aiohttp.ClientSession() as s,
        s.post(
            h.url + "/v1/messages", json=CLAUDE, headers={"x-api-key": key, **CLAUDE_CODE_HEADERS}
        ) as r,
    ):
        assert r.status == 200


async def half_open(h) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A client that starts a request and never finishes its headers."""
    parts = urlsplit(h.url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    writer.write(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: sl-")
    await writer.drain()
    return reader, writer


async def test_the_defaults_are_30_seconds_and_512_connections(ready):
    h, _ = ready
    assert (gate(h).header_deadline, gate(h).limit) == (HEADER_DEADLINE_S, MAX_CONNECTIONS)
    assert (HEADER_DEADLINE_S, MAX_CONNECTIONS) == (30.0, 512)


async def test_a_client_that_never_finishes_its_headers_is_dropped(ready):
    h, key = ready
    gate(h).header_deadline = 0.5
    reader, writer = await half_open(h)
    try:
        assert await asyncio.wait_for(reader.read(), 10) == b""  # the server hung up
    finally:
        writer.close()
    assert gate(h).dropped_slow == 1
    await serves(h, key)
    assert gate(h).dropped_slow == 1  # a real request is never cut


async def test_a_slow_but_complete_request_and_a_long_answer_are_not_cut(ready):
    h, key = ready
    gate(h).header_deadline = 0.5
    from tests.fake_upstream import Reply

    h.upstream.script(None, Reply(kind="json", delay_first=1.0))  # answer after the deadline
    await serves(h, key)
    assert gate(h).dropped_slow == 0


async def test_at_most_the_limit_of_connections_is_held_and_the_server_keeps_serving(ready):
    h, key = ready
    gate(h).limit = 6
    held = [await half_open(h) for _ in range(6)]
    try:
        assert gate(h).open == 6
        reader, writer = await half_open(h)  # one too many: closed on arrival
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        assert gate(h).open == 6 and gate(h).refused >= 1
        _, first = held.pop()
        first.close()
        deadline = asyncio.get_running_loop().time() + 10
        while gate(h).open != 5:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0)
        await serves(h, key)  # a freed place serves again
    finally:
        for _, writer in held:
            writer.close()


async def test_a_revoked_key_is_refused_even_by_a_lookup_already_under_way(ready, monkeypatch):
    """A key lookup reads the database while `key revoke` commits and returns: the lookup's
    old answer must neither let the request in nor go back into the cache (R-FT-12)."""
    h, key = ready
    await serves(h, key)
    h.service.catalog._identities.clear()  # the next lookup goes to the database
    loop = asyncio.get_running_loop()
    reading, go = asyncio.Event(), threading.Event()
    real = repo.identify_key
    calls = {"n": 0}

    def slow_identify(k):  # runs on the reader thread
        found = real(k)
        calls["n"] += 1
        if calls["n"] == 1:
            loop.call_soon_threadsafe(reading.set)
            go.wait(10)
        return found

    monkeypatch.setattr(repo, "identify_key", slow_identify)

    async def request() -> int:
        async with (
            aiohttp.ClientSession() as s,
            s.post(
                h.url + "/v1/messages",
                json=CLAUDE,
                headers={"x-api-key": key, **CLAUDE_CODE_HEADERS},
            ) as r,
        ):
            return r.status

    pending = asyncio.ensure_future(request())
    await reading.wait()  # the lookup has read "valid" and is about to answer
    await h.service.revoke_key("test")  # revocation returns...
    go.set()
    assert await pending == 401  # ...so this request, authenticated after it, is refused
    assert await request() == 401
    assert len(h.upstream.seen) == 1  # only the request before the revocation went upstream
