"""The translation layer as pure functions (core/translate): request tables, stream readers,
stream renderers, and read-back round trips (a rendered stream reads as what made it)."""

from __future__ import annotations

import json

import pytest

from sublane_desktop.core.translate import anthropic as an
from sublane_desktop.core.translate import chat
from sublane_desktop.core.translate import responses as rs
from sublane_desktop.core.translate.errors import anthropic_type_for, openai_type_for, read_error
from sublane_desktop.core.translate.events import (
    ANTHROPIC_TAG,
    NOTHING,
    OPENAI_TAG,
    Finished,
    ReasoningDelta,
    ReasoningEnd,
    Started,
    Tally,
    TextDelta,
    ToolArgs,
    ToolEnd,
    ToolStart,
    Transcript,
    Usage,
    event_payload,
    tag_signature,
    untag_signature,
)
from sublane_desktop.core.translate.prompt import (
    Image,
    Text,
    TranslationError,
    as_int,
    as_str,
    effort_for_budget,
    json_mode_instruction,
    json_object,
    json_text,
    split_data_url,
    text_of,
)

PNG = "data:image/png;base64,iVBORw0KGgo="
TOOL = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

CHAT_BODY = {
    "model": "x",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather here?"},
                {"type": "image_url", "image_url": {"url": PNG}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "12C, rain"},
        {"role": "user", "content": "Thanks"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {"name": "weather", "description": "Look up", "parameters": TOOL},
        }
    ],
    "tool_choice": {"type": "function", "function": {"name": "weather"}},
    "max_completion_tokens": 300,
    "temperature": 0.2,
    "stop": "END",
    "stream": True,
    "stream_options": {"include_usage": True},
    "parallel_tool_calls": False,
}


def test_chat_to_anthropic_messages():
    prompt = chat.prompt_from_chat(CHAT_BODY, "claude-sonnet-4-5")
    assert prompt.stream and prompt.include_usage
    body = an.messages_request(prompt)
    assert body["model"] == "claude-sonnet-4-5" and body["stream"] is True
    assert body["system"] == "Be brief.\n\nUse tools."
    assert body["max_tokens"] == 300 and body["temperature"] == 0.2
    assert body["stop_sequences"] == ["END"]
    assert body["tools"] == [{"name": "weather", "description": "Look up", "input_schema": TOOL}]
    assert body["tool_choice"] == {
        "type": "tool",
        "name": "weather",
        "disable_parallel_tool_use": True,
    }
    user, assistant, results = body["messages"]
    assert user == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Weather here?"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
            },
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}},
        ],
    }
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}}
        ],
    }
    # tool results open the user turn that follows the call; the next user text joins it
    assert results["role"] == "user"
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "12C, rain"},
        {"type": "text", "text": "Thanks"},
    ]


def test_chat_to_responses():
    prompt = chat.prompt_from_chat(
        dict(CHAT_BODY, reasoning_effort="high", prompt_cache_key="thread-9"), "gpt-5.4"
    )
    body = rs.responses_request(prompt)
    assert body["instructions"] == "Be brief.\n\nUse tools."
    assert body["stream"] is True and body["store"] is False
    assert body["max_output_tokens"] == 300
    assert body["tool_choice"] == {"type": "function", "name": "weather"}
    assert body["parallel_tool_calls"] is False
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["prompt_cache_key"] == "thread-9"
    assert body["tools"][0] == {
        "type": "function",
        "name": "weather",
        "description": "Look up",
        "parameters": TOOL,
        "strict": False,
    }
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Weather here?"},
                {"type": "input_image", "image_url": PNG},
                {"type": "input_image", "image_url": "https://example.com/a.jpg"},
            ],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "weather",
            "arguments": '{"city":"Oslo"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "12C, rain"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks"}]},
    ]


