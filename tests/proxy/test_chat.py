"""POST /v1/chat/completions end to end: the real `openai` SDK -> SubLane -> either upstream,
translated both ways, streaming and tools included (R-PX-6)."""

from __future__ import annotations

import asyncio

import openai
import pytest

from tests.fake_codex import CodexReply
from tests.fake_upstream import Reply
from tests.openai_helpers import oai, raw_sse, records

PNG = "data:image/png;base64,iVBORw0KGgo="
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": PNG}},
        ],
    },
]


@pytest.fixture
async def both(codex_harness):
    h = codex_harness
    await h.add_account("claude", "tok-claude", api_key=True)  # serves any client (R-WF-2)
    await h.add_codex_account("sub", "tok-sub")
    return h, await h.create_key()


async def test_claude_model_answer_and_what_anthropic_saw(both):
    h, key = both
    raw = await oai(h, key).chat.completions.with_raw_response.create(
        model="claude-sonnet-4-5", messages=MESSAGES, max_tokens=100
    )
    completion = raw.parse()
    assert completion.object == "chat.completion"
    assert completion.choices[0].message.content == "Hello from the fake upstream."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.prompt_tokens == 50  # 12 + 30 cached + 8 written
    assert completion.usage.prompt_tokens_details.cached_tokens == 30
    assert raw.headers["x-request-id"].startswith("req_")
    body = h.upstream.seen[-1].body
    assert body["system"] == "Be brief." and body["max_tokens"] == 100
    assert body["messages"][0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    record = records(h)[-1]
    assert (record.protocol, record.operation, record.provider, record.outcome) == (
        "openai-chat",
        "chat",
        "anthropic",
        "success",
    )
    assert record.request_id == raw.headers["x-request-id"]


async def test_codex_model_answer_and_what_codex_saw(both):
    h, key = both
    completion = await oai(h, key).chat.completions.create(
        model="gpt-5.4", messages=MESSAGES, max_tokens=100, user="u-1"
    )
    assert completion.choices[0].message.content == "Hello from the fake Codex upstream."
    assert completion.usage.prompt_tokens == 20
    body = h.codex.seen[-1].body
    assert body["instructions"] == "Be brief."
    assert body["input"][0]["content"][1] == {"type": "input_image", "image_url": PNG}
    assert "max_output_tokens" not in body  # a subscription backend refuses it
    assert records(h)[-1].provider == "codex"


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gpt-5.4"])
async def test_streaming_with_usage_chunk_and_done(both, model):
    h, key = both
    status, headers, events = await raw_sse(
        h,
        key,
        "/v1/chat/completions",
        {
            "model": model,
            "messages": MESSAGES,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    assert all(name is None for name, _ in events)  # chat chunks are unnamed events
    assert events[-1] == (None, "[DONE]")
    usage_chunk = events[-2][1]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["prompt_tokens"] > 0
    chunks = [data for _, data in events[:-2]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text.startswith("Hello from the fake")
    assert records(h)[-1].first_token_ms is not None


async def test_sdk_stream_with_tool_calls_from_claude(both):
    h, key = both
    h.upstream.script(
        None,
        Reply(
            blocks=[
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
            ]
        ),
    )
    stream = await oai(h, key).chat.completions.create(
        model="claude-sonnet-4-5",
        messages=MESSAGES,
        tools=TOOLS,
        stream=True,
        tool_choice="required",
    )
    chunks = [c async for c in stream]
    calls = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or [])]
    assert calls[0].id == "toolu_1" and calls[0].function.name == "weather"
    assert "".join(tc.function.arguments or "" for tc in calls) == '{"city": "Oslo"}'
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    body = h.upstream.seen[-1].body
    assert body["tool_choice"] == {"type": "any"}
    assert body["tools"][0]["input_schema"]["properties"]["city"] == {"type": "string"}


async def test_tool_calls_from_codex_and_the_tool_result_round(both):
    h, key = both
    h.codex.script(None, CodexReply(text="", tool_calls=[("weather", '{"city":"Oslo"}')]))
    client = oai(h, key)
    first = await client.chat.completions.create(model="gpt-5.4", messages=MESSAGES, tools=TOOLS)
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls" and message.content is None
    (call,) = message.tool_calls
    assert (call.id, call.function.name, call.function.arguments) == (
        "call_fake_1",
        "weather",
        '{"city":"Oslo"}',
    )
    follow = [
        *MESSAGES,
        message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "12C"},
    ]
    await client.chat.completions.create(model="gpt-5.4", messages=follow, tools=TOOLS)
    items = h.codex.seen[-1].body["input"]
    assert items[-2] == {
        "type": "function_call",
        "call_id": "call_fake_1",
        "name": "weather",
        "arguments": '{"city":"Oslo"}',
    }
    assert items[-1] == {"type": "function_call_output", "call_id": "call_fake_1", "output": "12C"}
    # The same history reaches Claude as tool_use / tool_result blocks.
    await client.chat.completions.create(model="claude-sonnet-4-5", messages=follow, tools=TOOLS)
    messages = h.upstream.seen[-1].body["messages"]
    assert messages[1]["content"][0]["type"] == "tool_use"
    assert messages[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "call_fake_1",
        "content": "12C",
    }


async def test_sync_client_streams(both):
    h, key = both

    def call() -> str:
        client = openai.OpenAI(base_url=h.url + "/v1", api_key=key, max_retries=0)
        stream = client.chat.completions.create(
            model="gpt-5.4", stream=True, messages=[{"role": "user", "content": "hi"}]
        )
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    assert await asyncio.to_thread(call) == "Hello from the fake Codex upstream."


async def test_upstream_errors_come_back_in_the_openai_shape(both):
    h, key = both
    h.upstream.script(None, Reply(status=529, error_type="overloaded_error"))
    with pytest.raises(openai.APIStatusError) as err:
        await oai(h, key).chat.completions.create(model="claude-sonnet-4-5", messages=MESSAGES)
    assert err.value.status_code == 529
    assert err.value.body["code"] == "overloaded_error"
    assert err.value.response.headers["x-request-id"].startswith("req_")


async def test_a_failed_stream_ends_with_an_error_chunk(both):
    h, key = both
    h.codex.script(None, CodexReply(terminal="failed"))
    stream = await oai(h, key).chat.completions.create(
        model="gpt-5.4", messages=MESSAGES, stream=True
    )
    with pytest.raises(openai.APIError, match="scripted failure"):
        async for _ in stream:
            pass
    assert records(h)[-1].outcome == "error"


@pytest.mark.parametrize(
    "body, needle",
    [
        ({"model": "gpt-5.4", "messages": []}, "non-empty"),
        ({"model": "gpt-5.4", "messages": [{"role": "oracle", "content": "x"}]}, "role"),
        (
            {
                "model": "claude-x",
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "image_url", "image_url": {"url": "data:image/png,notbase64"}}
                        ],
                    }
                ],
            },
            "base64",
        ),
        (
            {"model": "mistral-large", "messages": [{"role": "user", "content": "x"}]},
            "unknown model",
        ),
    ],
)
async def test_bad_requests_are_400_without_records(both, body, needle):
    h, key = both
    with pytest.raises(openai.BadRequestError) as err:
        await oai(h, key).chat.completions.create(**body)
    assert needle in err.value.body["message"]
    assert records(h) == [] and h.upstream.seen == [] and h.codex.seen == []
    assert h.service.pool.in_flight == 0


async def test_unauthenticated_is_401_in_the_openai_shape(both):
    h, _ = both
    with pytest.raises(openai.AuthenticationError) as err:
        await oai(h, "sl-nobody").chat.completions.create(model="gpt-5.4", messages=MESSAGES)
    assert err.value.body["type"] == "authentication_error"
    assert records(h) == []
