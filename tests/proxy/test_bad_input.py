"""Bad input gets a clear error in the route's own shape, changes nothing, and the server
keeps serving (issue: walking skeleton, "Bad input")."""

from __future__ import annotations

import asyncio

import aiohttp
import anthropic
import pytest

from tests.fake_upstream import CLAUDE_CODE_HEADERS, Reply

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}


async def post(h, *, data=None, json_body=None, headers=None, path="/v1/messages"):
    async with aiohttp.ClientSession() as s:
        async with s.post(h.url + path, data=data, json=json_body, headers=headers or {}) as r:
            return r.status, await r.json(content_type=None), r.headers


async def still_serves(h, key):
    c = anthropic.AsyncAnthropic(
        base_url=h.url, api_key=key, max_retries=0, default_headers=CLAUDE_CODE_HEADERS
    )
    msg = await c.messages.create(**BODY)
    assert msg.content[0].text


@pytest.fixture
async def ready(harness):
    await harness.add_account("work")
    return harness, await harness.create_key()


@pytest.mark.parametrize(
    "data, ctype, status, needle",
    [
        (b"{not json", "application/json", 400, "not valid JSON"),
        (b"", "application/json", 400, "empty"),
        (b"[1,2]", "application/json", 400, "JSON object"),
        (b'{"model":"x"}', "text/plain", 415, "Content-Type"),
        (
            b'{"model":"llama-3","max_tokens":1,"messages":[]}',
            "application/json",
            400,
            "unknown model",
        ),
        (b'{"max_tokens":1,"messages":[]}', "application/json", 400, "unknown model"),
    ],
)
async def test_bad_bodies(ready, data, ctype, status, needle):
    h, key = ready
    got, body, _headers = await post(
        h, data=data, headers={"content-type": ctype, "x-api-key": key}
    )
    assert got == status
    assert body["type"] == "error" and needle in body["error"]["message"]
    assert body["error"]["type"] in ("invalid_request_error", "request_too_large")
    assert h.upstream.seen == []  # nothing reached the upstream
    assert h.service.pool.in_flight == 0
    await still_serves(h, key)


async def test_body_over_the_cap_is_413(ready):
    h, key = ready
    huge = b'{"model":"claude-sonnet-4-5","pad":"' + b"x" * (33 * 1024 * 1024) + b'"}'
    status, body, _ = await post(
        h, data=huge, headers={"content-type": "application/json", "x-api-key": key}
    )
    assert status == 413 and body["error"]["type"] == "request_too_large"
    await still_serves(h, key)


@pytest.mark.parametrize(
    "auth",
    [
        {},
        {"x-api-key": "sl-nope"},
        {"Authorization": "Bearer sl-x"},
        {"Authorization": "Basic abc"},
    ],
)
async def test_missing_or_unknown_key_is_401_without_record(ready, auth):
    h, key = ready
    status, body, _ = await post(h, json_body=BODY, headers=auth)
    assert status == 401 and body["error"]["type"] == "authentication_error"
    assert h.upstream.seen == []
    assert [r for r in h.service.records] == []
    await still_serves(h, key)


async def test_revoked_key_is_401(ready):
    h, key = ready
    await post(
        h, json_body=BODY, headers={"x-api-key": key, **CLAUDE_CODE_HEADERS}
    )  # known and cached now
    await h.service.revoke_key("test")
    status, _body, _ = await post(
        h, json_body=BODY, headers={"x-api-key": key, **CLAUDE_CODE_HEADERS}
    )
    assert status == 401


@pytest.mark.parametrize("host", ["evil.example", "192.168.1.5:8765", ""])
async def test_foreign_host_is_refused(ready, host):
    h, key = ready
    status, _body, _ = await post(
        h, json_body=BODY, headers={"x-api-key": key, **CLAUDE_CODE_HEADERS, "Host": host or " "}
    )
    assert status == 403
    assert h.upstream.seen == []


async def test_foreign_origin_on_a_mutation_is_refused(ready):
    h, _ = ready
    async with aiohttp.ClientSession() as s:
        async with s.post(
            h.url + "/llmux/pause-account",
            json={"account": "work"},
            headers={
                "Authorization": f"Bearer {h.service.admin_token}",
                "Origin": "https://evil.example",
            },
        ) as r:
            assert r.status == 403
    assert h.service.pool.accounts[1].paused is False


async def test_client_disconnect_mid_stream_cancels_upstream_and_frees_the_slot(ready):
    h, key = ready
    gate = asyncio.Event()
    h.upstream.script(None, Reply(kind="sse", gate=gate))
    async with aiohttp.ClientSession() as s:
        resp = await s.post(
            h.url + "/v1/messages",
            json={**BODY, "stream": True},
            headers={"x-api-key": key, **CLAUDE_CODE_HEADERS},
        )
        await resp.content.readline()  # the stream has started
        assert h.service.pool.in_flight == 1
        resp.close()  # the client goes away mid-stream
    deadline = asyncio.get_running_loop().time() + 5
    while h.service.pool.in_flight or h.upstream.cancelled == 0:
        assert asyncio.get_running_loop().time() < deadline, "lease or upstream leaked"
        await asyncio.sleep(0)
    assert h.service.pool.accounts[1].in_flight == 0
    assert h.service.records[-1].outcome == "canceled"
    gate.set()
    await still_serves(h, key)