@pytest.mark.parametrize(
    "body, needle",
    [
        ({"model": "x", "messages": []}, "non-empty"),
        ({"model": "x", "messages": "hi"}, "non-empty"),
        ({"model": "x", "messages": [{"role": "wizard", "content": "x"}]}, "role"),
        (
            {
                "model": "x",
                "messages": [
                    {"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}
                ],
            },
            "input_audio",
        ),
    ],
)
def test_chat_requests_that_cannot_cross(body, needle):
    with pytest.raises(TranslationError, match=needle):
        chat.prompt_from_chat(body, "x")


def test_a_non_base64_data_url_cannot_reach_anthropic():
    prompt = chat.prompt_from_chat(
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "data:image/png,raw"}}],
                }
            ]
        },
        "claude-x",
    )
    with pytest.raises(TranslationError, match="base64"):
        an.messages_request(prompt)


@pytest.mark.parametrize(
    "choice, expected",
    [
        ("auto", None),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
    ],
)
def test_chat_tool_choice_table_for_anthropic(choice, expected):
    prompt = chat.prompt_from_chat(
        dict(CHAT_BODY, tool_choice=choice, parallel_tool_calls=True), "c"
    )
    assert an.messages_request(prompt).get("tool_choice") == expected


def test_anthropic_request_defaults_and_thinking():
    prompt = chat.prompt_from_chat(
        {
            "messages": [{"role": "user", "content": "hi"}],
            "reasoning_effort": "medium",
            "temperature": 0.5,
        },
        "c",
    )
    body = an.messages_request(prompt)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert body["max_tokens"] > 8192  # must exceed the thinking budget
    assert "temperature" not in body  # thinking refuses sampling overrides
    plain = an.messages_request(
        chat.prompt_from_chat({"messages": [{"role": "user", "content": "hi"}]}, "c")
    )
    assert plain["max_tokens"] == an.DEFAULT_MAX_TOKENS and "system" not in plain


MESSAGES_BODY = {
    "model": "gpt-5.4",
    "max_tokens": 1000,
    "stream": True,
    "system": [{"type": "text", "text": "You are Claude Code."}],
    "metadata": {"user_id": "user_abc_account_x_session_s1"},
    "thinking": {"type": "enabled", "budget_tokens": 10000},
    "tools": [
        {"name": "Bash", "description": "run", "input_schema": TOOL},
        {"type": "web_search_20250305", "name": "web_search"},
    ],
    "messages": [
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "I should run ls",
                    "signature": OPENAI_TAG + "rs_1.ENC",
                },
                {"type": "thinking", "thinking": "foreign", "signature": "claude-sig"},
                {"type": "text", "text": "Running ls."},
                {"type": "tool_use", "id": "call_7", "name": "Bash", "input": {"city": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_7",
                    "content": [{"type": "text", "text": "a.txt"}],
                },
                {"type": "text", "text": "and now?"},
            ],
        },
    ],
}


def test_anthropic_messages_to_responses_carry_our_reasoning_only():
    prompt = an.prompt_from_messages(MESSAGES_BODY, "gpt-5.4")
    body = rs.responses_request(prompt)
    assert body["instructions"] == "You are Claude Code."
    assert body["reasoning"]["effort"] == "high"  # a 10k budget
    assert [t["name"] for t in body["tools"]] == ["Bash"]  # server tools cannot cross
    kinds = [item["type"] for item in body["input"]]
    assert kinds == [
        "message",
        "reasoning",
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    reasoning = body["input"][1]
    assert reasoning == {
        "type": "reasoning",
        "id": "rs_1",
        "encrypted_content": "ENC",
        "summary": [{"type": "summary_text", "text": "I should run ls"}],
    }
    assert body["input"][2]["content"] == [{"type": "output_text", "text": "Running ls."}]
    assert body["input"][3]["arguments"] == '{"city":"ls"}'
    assert body["input"][4] == {
        "type": "function_call_output",
        "call_id": "call_7",
        "output": "a.txt",
    }


RESPONSES_BODY = {
    "model": "claude-sonnet-4-5",
    "instructions": "Codex base prompt",
    "input": [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "sandbox: read-only"}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix"}]},
        {
            "type": "reasoning",
            "id": "rs_9",
            "summary": [{"type": "summary_text", "text": "hmm"}],
            "encrypted_content": ANTHROPIC_TAG + "SIG",
        },
        {"type": "reasoning", "id": "rs_8", "summary": [], "encrypted_content": "openai-native"},
        {
            "type": "function_call",
            "call_id": "toolu_1",
            "name": "shell",
            "arguments": '{"cmd":["ls"]}',
        },
        {"type": "function_call_output", "call_id": "toolu_1", "output": "ok"},
    ],
    "tools": [
        {"type": "function", "name": "shell", "description": "sh", "parameters": TOOL},
        {"type": "web_search"},
    ],
    "tool_choice": "auto",
    "reasoning": {"effort": "low"},
    "prompt_cache_key": "t-1",
    "max_output_tokens": 2000,
}


