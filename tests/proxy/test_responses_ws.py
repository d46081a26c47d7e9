"""GET /v1/responses as a WebSocket, with a real aiohttp WebSocket client: several turns per
connection, each with its own lease and record, continuation by previous_response_id, prewarm,
disconnects, bad frames and a client that stops reading."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from sublane_desktop.proxy import relay
from tests.fake_codex import CodexReply
from tests.fake_upstream import Reply
from tests.openai_helpers import count_releases, records, until


def create(model="gpt-5.4", text="hi", **extra):
    return {
        "type": "response.create",
        "model": model,
        "instructions": "Be brief.",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        ],
        **extra,
    }


async def turn(ws, message) -> list[dict]:
    """Send one message and collect events up to the turn's end (terminal event or error)."""
    await ws.send_str(json.dumps(message))
    events = []
    while True:
        msg = await asyncio.wait_for(ws.receive(), 5)
        assert msg.type == aiohttp.WSMsgType.TEXT, msg
        event = json.loads(msg.data)
        events.append(event)
        if event["type"] in (
            "response.completed",
            "response.incomplete",
            "response.failed",
            "error",
        ):
            return events


@pytest.fixture
async def ready(codex_harness):
    await codex_harness.add_codex_account("sub", "tok-sub")
    return codex_harness, await codex_harness.create_key()


def connect(session, h, key, **headers):
    return session.ws_connect(
        h.url + "/v1/responses", headers={"Authorization": f"Bearer {key}", **headers}
    )


async def test_turns_continue_by_previous_response_id(ready):
    h, key = ready
    releases = count_releases(h.service.pool)
    async with aiohttp.ClientSession() as s, connect(s, h, key, session_id="sess-ws") as ws:
        first = await turn(ws, create())
        assert first[0]["type"] == "response.created" and first[-1]["type"] == (
            "response.completed"
        )
        request_id = first[0]["request_id"]
        assert request_id.startswith("req_") and first[-1]["request_id"] == request_id
        assert "request_id" not in first[1]  # only created/completed/incomplete carry it
        response_id = first[-1]["response"]["id"]
        # Codex sends only what is new, pointing at the last response on the socket.
        second = await turn(ws, create(text="and more", previous_response_id=response_id))
        assert second[-1]["type"] == "response.completed"
        assert second[0]["request_id"] != request_id
    body = h.codex.seen[-1].body
    assert "previous_response_id" not in body
    texts = [(i.get("role"), i["content"][0]["text"]) for i in body["input"]]
    assert texts == [
        ("user", "hi"),
        ("assistant", "Hello from the fake Codex upstream."),
        ("user", "and more"),
    ]
    assert h.codex.seen[-1].headers["session_id"] == "sess-ws"
    assert [r.request_id for r in records(h)] == [request_id, second[0]["request_id"]]
    assert all(r.operation == "responses" and r.outcome == "success" for r in records(h))
    assert h.service.pool.in_flight == 0 and list(releases.values()) == [1, 1]


async def test_prewarm_is_answered_locally_without_a_record(ready):
    h, key = ready
    async with aiohttp.ClientSession() as s, connect(s, h, key) as ws:
        warm = await turn(ws, create(generate=False))
        assert [e["type"] for e in warm] == ["response.created", "response.completed"]
        assert h.codex.seen == [] and records(h) == []
        done = await turn(ws, create(text="go", previous_response_id=warm[-1]["response"]["id"]))
        assert done[-1]["type"] == "response.completed"
    body = h.codex.seen[-1].body
    assert [i["content"][0]["text"] for i in body["input"]] == ["hi", "go"]
    assert "generate" not in body and len(records(h)) == 1


async def test_unknown_previous_response_id_goes_upstream_unchanged(ready):
    h, key = ready
    async with aiohttp.ClientSession() as s, connect(s, h, key) as ws:
        await turn(ws, create(previous_response_id="resp_from_elsewhere"))
    assert h.codex.seen[-1].body["previous_response_id"] == "resp_from_elsewhere"


