"""POST /v1/responses, /v1/responses/compact and GET /v1/models end to end: the real `openai`
SDK (async and sync) -> SubLane -> the fake Codex upstream (or the fake Anthropic one for a
Claude model)."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import anthropic
import openai
import pytest

from tests.fake_codex import CodexReply
from tests.fake_upstream import Reply
from tests.openai_helpers import count_releases, oai, raw_sse, records, until

INPUT = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]


@pytest.fixture
async def ready(codex_harness):
    await codex_harness.add_codex_account("sub", "tok-sub")
    return codex_harness, await codex_harness.create_key()


async def test_json_answer_through_a_subscription_account(ready):
    h, key = ready
    raw = await oai(h, key).responses.with_raw_response.create(model="gpt-5.4", input="hi")
    response = raw.parse()
    assert response.output_text == "Hello from the fake Codex upstream."
    assert response.usage.input_tokens == 20 and response.usage.output_tokens == 9
    assert raw.headers["x-request-id"].startswith("req_")
    assert raw.headers["x-codex-primary-used-percent"] == "25.0"  # quota headers pass back
    seen = h.codex.seen[-1]
    assert seen.path == "/responses" and seen.token == "tok-sub"
    assert seen.account_id == "acct-sub" and seen.headers["originator"] == "codex_cli_rs"
    assert seen.body["stream"] is True and seen.body["store"] is False  # what the backend needs
    assert key not in json.dumps(seen.headers)
    (record,) = records(h)
    assert (record.protocol, record.operation, record.provider) == (
        "openai-responses",
        "responses",
        "codex",
    )
    assert record.request_id == raw.headers["x-request-id"]
    assert (record.outcome, record.upstream_status) == ("success", 200)
    assert (record.input_tokens, record.output_tokens, record.cached_tokens) == (20, 9, 12)
    assert record.first_token_ms is not None and record.duration_ms >= record.first_token_ms


async def test_streaming_relays_events_in_order_with_session_headers(ready):
    h, key = ready
    client = oai(
        h,
        key,
        default_headers={
            "session_id": "sess-1",
            "session-id": "sess-1",
            "thread-id": "thr-1",
            "x-client-request-id": "cr-1",
            "x-codex-turn-state": "ts-client",
        },
    )
    async with client.responses.with_streaming_response.create(
        model="codex/gpt-5.4", input=INPUT, stream=True, prompt_cache_key="thr-1"
    ) as raw:
        assert raw.headers["x-codex-turn-state"] == "ts-client"  # echoed back within the turn
        kinds = []
        async for line in raw.iter_lines():
            if line.startswith("event: "):
                kinds.append(line[7:])
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") == 3
    seen = h.codex.seen[-1]
    for name, value in (
        ("session_id", "sess-1"),
        ("session-id", "sess-1"),
        ("thread-id", "thr-1"),
        ("x-client-request-id", "cr-1"),
        ("x-codex-turn-state", "ts-client"),
    ):
        assert seen.headers[name] == value
    assert seen.body["model"] == "gpt-5.4"  # the provider prefix is stripped
    assert seen.body["prompt_cache_key"] == "thr-1"
    assert len(h.service.pool.bindings) == 1  # a session is a conversation (R-POOL-4)


async def test_sdk_stream_events_and_tool_calls(ready):
    h, key = ready
    h.codex.script(
        None,
        CodexReply(
            text="", reasoning="Need the weather.", tool_calls=[("weather", '{"city":"Oslo"}')]
        ),
    )
    stream = await oai(h, key).responses.create(
        model="gpt-5.4",
        input="weather?",
        stream=True,
        tools=[{"type": "function", "name": "weather", "parameters": {"type": "object"}}],
    )
    events = [event async for event in stream]
    final = events[-1].response
    assert events[-1].type == "response.completed"
    call = next(item for item in final.output if item.type == "function_call")
    assert (call.name, call.arguments, call.call_id) == (
        "weather",
        '{"city":"Oslo"}',
        "call_fake_1",
    )
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert deltas == '{"city":"Oslo"}'
    # The tool's answer goes back as the next turn's input.
    await oai(h, key).responses.create(
        model="gpt-5.4",
        input=[
            *INPUT,
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": "weather",
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "12C"},
        ],
    )
    assert h.codex.seen[-1].body["input"][-1] == {
        "type": "function_call_output",
        "call_id": "call_fake_1",
        "output": "12C",
    }
    assert records(h)[0].first_token_ms is not None  # a reasoning-summary delta counts


async def test_sync_client(ready):
    h, key = ready

    def call() -> str:
        client = openai.OpenAI(base_url=h.url + "/v1", api_key=key, max_retries=0)
        with client.responses.stream(model="gpt-5.4", input="hi") as stream:
            return stream.get_final_response().output_text

    assert await asyncio.to_thread(call) == "Hello from the fake Codex upstream."


async def test_api_key_account_goes_to_the_platform_api(codex_harness):
    h = codex_harness
    await h.add_codex_account("plain", "sk-proj-plain", api_key=True)
    key = await h.create_key()
    await oai(h, key).responses.create(model="gpt-5.4", input="hi", max_output_tokens=50)
    seen = h.codex.seen[-1]
    assert seen.path == "/v1/responses" and seen.token == "sk-proj-plain"
    assert seen.body["max_output_tokens"] == 50  # the platform API takes it
    assert "chatgpt-account-id" not in {k.lower() for k in seen.headers}


async def test_subscription_requests_lose_what_the_backend_refuses(ready):
    h, key = ready
    response = await oai(h, key).responses.create(
        model="gpt-5.4", input="hi", max_output_tokens=50, store=True
    )
    assert response.status == "completed"
    assert "max_output_tokens" not in h.codex.seen[-1].body


async def test_quota_headers_reach_the_service(ready):
    h, key = ready
    seen = []
    h.service.observe_codex_quota = lambda account, obs: seen.append((account.name, obs))
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    ((name, obs),) = seen
    assert name == "sub" and obs.five_hour.utilization == pytest.approx(0.25)
    assert obs.five_hour.window_minutes == 300 and obs.seven_day.utilization == pytest.approx(0.4)


async def test_usage_limit_429_cools_the_account_until_it_resets(codex_harness):
    h = codex_harness
    a = await h.add_codex_account("a", "tok-a")
    await h.add_codex_account("b", "tok-b")
    key = await h.create_key()
    h.codex.script(
        "tok-a",
        CodexReply(
            status=429,
            error_body={
                "error": {
                    "type": "usage_limit_reached",
                    "message": "The usage limit has been reached",
                    "resets_in_seconds": 240,
                }
            },
        ),
    )
    client = oai(h, key, default_headers={"session_id": "conv-1"})
    with pytest.raises(openai.RateLimitError) as err:
        await client.responses.create(model="gpt-5.4", input="hi")
    assert err.value.body["type"] == "usage_limit_reached"  # the upstream's own body
    assert 200 <= int(err.value.response.headers["retry-after"]) <= 240
    account = h.service.pool.accounts[a]
    assert h.service.account_view(a)["state"] == "cooling"
    assert account.cooldown_until - h.service.clock.now() == pytest.approx(240, abs=5)
    record = records(h)[-1]
    assert (record.outcome, record.error_code, record.upstream_status) == (
        "error",
        "usage_limit_reached",
        429,
    )
    with pytest.raises(openai.RateLimitError) as err:  # the bound conversation waits
        await client.responses.create(model="gpt-5.4", input="hi")
    assert err.value.body["code"] == "account_cooling"
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")  # others flow
    assert h.codex.seen[-1].token == "tok-b"


async def test_401_marks_the_account_auth_failed(ready):
    h, key = ready
    h.codex.script(
        "tok-sub",
        CodexReply(status=401, error_body={"detail": "expired"}),
        CodexReply(status=401, error_body={"detail": "expired"}),
    )
    with pytest.raises(openai.AuthenticationError):
        await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    assert h.service.account_view(1)["state"] == "auth_failed"


@pytest.mark.parametrize(
    "terminal, outcome, code, cools",
    [
        ("incomplete", "incomplete", "length", False),
        ("failed", "error", "server_error", True),
        ("none", "incomplete", "stream_truncated", True),
    ],
)
async def test_the_terminal_event_decides_the_record(ready, terminal, outcome, code, cools):
    h, key = ready
    h.codex.script(None, CodexReply(terminal=terminal))
    status, _, events = await raw_sse(
        h, key, "/v1/responses", {"model": "gpt-5.4", "input": "hi", "stream": True}
    )
    assert status == 200 and events[0][0] == "response.created"
    record = records(h)[-1]
    assert (record.outcome, record.error_code) == (outcome, code)
    assert (h.service.account_view(1)["state"] == "cooling") is cools


async def test_unknown_events_pass_through_untouched(ready):
    h, key = ready
    extra = [
        {"type": "codex.rate_limits", "plan_type": "pro"},
        {"type": "response.brand_new_thing", "payload": [1, 2]},
    ]
    h.codex.script(None, CodexReply(extra_events=extra))
    _, _, events = await raw_sse(
        h, key, "/v1/responses", {"model": "gpt-5.4", "input": "hi", "stream": True}
    )
    names = [name for name, _ in events]
    assert names[:4] == [
        "response.created",
        "response.in_progress",
        "codex.rate_limits",
        "response.brand_new_thing",
    ]
    assert events[3][1]["payload"] == [1, 2]


async def test_upstream_drop_mid_stream(ready):
    h, key = ready
    h.codex.script(None, CodexReply(kind="drop"))
    _, _, events = await raw_sse(
        h, key, "/v1/responses", {"model": "gpt-5.4", "input": "hi", "stream": True}
    )
    assert events[-1] == (
        "error",
        {
            "type": "error",
            "code": "upstream_error",
            "message": "upstream connection lost",
            "param": None,
        },
    )
    assert (records(h)[-1].outcome, records(h)[-1].error_code) == ("error", "upstream_dropped")
    assert h.service.pool.in_flight == 0


async def test_non_streaming_client_gets_a_failed_response_as_an_error(ready):
    h, key = ready
    h.codex.script(None, CodexReply(terminal="failed", error_code="server_error"))
    with pytest.raises(openai.APIStatusError) as err:
        await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    assert err.value.status_code == 502 and err.value.body["code"] == "server_error"


async def test_compaction(ready):
    h, key = ready
    compacted = await oai(h, key).responses.compact(model="gpt-5.4", input=INPUT)
    seen = h.codex.seen[-1]
    assert seen.path == "/responses/compact" and seen.account_id == "acct-sub"
    assert compacted.output[0].type == "compaction"
    record = records(h)[-1]
    assert (record.operation, record.protocol, record.outcome) == (
        "compact",
        "openai-responses",
        "success",
    )
    assert record.first_token_ms is None and record.input_tokens == 20


async def test_compaction_for_a_claude_model_is_refused_without_a_record(ready):
    h, key = ready
    with pytest.raises(openai.BadRequestError) as err:
        await oai(h, key).responses.compact(model="claude-sonnet-4-5", input=INPUT)
    assert "only available for Codex" in err.value.body["message"]
    assert records(h) == [] and h.codex.seen == []


async def test_models_lists_what_the_group_reaches(codex_harness):
    h = codex_harness
    await h.add_codex_account("sub", "tok-sub")
    await h.add_account("elsewhere", "tok-x", group="other")
    key = await h.create_key()
    ids = [m.id async for m in oai(h, key).models.list()]
    assert ids == h.codex.model_ids  # as the upstream lists it; the Claude account is elsewhere
    await h.add_account("mine", "tok-m")
    page = await anthropic.AsyncAnthropic(base_url=h.url, api_key=key, max_retries=0).models.list()
    # a Claude subscription login lists the static catalog (R-WF-3), the Codex one its upstream
    listed = [m.id for m in page.data]
    assert "claude-sonnet-4-5" in listed and "gpt-brand-new-6" in listed
    assert records(h) == []  # model discovery is not a model attempt (R-REC-1)


async def test_models_needs_a_key(ready):
    h, _ = ready
    with pytest.raises(openai.AuthenticationError):
        await oai(h, "sl-wrong").models.list()


async def test_a_claude_model_over_responses_is_translated(codex_harness):
    h = codex_harness
    await h.add_account("claude", "tok-claude", api_key=True)  # serves any client (R-WF-2)
    key = await h.create_key()
    h.upstream.script(
        None,
        Reply(
            blocks=[
                {"type": "thinking", "thinking": "Plan: call the tool.", "signature": "SIG-1"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_9", "name": "weather", "input": {"city": "Oslo"}},
            ]
        ),
    )
    stream = await oai(h, key).responses.create(
        model="claude-sonnet-4-5",
        instructions="Be brief.",
        input=INPUT,
        stream=True,
        reasoning={"effort": "low"},
        tools=[
            {
                "type": "function",
                "name": "weather",
                "description": "w",
                "parameters": {"type": "object"},
            }
        ],
    )
    events = [e async for e in stream]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response
    assert events[-1].type == "response.completed"
    assert [i.type for i in final.output] == ["reasoning", "message", "function_call"]
    assert final.output[0].summary[0].text == "Plan: call the tool."
    assert final.output[1].content[0].text == "Checking."
    assert final.output[2].arguments == '{"city": "Oslo"}'
    assert final.usage.input_tokens == 50 and final.usage.input_tokens_details.cached_tokens == 30
    seen = h.upstream.seen[-1]
    assert seen.body["system"] == "Be brief." and seen.body["stream"] is True
    assert seen.body["tools"][0]["input_schema"] == {"type": "object"}
    assert seen.body["thinking"]["type"] == "enabled"
    record = records(h)[-1]
    assert (record.provider, record.protocol, record.outcome) == (
        "anthropic",
        "openai-responses",
        "success",
    )
    # The thinking signature comes back on the next turn and reaches Anthropic intact.
    follow = [
        *INPUT,
        final.output[0].model_dump(exclude_none=True),
        final.output[2].model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": "toolu_9", "output": "12C"},
    ]
    await oai(h, key).responses.create(model="claude-sonnet-4-5", input=follow)
    assistant = h.upstream.seen[-1].body["messages"][1]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "Plan: call the tool.",
        "signature": "SIG-1",
    }


async def test_bad_requests_are_400_without_records(ready):
    h, key = ready
    async with aiohttp.ClientSession() as s:
        for body, needle in (
            ({"input": "hi"}, "needs a model"),
            ({"model": "llama-3", "input": "hi"}, "unknown model"),
            ({"model": "antigravity/gpt-5", "input": "hi"}, "serve gemini-*"),
            ({"model": "claude-x", "input": 7}, "input"),
        ):
            async with s.post(
                h.url + "/v1/responses", json=body, headers={"Authorization": f"Bearer {key}"}
            ) as r:
                payload = await r.json()
                assert r.status == 400, body
                assert needle in payload["error"]["message"]
                assert payload["error"]["type"] == "invalid_request_error"
    assert records(h) == [] and h.codex.seen == []


async def test_client_disconnect_mid_stream_releases_once(ready):
    h, key = ready
    releases = count_releases(h.service.pool)
    gate = asyncio.Event()
    h.codex.script(None, CodexReply(gate=gate))
    async with aiohttp.ClientSession() as s:
        resp = await s.post(
            h.url + "/v1/responses",
            json={"model": "gpt-5.4", "input": "hi", "stream": True},
            headers={"Authorization": f"Bearer {key}"},
        )
        await resp.content.readline()
        assert h.service.pool.in_flight == 1
        resp.close()
    await until(
        lambda: h.service.pool.in_flight == 0 and h.codex.cancelled == 1,
        "the lease and the upstream to be let go",
    )
    assert list(releases.values()) == [1]
    assert (records(h)[-1].outcome, records(h)[-1].error_code) == (
        "canceled",
        "client_disconnected",
    )
    gate.set()
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")


async def test_a_chatgpt_backend_refusal_reaches_the_sdk_as_an_openai_error(ready):
    """The ChatGPT backend answers FastAPI-style (`{"detail": ...}`); an OpenAI client gets
    `error.message` with the backend's reason and the same status (found by the route fuzz)."""
    h, key = ready
    with pytest.raises(openai.BadRequestError) as caught:
        await oai(h, key).responses.create(model="gpt-5.4", instructions="be brief")
    body = caught.value.body
    assert caught.value.status_code == 400
    assert body["message"] == "Input must be a list"  # the SDK hands over the `error` object
    assert body["type"] == "invalid_request_error"
    assert caught.value.response.json()["request_id"].startswith("req_")