def test_responses_to_anthropic_messages():
    prompt = rs.prompt_from_responses(RESPONSES_BODY, "claude-sonnet-4-5")
    assert prompt.cache_key == "t-1"
    body = an.messages_request(prompt)
    assert body["system"] == "Codex base prompt\n\nsandbox: read-only"
    assert body["thinking"]["budget_tokens"] == 2048
    assert [t["name"] for t in body["tools"]] == ["shell"]
    user, assistant, result = body["messages"]
    assert user["content"] == [{"type": "text", "text": "fix"}]
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "SIG"},  # ours, untagged
        {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"cmd": ["ls"]}},
    ]
    assert result["content"] == [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]


def test_responses_string_input_and_bad_input():
    prompt = rs.prompt_from_responses({"input": "hello"}, "c")
    assert an.messages_request(prompt)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    ]
    with pytest.raises(TranslationError):
        rs.prompt_from_responses({"input": 42}, "c")


# --- readers --------------------------------------------------------------------------------------


def sse(payloads):
    return [(p["type"], json.dumps(p)) for p in payloads]


ANTHROPIC_STREAM = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "model": "claude-x",
            "usage": {
                "input_tokens": 10,
                "cache_read_input_tokens": 30,
                "cache_creation_input_tokens": 5,
                "output_tokens": 1,
            },
        },
    },
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    },
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "thinking_delta", "thinking": "ponder"},
    },
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "signature_delta", "signature": "SIG"},
    },
    {"type": "content_block_stop", "index": 0},
    {"type": "ping"},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 1},
    {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 2,
        "delta": {"type": "input_json_delta", "partial_json": '{"a":'},
    },
    {
        "type": "content_block_delta",
        "index": 2,
        "delta": {"type": "input_json_delta", "partial_json": "1}"},
    },
    {"type": "content_block_stop", "index": 2},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
    {"type": "message_stop"},
]
NEUTRAL = [
    Started("msg_1", "claude-x"),
    Usage(45, 1, 30, 5),
    ReasoningDelta("ponder"),
    ReasoningEnd(ANTHROPIC_TAG + "SIG"),
    TextDelta("Hi"),
    ToolStart("toolu_1", "shell"),
    ToolArgs('{"a":'),
    ToolArgs("1}"),
    ToolEnd(),
    Usage(45, 9, 30, 5),
    Finished("completed", "tool_calls"),
]


def read_all(reader, frames):
    return [e for name, data in frames for e in reader.feed(name, data)]


def test_anthropic_reader():
    assert read_all(an.AnthropicReader(), sse(ANTHROPIC_STREAM)) == NEUTRAL


def test_anthropic_reader_mid_stream_error_and_junk():
    reader = an.AnthropicReader()
    assert reader.feed(None, "[DONE]") == NOTHING
    assert reader.feed(None, "{broken") == NOTHING
    assert reader.feed("x", '{"type":"brand_new_event"}') == NOTHING
    events = reader.feed(
        "error",
        json.dumps(
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        ),
    )
    assert events == (Finished("failed", "error", "overloaded_error", "Overloaded"),)