async def test_disconnect_mid_turn_releases_the_lease_once(ready):
    h, key = ready
    releases = count_releases(h.service.pool)
    gate = asyncio.Event()
    h.codex.script(None, CodexReply(gate=gate))
    async with aiohttp.ClientSession() as s:
        ws = await connect(s, h, key)
        await ws.send_str(json.dumps(create()))
        first = json.loads((await ws.receive()).data)
        assert first["type"] == "response.created"
        assert h.service.pool.in_flight == 1
        await ws.close()
    await until(
        lambda: h.service.pool.in_flight == 0 and h.codex.cancelled == 1,
        "the turn's lease and upstream to be let go",
    )
    await until(lambda: len(records(h)) == 1, "the record")
    assert list(releases.values()) == [1]
    assert (records(h)[0].outcome, records(h)[0].error_code) == ("canceled", "client_disconnected")
    gate.set()


async def test_abrupt_connection_loss_mid_turn(ready):
    h, key = ready
    gate = asyncio.Event()
    h.codex.script(None, CodexReply(gate=gate))
    session = aiohttp.ClientSession()
    ws = await connect(session, h, key)
    await ws.send_str(json.dumps(create()))
    await ws.receive()
    await session.close()  # no close frame: the TCP connection just goes
    await until(lambda: h.service.pool.in_flight == 0, "the lease to be released")
    await until(lambda: len(records(h)) == 1, "the record")
    assert records(h)[0].outcome == "canceled"
    gate.set()


async def test_bad_messages_get_clear_errors_and_the_socket_stays_usable(ready):
    h, key = ready
    async with aiohttp.ClientSession() as s, connect(s, h, key) as ws:

        async def refused(send) -> dict:
            await send
            event = json.loads((await asyncio.wait_for(ws.receive(), 5)).data)
            assert event["type"] == "error" and event["status"] == 400
            assert event["error"]["type"] == "invalid_request_error"
            return event

        assert "binary" in (await refused(ws.send_bytes(b"\x00\x01")))["message"]
        assert "not valid JSON" in (await refused(ws.send_str("{oops")))["message"]
        assert "JSON object" in (await refused(ws.send_str("[1]")))["message"]
        assert (
            "unsupported message type"
            in (await refused(ws.send_str(json.dumps({"type": "session.update"}))))["message"]
        )
        missing = {k: v for k, v in create().items() if k != "model"}
        assert "needs a model" in (await refused(ws.send_str(json.dumps(missing))))["message"]
        assert (
            "unknown model"
            in (await refused(ws.send_str(json.dumps(create(model="llama-3")))))["message"]
        )
        await ws.send_str(json.dumps({"type": "response.processed", "response_id": "x"}))
        done = await turn(ws, create())  # still serving, and the ack above said nothing
        assert done[0]["type"] == "response.created" and done[-1]["type"] == ("response.completed")
    assert len(records(h)) == 1 and h.service.pool.in_flight == 0


async def test_gateway_errors_carry_the_request_id_and_a_bounded_retry(ready):
    h, key = ready
    account = h.service.pool.accounts[1]
    account.cooldown_until = h.service.clock.now() + 90
    account.failure_streak = 1
    async with aiohttp.ClientSession() as s, connect(s, h, key) as ws:
        (error,) = await turn(ws, create())
        assert error["type"] == "error" and error["status"] == 429
        assert error["code"] == "account_cooling" and error["error"]["code"] == "account_cooling"
        assert error["request_id"].startswith("req_")
        assert 1 <= int(error["headers"]["retry-after"]) <= 90
        assert records(h)[-1].outcome == "rejected"
        assert records(h)[-1].request_id == error["request_id"]
        await h.service.resume(1)
        done = await turn(ws, create())
        assert done[-1]["type"] == "response.completed"


