"""Mixed-member load with one bad request in every batch (R-FT-2): every good request has its
record, under the member who sent it; `/healthz` reports no record dropped."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from sublane_desktop.store.models import RecordRow, User
from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply

CLAUDE = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}
CHAT = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "x"}]}
BATCHES = 8


def bad_request(n: int) -> tuple[str, bytes]:
    """Something odd a client (or, last, an upstream) can send, one kind per batch."""
    kinds = [
        ("/v1/messages", json.dumps({**CLAUDE, "model": "claude-\ud800"}).encode()),
        ("/v1/messages", json.dumps({**CLAUDE, "model": "claude-sonnet-4-5\u0000"}).encode()),
        (
            "/v1/chat/completions",
            b'{"model": "claude-sonnet-4-5", "messages": ' + b"[" * 200 + b"]" * 200 + b"}",
        ),
        ("/v1/responses", b'{"model": 1e999, "input": {"\\u0000": [null, true]}}'),
    ]
    return kinds[n % len(kinds)]


async def test_every_good_request_has_its_record(harness):
    h = harness
    await h.add_account("a", "tok-a", limit=8)
    # Chat Completions clients are not Claude Code: an API key serves them (R-WF-2).
    await h.add_account("b", "sk-ant-api03-b", limit=8, api_key=True)
    alice = await h.create_key("alice", user="alice")
    bob = await h.create_key("bob", user="bob")
    # One upstream answer per batch reports token counts SQLite cannot hold.
    huge = {
        "input_tokens": 10**30,
        "output_tokens": 10**25,
        "cache_read_input_tokens": 1,
        "cache_creation_input_tokens": 1,
    }
    good: dict[str, str] = {}  # request id -> key

    async with aiohttp.ClientSession() as s:

        async def send(key: str, path: str, data: bytes, wanted: bool) -> None:
            async with s.post(
                h.url + path,
                data=data,
                headers={
                    "x-api-key": key,
                    **CLAUDE_CODE_HEADERS,
                    "content-type": "application/json",
                },
            ) as r:
                await r.read()
                if wanted:
                    assert r.status == 200, r.status
                    good[r.headers["X-Request-ID"]] = key
                else:
                    assert r.status == 400

        for n in range(BATCHES):
            h.upstream.script(None, Reply(usage=huge))
            path, data = bad_request(n)
            jobs = [
                send(
                    alice if i % 2 else bob,
                    "/v1/messages" if i % 3 else "/v1/chat/completions",
                    json.dumps(CLAUDE if i % 3 else CHAT).encode(),
                    True,
                )
                for i in range(6)
            ]
            jobs.append(send(alice, path, data, False))
            await asyncio.gather(*jobs)
        await h.service.flush_records()
        async with s.get(h.url + "/healthz") as r:
            health = await r.json()

    assert len(good) == BATCHES * 6
    rows = await h.service.store.read(
        lambda: {
            r.request_id: r.user_id
            for r in RecordRow.select(RecordRow.request_id, RecordRow.user_id)
        }
    )
    user_ids = await h.service.store.read(lambda: {u.name: u.id for u in User.select()})
    users = {alice: "alice", bob: "bob"}
    for request_id, key in good.items():
        assert rows[request_id] == user_ids[users[key]]  # stored, under its member
    assert health["records_dropped"] == 0 and h.service.request_log.dropped == 0