def responses_stream():
    return [
        {"type": "response.created", "response": {"id": "resp_1", "model": "gpt-5.4"}},
        {"type": "response.in_progress", "response": {"id": "resp_1"}},
        {"type": "codex.rate_limits", "rate_limits": {}},  # unknown: ignored
        {"type": "response.output_item.added", "item": {"type": "reasoning", "id": "rs_1"}},
        {"type": "response.reasoning_summary_part.added", "summary_index": 0},
        {"type": "response.reasoning_summary_text.delta", "delta": "ponder"},
        {"type": "response.reasoning_summary_part.added", "summary_index": 1},
        {"type": "response.reasoning_summary_text.delta", "delta": "more"},
        {
            "type": "response.output_item.done",
            "item": {"type": "reasoning", "id": "rs_1", "encrypted_content": "ENC"},
        },
        {"type": "response.output_item.added", "item": {"type": "message", "id": "m"}},
        {"type": "response.output_text.delta", "delta": "Hi"},
        {"type": "response.output_item.done", "item": {"type": "message", "id": "m"}},
        {
            "type": "response.output_item.added",
            "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell"},
        },
        {"type": "response.function_call_arguments.delta", "delta": '{"a":1}'},
        {
            "type": "response.output_item.done",
            "item": {"type": "function_call", "id": "fc_1", "arguments": '{"a":1}'},
        },
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "usage": {
                    "input_tokens": 40,
                    "input_tokens_details": {"cached_tokens": 30},
                    "output_tokens": 9,
                },
            },
        },
    ]


def test_responses_reader():
    reader = rs.ResponsesReader()
    assert read_all(reader, sse(responses_stream())) == [
        Started("resp_1", "gpt-5.4"),
        ReasoningDelta("ponder"),
        ReasoningDelta("\n\n"),
        ReasoningDelta("more"),
        ReasoningEnd(OPENAI_TAG + "rs_1.ENC"),
        TextDelta("Hi"),
        ToolStart("call_1", "shell"),
        ToolArgs('{"a":1}'),
        ToolEnd(),
        Usage(40, 9, 30),
        Finished("completed", "tool_calls"),
    ]
    assert reader.response["id"] == "resp_1"


@pytest.mark.parametrize(
    "event, finished",
    [
        (
            {
                "type": "response.incomplete",
                "response": {"incomplete_details": {"reason": "max_output_tokens"}},
            },
            Finished("incomplete", "length"),
        ),
        (
            {
                "type": "response.incomplete",
                "response": {"incomplete_details": {"reason": "content_filter"}},
            },
            Finished("incomplete", "content_filter"),
        ),
        (
            {
                "type": "response.failed",
                "response": {"error": {"code": "server_error", "message": "boom"}},
            },
            Finished("failed", "error", "server_error", "boom"),
        ),
        (
            {"type": "error", "code": "context_length_exceeded", "message": "too long"},
            Finished("failed", "error", "context_length_exceeded", "too long"),
        ),
    ],
)
def test_responses_reader_endings(event, finished):
    assert rs.ResponsesReader().feed(None, json.dumps(event))[-1] == finished


def test_responses_reader_items_without_deltas():
    """Some backends only send the finished item; its content still comes through."""
    reader = rs.ResponsesReader()
    frames = sse(
        [
            {"type": "response.output_item.added", "item": {"type": "message"}},
            {
                "type": "response.output_item.done",
                "item": {"type": "message", "content": [{"type": "output_text", "text": "whole"}]},
            },
            {
                "type": "response.output_item.added",
                "item": {"type": "function_call", "call_id": "c", "name": "f"},
            },
            {
                "type": "response.output_item.done",
                "item": {"type": "function_call", "arguments": "{}"},
            },
        ]
    )
    assert read_all(reader, frames) == [
        TextDelta("whole"),
        ToolStart("c", "f"),
        ToolArgs("{}"),
        ToolEnd(),
    ]