async def test_upstream_errors_arrive_as_error_events(ready):
    h, key = ready
    h.codex.script(
        None,
        CodexReply(
            status=429,
            error_body={
                "error": {
                    "type": "usage_limit_reached",
                    "message": "limit",
                    "resets_in_seconds": 60,
                }
            },
        ),
    )
    async with aiohttp.ClientSession() as s, connect(s, h, key) as ws:
        (error,) = await turn(ws, create())
        assert (error["status"], error["code"]) == (429, "usage_limit_reached")
        assert error["request_id"] == records(h)[-1].request_id
        assert 1 <= int(error["headers"]["retry-after"]) <= 60
    assert h.service.pool.in_flight == 0


async def test_unknown_upstream_events_pass_through(ready):
    h, key = ready
    h.codex.script(
        None,
        CodexReply(extra_events=[{"type": "codex.rate_limits", "rate_limits": {"primary": None}}]),
    )
    async with aiohttp.ClientSession() as s, connect(s, h, key) as ws:
        events = await turn(ws, create())
    assert events[2] == {
        "type": "codex.rate_limits",
        "sequence_number": 2,
        "rate_limits": {"primary": None},
    }


async def test_a_claude_model_on_the_socket(codex_harness):
    h = codex_harness
    await h.add_account("claude", "tok-claude", api_key=True)  # serves any client (R-WF-2)
    key = await h.create_key()
    h.upstream.script(
        None,
        Reply(
            blocks=[
                {"type": "text", "text": "Calling."},
                {"type": "tool_use", "id": "toolu_3", "name": "shell", "input": {"cmd": ["ls"]}},
            ]
        ),
    )
    async with aiohttp.ClientSession() as s, connect(s, h, key) as ws:
        events = await turn(
            ws,
            create(
                model="claude-sonnet-4-5",
                tools=[{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
            ),
        )
        final = events[-1]
        assert final["type"] == "response.completed" and final["request_id"].startswith("req_")
        assert [i["type"] for i in final["response"]["output"]] == ["message", "function_call"]
        follow = create(
            model="claude-sonnet-4-5", text="x", previous_response_id=final["response"]["id"]
        )
        follow["input"] = [
            {"type": "function_call_output", "call_id": "toolu_3", "output": "a.txt"}
        ]
        await turn(ws, follow)
    messages = h.upstream.seen[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][1]["type"] == "tool_use"
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_3", "content": "a.txt"}
    ]
    assert records(h)[-1].provider == "anthropic"


async def test_handshake_needs_a_key_and_an_upgrade(ready):
    h, key = ready
    async with aiohttp.ClientSession() as s:
        with pytest.raises(aiohttp.WSServerHandshakeError) as err:
            await s.ws_connect(h.url + "/v1/responses", headers={"Authorization": "Bearer no"})
        assert err.value.status == 401
        async with s.get(h.url + "/v1/responses", headers={"Authorization": f"Bearer {key}"}) as r:
            assert r.status == 426
            assert "WebSocket" in (await r.json())["error"]["message"]


async def test_a_socket_client_that_never_reads_is_let_go(ready, monkeypatch):
    h, key = ready
    monkeypatch.setattr(relay, "WRITE_STALL_SECONDS", 0.3)
    h.codex.script(None, CodexReply(events=300, pad=60_000))  # ~18 MB of deltas
    async with aiohttp.ClientSession() as s:
        ws = await connect(s, h, key)
        await ws.send_str(json.dumps(create()))
        await until(lambda: len(records(h)) == 1, "the stalled turn to be dropped", 20)
        assert (records(h)[0].outcome, records(h)[0].error_code) == ("canceled", "client_stalled")
        assert h.service.pool.in_flight == 0
        await ws.close()


async def test_an_incomplete_turn_carries_the_request_id(ready):
    """R-PX-7: response.incomplete is stamped like created/completed."""
    h, key = ready
    h.codex.script(None, CodexReply(terminal="incomplete"))
    async with aiohttp.ClientSession() as s, connect(s, h, key) as ws:
        events = await turn(ws, create())
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["request_id"] == events[0]["request_id"]
    assert events[-1]["request_id"].startswith("req_")
    await until(
        lambda: [r.request_id for r in records(h)] == [events[-1]["request_id"]],
        "the turn's record under the same id",
    )
