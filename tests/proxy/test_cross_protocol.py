"""/v1/messages for a Codex model (R-PX-6): the real `anthropic` SDK -> SubLane -> the fake
Codex upstream, streamed back as Anthropic SSE — so Claude Code can drive GPT models."""

from __future__ import annotations

import anthropic
import pytest

from sublane_desktop.core.affinity import conversation_digest
from sublane_desktop.core.translate.events import OPENAI_TAG
from tests.fake_codex import CodexReply
from tests.fake_upstream import CLAUDE_CODE_HEADERS
from tests.openai_helpers import records

TOOLS = [
    {
        "name": "Bash",
        "description": "Run a command",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]
ASK = [{"role": "user", "content": "list the files"}]


def sdk(h, key, **headers) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=h.url,
        api_key=key,
        max_retries=0,
        default_headers={**CLAUDE_CODE_HEADERS, **headers},
    )


@pytest.fixture
async def ready(codex_harness):
    await codex_harness.add_codex_account("sub", "tok-sub")
    return codex_harness, await codex_harness.create_key()


REPLY = CodexReply(
    text="I'll run ls.",
    reasoning="The user wants a listing.",
    tool_calls=[("Bash", '{"command":"ls"}')],
)


async def test_stream_text_thinking_and_tool_use(ready):
    h, key = ready
    h.codex.script(None, REPLY)
    client = sdk(h, key, **{"x-claude-code-session-id": "cc-1"})
    async with client.messages.stream(
        model="gpt-5.4",
        max_tokens=1024,
        system="You are Claude Code.",
        messages=ASK,
        tools=TOOLS,
        thinking={"type": "enabled", "budget_tokens": 4000},
    ) as stream:
        kinds = [event.type async for event in stream]
        message = await stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    thinking, text, tool = message.content
    assert thinking.thinking == "The user wants a listing."
    assert thinking.signature == OPENAI_TAG + "rs_fake_1.enc-fake-reasoning"
    assert text.text == "I'll run ls."
    assert (tool.id, tool.name, tool.input) == ("call_fake_1", "Bash", {"command": "ls"})
    assert message.stop_reason == "tool_use" and message.model == "gpt-5.4"
    # Responses input_tokens include the cached ones; Anthropic's leave them out.
    assert (
        message.usage.input_tokens,
        message.usage.cache_read_input_tokens,
        message.usage.output_tokens,
    ) == (8, 12, 9)
    body = h.codex.seen[-1].body
    assert body["instructions"] == "You are Claude Code."
    assert body["tools"] == [
        {
            "type": "function",
            "name": "Bash",
            "description": "Run a command",
            "parameters": TOOLS[0]["input_schema"],
            "strict": False,
        }
    ]
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["prompt_cache_key"] == conversation_digest("s:cc-1", "codex")
    record = records(h)[-1]
    assert (record.protocol, record.provider, record.outcome) == ("anthropic", "codex", "success")
    assert (record.input_tokens, record.cached_tokens) == (20, 12)


async def test_the_next_turn_carries_reasoning_and_tool_results_back(ready):
    h, key = ready
    h.codex.script(None, REPLY)
    client = sdk(h, key)
    first = await client.messages.create(
        model="gpt-5.4", max_tokens=1024, messages=ASK, tools=TOOLS
    )
    follow = [
        *ASK,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_fake_1", "content": "a.txt\nb.txt"}
            ],
        },
    ]
    await client.messages.create(model="gpt-5.4", max_tokens=1024, messages=follow, tools=TOOLS)
    items = h.codex.seen[-1].body["input"]
    assert [i["type"] for i in items] == [
        "message",
        "reasoning",
        "message",
        "function_call",
        "function_call_output",
    ]
    assert items[1]["id"] == "rs_fake_1" and items[1]["encrypted_content"] == "enc-fake-reasoning"
    assert items[4] == {
        "type": "function_call_output",
        "call_id": "call_fake_1",
        "output": "a.txt\nb.txt",
    }


async def test_non_streaming(ready):
    h, key = ready
    message = await sdk(h, key).messages.create(model="codex/gpt-5.4", max_tokens=64, messages=ASK)
    assert message.content[0].text == "Hello from the fake Codex upstream."
    assert message.stop_reason == "end_turn" and message.id.startswith("msg_")
    assert h.codex.seen[-1].body["model"] == "gpt-5.4"


async def test_length_stop_and_a_failed_stream(ready):
    h, key = ready
    h.codex.script(None, CodexReply(terminal="incomplete"), CodexReply(terminal="failed"))
    message = await sdk(h, key).messages.create(model="gpt-5.4", max_tokens=8, messages=ASK)
    assert message.stop_reason == "max_tokens"
    assert records(h)[-1].outcome == "incomplete"
    with pytest.raises(anthropic.APIStatusError) as err:
        async with sdk(h, key).messages.stream(
            model="gpt-5.4", max_tokens=8, messages=ASK
        ) as stream:
            async for _ in stream:
                pass
    assert "scripted failure" in str(err.value)


async def test_upstream_usage_limit_is_an_anthropic_rate_limit_error(ready):
    h, key = ready
    h.codex.script(
        None,
        CodexReply(
            status=429,
            error_body={
                "error": {
                    "type": "usage_limit_reached",
                    "message": "limit",
                    "resets_in_seconds": 30,
                }
            },
        ),
    )
    with pytest.raises(anthropic.RateLimitError) as err:
        await sdk(h, key).messages.create(model="gpt-5.4", max_tokens=8, messages=ASK)
    assert err.value.body["type"] == "error"
    assert err.value.body["error"]["type"] == "rate_limit_error"
    assert 1 <= int(err.value.response.headers["retry-after"]) <= 30


async def test_count_tokens_is_for_claude_models_only(ready):
    h, key = ready
    with pytest.raises(anthropic.BadRequestError) as err:
        await sdk(h, key).messages.count_tokens(model="gpt-5.4", messages=ASK)
    assert "only available for Claude" in err.value.body["error"]["message"]
    assert records(h) == []


async def test_gpt_thinking_does_not_reach_a_claude_model(codex_harness):
    """A conversation that switches from GPT to Claude drops the blocks Anthropic would refuse."""
    h = codex_harness
    await h.add_account("claude", "tok-claude")
    key = await h.create_key()
    history = [
        *ASK,
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "gpt thoughts",
                    "signature": OPENAI_TAG + "rs_1.ENC",
                },
                {"type": "text", "text": "done"},
            ],
        },
        {"role": "user", "content": "thanks"},
    ]
    await sdk(h, key).messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=history)
    assistant = h.upstream.seen[-1].body["messages"][1]
    assert assistant["content"] == [{"type": "text", "text": "done"}]