# --- renderers ------------------------------------------------------------------------------------


def render_all(renderer, events):
    return [p for e in events for p in renderer.render(e)]


def test_chat_renderer():
    out = render_all(chat.ChatRenderer("m", "chatcmpl-1", 7, include_usage=True), NEUTRAL)
    deltas = [p["choices"][0]["delta"] for p in out if isinstance(p, dict) and p["choices"]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert {"reasoning_content": "ponder"} in deltas and {"content": "Hi"} in deltas
    assert {
        "tool_calls": [
            {
                "index": 0,
                "id": "toolu_1",
                "type": "function",
                "function": {"name": "shell", "arguments": ""},
            }
        ]
    } in deltas
    assert {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]} in deltas
    finish = [p for p in out if isinstance(p, dict) and p["choices"]][-1]
    assert finish["choices"][0]["finish_reason"] == "tool_calls"
    assert out[-2]["choices"] == [] and out[-2]["usage"] == {
        "prompt_tokens": 45,
        "completion_tokens": 9,
        "total_tokens": 54,
        "prompt_tokens_details": {"cached_tokens": 30},
    }
    assert out[-1] == chat.DONE
    assert all(p["object"] == "chat.completion.chunk" for p in out if isinstance(p, dict))


def test_chat_renderer_failure_is_an_error_payload_without_done():
    out = render_all(
        chat.ChatRenderer("m", "c", 1),
        [TextDelta("a"), Finished("failed", "error", "server_error", "boom")],
    )
    assert out[-1] == {
        "error": {"type": "server_error", "code": "server_error", "message": "boom", "param": None}
    }
    assert chat.DONE not in out


