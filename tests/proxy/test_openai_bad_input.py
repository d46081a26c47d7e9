"""Bad input and hostile clients on the OpenAI-side routes: clear errors in the OpenAI shape,
no leaked leases, no records for what never reached scheduling, and the server keeps serving.
Ends with a mixed-protocol stress run (HTTP, SSE, chat, WebSocket, cancellations)."""

from __future__ import annotations

import asyncio
import json
import random

import aiohttp
import pytest

from sublane_desktop.proxy import relay
from tests.fake_codex import CodexReply
from tests.fake_upstream import Reply
from tests.openai_helpers import oai, records, until


@pytest.fixture
async def ready(codex_harness):
    await codex_harness.add_codex_account("sub", "tok-sub")
    await codex_harness.add_account(
        "claude", "tok-claude", api_key=True
    )  # serves any client (R-WF-2)
    return codex_harness, await codex_harness.create_key()


async def still_serves(h, key):
    response = await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    assert response.output_text


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/responses/compact", "/v1/chat/completions"])
@pytest.mark.parametrize(
    "data, ctype, status, needle",
    [
        (b"{not json", "application/json", 400, "not valid JSON"),
        (b"", "application/json", 400, "empty"),
        (b"[1]", "application/json", 400, "JSON object"),
        (b'{"model":"gpt-5.4"}', "text/plain", 415, "Content-Type"),
    ],
)
async def test_bad_bodies(ready, path, data, ctype, status, needle):
    h, key = ready
    async with aiohttp.ClientSession() as s:
        async with s.post(
            h.url + path,
            data=data,
            headers={"Content-Type": ctype, "Authorization": f"Bearer {key}"},
        ) as r:
            body = await r.json()
            assert r.status == status
    assert needle in body["error"]["message"] and body["error"]["param"] is None
    assert records(h) == [] and h.codex.seen == [] and h.service.pool.in_flight == 0
    await still_serves(h, key)


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/responses", {"model": "gpt-5.4", "input": "x", "stream": True}),
        (
            "/v1/chat/completions",
            {
                "model": "claude-sonnet-4-5",
                "stream": True,
                "messages": [{"role": "user", "content": "x"}],
            },
        ),
    ],
)
async def test_a_client_that_never_reads_is_let_go(ready, monkeypatch, path, body):
    """The stream is bounded by the write-stall limit, not by the client's patience."""
    h, key = ready
    monkeypatch.setattr(relay, "WRITE_STALL_SECONDS", 0.3)
    if path == "/v1/responses":
        h.codex.script(None, CodexReply(events=300, pad=60_000))  # ~18 MB
    else:
        h.upstream.script(None, Reply(kind="sse", text="y" * 18_000_000, events=300))
    payload = json.dumps(body).encode()
    _reader, writer = await asyncio.open_connection("127.0.0.1", h.service.port)
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    await writer.drain()
    try:
        await until(lambda: len(records(h)) == 1, "the stalled stream to be dropped", 30)
        assert (records(h)[0].outcome, records(h)[0].error_code) == ("canceled", "client_stalled")
        assert h.service.pool.in_flight == 0
    finally:
        writer.close()
    await still_serves(h, key)


async def test_stress_mixed_protocols_no_leaks_and_limits_hold(codex_harness):
    h = codex_harness
    rng = random.Random(11)
    limits = {"tok-a": 1, "tok-b": 2}
    for token, limit in limits.items():
        await h.add_codex_account(token[-1], token, limit=limit)
    key = await h.create_key()
    replies = []
    for _ in range(300):
        roll = rng.random()
        if roll < 0.04:
            replies.append(CodexReply(kind="drop"))
        elif roll < 0.08:
            replies.append(
                CodexReply(
                    status=429,
                    retry_after="1",
                    error_body={"error": {"type": "rate_limit_exceeded", "message": "slow down"}},
                )
            )
        else:
            replies.append(CodexReply(events=5, delay_between=0.001))
    h.codex.script(None, *replies)
    auth = {"Authorization": f"Bearer {key}"}

    async def http(i: int, session: aiohttp.ClientSession) -> None:
        path, body = rng.choice(
            [
                ("/v1/responses", {"model": "gpt-5.4", "input": "x", "stream": True}),
                ("/v1/responses", {"model": "gpt-5.4", "input": "x"}),
                (
                    "/v1/chat/completions",
                    {
                        "model": "gpt-5.4",
                        "stream": i % 2 == 0,
                        "messages": [{"role": "user", "content": "x"}],
                    },
                ),
            ]
        )
        headers = dict(auth, session_id=f"c-{i % 10}") if i % 4 == 0 else auth
        try:
            async with session.post(h.url + path, json=body, headers=headers) as r:
                await r.read()
        except aiohttp.ClientError:
            pass

    async def socket(i: int, session: aiohttp.ClientSession) -> None:
        try:
            async with session.ws_connect(h.url + "/v1/responses", headers=auth) as ws:
                for _ in range(3):
                    await ws.send_str(
                        json.dumps({"type": "response.create", "model": "gpt-5.4", "input": "x"})
                    )
                    while True:
                        msg = await ws.receive()
                        if msg.type != aiohttp.WSMsgType.TEXT:
                            return
                        kind = json.loads(msg.data)["type"]
                        if kind in ("response.completed", "response.failed", "error"):
                            break
        except aiohttp.ClientError:
            pass

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        tasks = [
            asyncio.ensure_future((socket if i % 5 == 0 else http)(i, session)) for i in range(100)
        ]
        for task in rng.sample(tasks, 20):
            for _ in range(rng.randint(0, 100)):
                await asyncio.sleep(0)
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    await until(lambda: h.service.pool.in_flight == 0, "every lease back", 10)
    assert all(a.in_flight == 0 for a in h.service.pool.accounts.values())
    for token, limit in limits.items():
        assert h.codex.max_in_flight[token] <= limit, (token, h.codex.max_in_flight)
    outcomes = {r.outcome for r in records(h)}
    assert "success" in outcomes and "rejected" in outcomes