def test_anthropic_renderer_block_structure():
    out = render_all(an.AnthropicRenderer("gpt-5.4", "msg_x"), NEUTRAL)
    kinds = [(p["type"], p.get("index")) for p in out]
    assert kinds == [
        ("message_start", None),
        ("content_block_start", 0),
        ("content_block_delta", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
        ("content_block_start", 1),
        ("content_block_delta", 1),
        ("content_block_stop", 1),
        ("content_block_start", 2),
        ("content_block_delta", 2),
        ("content_block_delta", 2),
        ("content_block_stop", 2),
        ("message_delta", None),
        ("message_stop", None),
    ]
    assert out[3]["delta"] == {"type": "signature_delta", "signature": ANTHROPIC_TAG + "SIG"}
    assert out[-2]["delta"]["stop_reason"] == "tool_use"
    assert out[-2]["usage"] == {
        "input_tokens": 15,
        "cache_read_input_tokens": 30,
        "cache_creation_input_tokens": 0,
        "output_tokens": 9,
    }


def test_responses_renderer_sequence_and_terminal():
    out = render_all(rs.ResponsesRenderer("claude-x", "resp_abc", 5), NEUTRAL)
    assert [p["sequence_number"] for p in out] == list(range(len(out)))
    types = [p["type"] for p in out]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    final = out[-1]["response"]
    assert [i["type"] for i in final["output"]] == ["reasoning", "message", "function_call"]
    assert final["output"][0]["encrypted_content"] == ANTHROPIC_TAG + "SIG"
    assert final["output"][2]["arguments"] == '{"a":1}'
    assert final["usage"]["input_tokens"] == 45
    assert final["usage"]["input_tokens_details"] == {"cached_tokens": 30}
    dones = [p for p in out if p["type"] == "response.output_item.done"]
    assert [d["output_index"] for d in dones] == [0, 1, 2]


@pytest.mark.parametrize(
    "end, kind",
    [
        (Finished("completed", "length"), "response.incomplete"),
        (Finished("failed", "error", "overloaded_error", "x"), "response.failed"),
    ],
)
def test_responses_renderer_endings(end, kind):
    assert rs.ResponsesRenderer("m", "resp_1", 0).render(end)[-1]["type"] == kind


def test_renderers_say_so_when_the_stream_breaks():
    assert an.AnthropicRenderer("m", "id").fail("gone")[-1] == {
        "type": "error",
        "error": {"type": "api_error", "code": "upstream_error", "message": "gone"},
    }
    failed = rs.ResponsesRenderer("m", "r", 0).fail("gone", "upstream_timeout")[-1]
    assert failed["type"] == "response.failed"
    assert failed["response"]["error"]["code"] == "upstream_timeout"
    assert (
        chat.ChatRenderer("m", "c", 0).fail("gone", "upstream_timeout")[-1]["error"]["code"]
        == "upstream_timeout"
    )


# --- round trips: what a renderer writes, the matching reader reads back --------------------------


def _content_only(events):
    return [e for e in events if not isinstance(e, (Started, Usage))]


def test_round_trip_anthropic():
    rendered = render_all(an.AnthropicRenderer("m", "msg"), NEUTRAL)
    back = read_all(an.AnthropicReader(), sse(rendered))
    # our renderer passes the (already tagged) signature through; the reader tags again
    expected = [
        ReasoningEnd(ANTHROPIC_TAG + ANTHROPIC_TAG + "SIG") if isinstance(e, ReasoningEnd) else e
        for e in _content_only(NEUTRAL)
    ]
    assert _content_only(back) == expected


def test_round_trip_responses():
    rendered = render_all(rs.ResponsesRenderer("m", "resp_1", 0), NEUTRAL)
    back = read_all(rs.ResponsesReader(), sse(rendered))
    content = _content_only(back)
    assert [type(e).__name__ for e in content] == [type(e).__name__ for e in _content_only(NEUTRAL)]
    assert TextDelta("Hi") in content and ToolArgs('{"a":') in content
    assert back[-2] == Usage(45, 9, 30)


def test_transcript_and_whole_answers():
    transcript = Transcript()
    transcript.feed(NEUTRAL)
    assert transcript.text == "Hi" and transcript.reasoning == "ponder"
    assert [(b.call_id, b.text) for b in transcript.tools] == [("toolu_1", '{"a":1}')]
    completion = chat.chat_completion(transcript, "m", "c", 1)
    assert completion["choices"][0]["finish_reason"] == "tool_calls"
    assert completion["choices"][0]["message"]["tool_calls"][0]["function"] == {
        "name": "shell",
        "arguments": '{"a":1}',
    }
    message = an.anthropic_message(transcript, "m", "msg")
    assert [b["type"] for b in message["content"]] == ["thinking", "text", "tool_use"]
    assert message["content"][2]["input"] == {"a": 1} and message["stop_reason"] == "tool_use"
    response = rs.responses_object(transcript, "m", "resp_1", 3)
    assert response["status"] == "completed"
    assert [i["type"] for i in response["output"]] == ["reasoning", "message", "function_call"]


# --- the record watch -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "events, verdict",
    [
        ([], ("incomplete", "stream_truncated", True)),
        ([Finished("completed", "stop")], ("success", None, False)),
        ([Finished("incomplete", "length")], ("incomplete", "length", False)),
        (
            [Finished("failed", "error", "overloaded_error", "x")],
            ("error", "overloaded_error", True),
        ),
        (
            [Finished("failed", "error", "context_length_exceeded", "x")],
            ("error", "context_length_exceeded", False),
        ),
    ],
)
def test_tally_verdicts(events, verdict):
    tally = Tally()
    tally.feed(events)
    assert tally.verdict() == verdict


def test_tally_first_output_ignores_empty_deltas_and_lifecycle():
    tally = Tally()
    assert tally.feed([Started("a", "b"), TextDelta(""), ToolStart("c", "d")]) is False
    assert tally.feed([ToolArgs("{")]) is True
    assert tally.feed([TextDelta("x")]) is False  # only the first counts


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            ("overloaded_error", "Overloaded"),
        ),
        (
            b'{"error":{"type":"invalid_request_error","code":"bad","message":"nope"}}',
            ("invalid_request_error", "nope"),
        ),
        (
            b'{"error":{"type":"usage_limit_reached","resets_in_seconds":60}}',
            ("usage_limit_reached", "usage_limit_reached"),
        ),
        (
            b'{"detail":"Unsupported parameter: max_output_tokens"}',
            (None, "Unsupported parameter: max_output_tokens"),
        ),
        (b"<html>bad gateway</html>", (None, "<html>bad gateway</html>")),
        (b"", (None, "upstream error")),
    ],
)
def test_read_error(body, expected):
    assert read_error(body) == expected


# --- what cannot cross is dropped, not sent -----------------------------------------------------


def test_foreign_reasoning_is_stripped_from_native_requests():
    body = {
        "model": "claude-x",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "gpt", "signature": OPENAI_TAG + "rs.E"},
                    {"type": "thinking", "thinking": "claude", "signature": "real"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "gpt", "signature": OPENAI_TAG + "rs.E"}
                ],
            },
        ],
    }
    stripped = an.strip_foreign_thinking(body)
    assert stripped["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "claude", "signature": "real"}
    ]
    assert stripped["messages"][2]["content"] == [{"type": "text", "text": "…"}]
    assert an.strip_foreign_thinking({"messages": [{"role": "user", "content": "x"}]}) is None
    items = {
        "input": [
            {"type": "reasoning", "encrypted_content": ANTHROPIC_TAG + "S"},
            {"type": "reasoning", "encrypted_content": "native"},
            "junk",
        ]
    }
    assert rs.strip_foreign_reasoning(items)["input"] == [
        {"type": "reasoning", "encrypted_content": "native"},
        "junk",
    ]
    assert rs.strip_foreign_reasoning({"input": "text"}) is None


def test_translation_is_pure_stdlib():
    import subprocess
    import sys

    code = (
        "import sys; import sublane_desktop.core.translate.chat, "
        "sublane_desktop.core.translate.anthropic, sublane_desktop.core.translate.responses, "
        "sublane_desktop.core.translate.errors; print('\\n'.join(sys.modules))"
    )
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    for framework in ("aiohttp", "PySide6", "peewee", "qasync", "multidict", "yarl"):
        assert framework not in loaded, framework


def test_json_modes():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    prompt = chat.prompt_from_chat(
        {
            "messages": [{"role": "user", "content": "count"}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "count", "schema": schema, "strict": True},
            },
        },
        "m",
    )
    assert rs.responses_request(prompt)["text"] == {
        "format": {"type": "json_schema", "name": "count", "schema": schema, "strict": True}
    }
    system = an.messages_request(prompt)["system"]
    assert system.startswith("Reply with only a JSON object") and '"integer"' in system
    plain = rs.prompt_from_responses(
        {"input": "x", "text": {"format": {"type": "json_object"}}}, "c"
    )
    assert an.messages_request(plain)["system"] == (
        "Reply with only a JSON object, no prose and no code fence."
    )


# --- the small shared rules every translation leans on --------------------------------------------


@pytest.mark.parametrize(
    ("budget", "effort"),
    [(None, "low"), (2048, "low"), (2049, "medium"), (8192, "medium"), (8193, "high")],
)
def test_a_thinking_budget_reads_as_a_reasoning_effort(budget, effort):
    assert effort_for_budget(budget) == effort


def test_values_are_taken_only_in_their_own_type():
    assert as_int(3) == 3 and as_int(True) is None and as_int("3") is None
    assert as_str("x") == "x" and as_str(3) is None
    assert json_text(None) == "{}" and json_text({"a": [1, 2]}) == '{"a":[1,2]}'
    assert json_object('{"a": 1}') == {"a": 1}
    assert json_object("not json") == {"_raw": "not json"}  # tool arguments are never lost
    assert json_object("[1]") == {"_value": [1]}
    assert text_of([Text("a"), Image(PNG), Text("b")]) == "ab"


def test_data_urls_split_into_media_type_and_data():
    assert split_data_url("data:image/png;base64,AA==") == ("image/png", "AA==")
    assert split_data_url("data:;base64,AA") == ("application/octet-stream", "AA")
    assert split_data_url("data:text/plain;base64,a,b") == ("text/plain", "a,b")
    assert split_data_url("data:text/plain,hi") is None
    assert split_data_url("https://x/a.png") is None


def test_a_json_schema_instruction_carries_the_schema_compactly():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert json_mode_instruction({"schema": schema}) == (
        "Reply with only a JSON object, no prose and no code fence, matching this JSON schema: "
        '{"type":"object","properties":{"a":{"type":"string"}}}'
    )


def test_event_payloads_and_signature_tags():
    assert event_payload('{"a": 1}') == {"a": 1}
    assert event_payload("") is None and event_payload("[1]") is None
    assert event_payload("x") is None and event_payload('{"a":') is None
    assert tag_signature(OPENAI_TAG, "") is None and tag_signature(OPENAI_TAG, None) is None
    assert tag_signature(OPENAI_TAG, "s") == OPENAI_TAG + "s"
    assert untag_signature(OPENAI_TAG, OPENAI_TAG) is None  # a bare tag carries nothing
    assert untag_signature(OPENAI_TAG, OPENAI_TAG + "s") == "s"


def test_tally_records_cache_writes_and_names_every_ending():
    tally = Tally()
    assert tally.input_tokens is None and not tally.first_output
    tally.feed([Usage(10, 2, 3, 4)])
    assert (tally.input_tokens, tally.output_tokens, tally.cached_tokens) == (10, 2, 3)
    assert tally.written_tokens == 4
    tally.feed([Finished("incomplete", "stop")])
    assert tally.verdict() == ("incomplete", None, False)
    tally.feed([Finished("failed", "error")])
    assert tally.verdict() == ("error", "upstream_failed", False)


@pytest.mark.parametrize(
    ("status", "anthropic_type", "openai_type"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (413, "request_too_large", "invalid_request_error"),
        (429, "rate_limit_error", "rate_limit_error"),
        (529, "overloaded_error", "server_error"),
        (502, "api_error", "server_error"),
    ],
)
def test_an_error_status_has_a_type_in_each_client_protocol(status, anthropic_type, openai_type):
    assert anthropic_type_for(status) == anthropic_type
    assert openai_type_for(status) == openai_type


def test_claude_codes_tool_search_crosses_to_other_providers():
    """With tool search on (the first-party variable SubLane sets, R-WF-8) Claude Code answers
    a ToolSearch call with `tool_reference` blocks and sends the found tool with
    `defer_loading`: a GPT model gets the tool and a result that says it is there."""
    schema = {"type": "object", "properties": {"cron": {"type": "string"}}}
    body = {
        "model": "gpt-5.4",
        "max_tokens": 100,
        "tools": [
            {"name": "ToolSearch", "description": "find tools", "input_schema": {"type": "object"}},
            {
                "name": "CronCreate",
                "description": "schedule",
                "input_schema": schema,
                "defer_loading": True,
            },
        ],
        "messages": [
            {"role": "user", "content": "schedule something"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "ToolSearch",
                        "input": {"query": "select:CronCreate"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "tool_reference", "tool_name": "CronCreate"}],
                    },
                ],
            },
        ],
    }
    request = rs.responses_request(an.prompt_from_messages(body, "gpt-5.4"))
    assert [t["name"] for t in request["tools"]] == ["ToolSearch", "CronCreate"]
    (output,) = [item for item in request["input"] if item["type"] == "function_call_output"]
    assert "CronCreate is now available" in json.dumps(output)
