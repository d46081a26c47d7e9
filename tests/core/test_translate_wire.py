"""Every translation written out in full: the exact payloads a client or an upstream sees.

The other translation tests check the rules one by one; these pin the whole wire shape (every
key, type name, index and count) of each renderer, whole answer, request and reader for the
shared rich conversation, so a renamed event type or a dropped field cannot slip through. The
expected payloads live in tests/core/wire/*.json; after a deliberate wire change, rewrite them
with `SUBLANE_WRITE_WIRE=1 pytest tests/core/test_translate_wire.py` and review the diff.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from sublane_desktop.core.translate import anthropic as an
from sublane_desktop.core.translate import chat
from sublane_desktop.core.translate import gemini as gm
from sublane_desktop.core.translate import responses as rs
from sublane_desktop.core.translate.errors import read_error
from sublane_desktop.core.translate.events import (
    Finished,
    ReasoningDelta,
    ReasoningEnd,
    Started,
    TextDelta,
    ToolArgs,
    ToolEnd,
    ToolStart,
    Transcript,
    Usage,
)
from sublane_desktop.core.translate.prompt import TranslationError
from tests.core.test_translate import (
    ANTHROPIC_TAG,
    CHAT_BODY,
    MESSAGES_BODY,
    NEUTRAL,
    OPENAI_TAG,
    PNG,
    RESPONSES_BODY,
    TOOL,
    read_all,
    render_all,
    sse,
)

WIRE = Path(__file__).with_name("wire")

CUT_SHORT = [
    Started("msg_2", "m"),
    TextDelta("Partial"),
    Usage(3, 2, None),
    Finished("incomplete", "length"),
]
FAILED = [
    Started("msg_3", "m"),
    ReasoningDelta("thinking"),
    Finished("failed", "error", "overloaded_error", "Overloaded"),
]
# Bodies at the edges of each client format: missing ids and descriptions, odd roles, mixed
# content, every tool_choice spelling, sampling and stop settings, JSON modes.
ODD_CHAT = [
    {
        "messages": [
            {
                "role": "developer",
                "content": [{"type": "text", "text": ""}, {"type": "text", "text": "Dev."}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": PNG},
                    {"type": "text", "text": "see"},
                ],
            },
            {
                "role": "assistant",
                "content": "sure",
                "tool_calls": [{"function": {"name": "f"}}, {"id": "c2"}],
            },
            {"role": "tool", "content": None},
        ],
        "tools": [
            {"type": "function", "function": {"name": "f"}},
            {"type": "function", "function": {"description": "nameless"}},
            {"type": "custom", "function": {"name": "g"}},
        ],
        "tool_choice": "required",
        "max_tokens": 50,
        "top_p": 0.5,
        "stop": ["a", 2, "b"],
        "reasoning_effort": "medium",
        "parallel_tool_calls": False,
        "prompt_cache_key": "ck",
        "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}},
        "stream_options": {"include_usage": False},
    },
    {
        "messages": [{"role": "user", "content": "x"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": "bad"}}],
        "tool_choice": "none",
        "response_format": {"type": "json_object"},
        "temperature": 1,
    },
]
ODD_MESSAGES = [
    {
        "stream": True,
        "system": "Plain system.",
        "temperature": 0.5,
        "top_p": 0.9,
        "stop_sequences": ["a", 1, "b", "c", "d", "e"],
        "tool_choice": {"type": "tool", "name": "Read", "disable_parallel_tool_use": True},
        "tools": [
            {"name": "Read", "input_schema": TOOL},
            {"name": "NoSchema"},
            {"input_schema": TOOL},
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
                    {"type": "image", "source": "bad"},
                    {"type": "document", "source": {}},
                    {"type": "text", "text": ""},
                    {"type": "text", "text": "look"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "name": "Read", "input": {"p": 1}},
                    {"type": "redacted_thinking", "data": "x"},
                    {"type": "thinking", "thinking": "t", "signature": ANTHROPIC_TAG + "S"},
                    {"type": "thinking", "signature": OPENAI_TAG + "rs_2.E"},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "also"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "",
                        "is_error": True,
                        "content": [
                            {"type": "text", "text": "r1"},
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/jpeg",
                                    "data": "BB",
                                },
                            },
                        ],
                    },
                    {"type": "tool_result", "tool_use_id": "t2", "content": "plain"},
                ],
            },
            {"role": "system", "content": "an odd role reads as the user's"},
        ],
    },
    {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 100,
        "thinking": {"type": "adaptive"},
        "tools": [{"name": "Read", "description": "r", "input_schema": TOOL}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
    },
    {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}],
            }
        ],
        "tools": [{"name": "Read", "input_schema": TOOL}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "thinking": {"type": "disabled", "budget_tokens": 99999},
    },
    {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "Read", "input_schema": TOOL}],
        "tool_choice": {"type": "none"},
        "thinking": {"type": "enabled", "budget_tokens": 5000},
    },
]
ODD_RESPONSES = [
    {
        "input": "hello",
        "stream": True,
        "instructions": "",
        "tools": [
            {"type": "function", "name": "f"},
            {"name": "untyped"},
            {"type": "function", "parameters": TOOL},
        ],
        "tool_choice": "required",
        "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}}},
        "temperature": 0.1,
        "top_p": 0.2,
        "max_output_tokens": 64,
        "parallel_tool_calls": False,
    },
    {
        "instructions": "Be kind.",
        "input": [
            {"role": "user", "content": "x"},
            {
                "role": "system",
                "content": [
                    {"type": "input_text", "text": ""},
                    {"type": "input_text", "text": "Sys."},
                ],
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok"}],
            },
            {"type": "function_call", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1"},
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": [{"type": "input_text", "text": "o"}],
            },
            {
                "type": "reasoning",
                "summary": [
                    {"type": "summary_text", "text": "a"},
                    {"type": "summary_text", "text": "b"},
                ],
                "encrypted_content": ANTHROPIC_TAG + "S",
            },
            {"type": "item_reference", "id": "x"},
            {
                "role": "user",
                "content": [{"type": "input_image", "image_url": PNG}, {"type": "input_file"}],
            },
        ],
        "tool_choice": {"type": "function", "name": "f"},
        "text": {"format": {"type": "json_object"}},
        "reasoning": {"effort": "none"},
    },
]


# Upstream Responses streams as a real upstream may send them: refusals, reasoning text,
# items that arrive whole without deltas, missing ids and deltas, errors in every spelling.
def _rs(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


UPSTREAM_RESPONSES = {
    "deltas_and_refusal": [
        _rs("response.created", response={"model": "gpt-5.4"}),
        _rs("response.output_item.added", item={"type": "reasoning"}),
        _rs("response.reasoning_text.delta", delta="raw "),
        _rs("response.reasoning_summary_part.added", summary_index=0),
        _rs("response.reasoning_summary_text.delta", delta="sum"),
        _rs("response.reasoning_summary_part.added", summary_index=1),
        _rs("response.reasoning_summary_text.delta"),
        _rs("response.output_item.done", item={"type": "reasoning", "summary": [{"text": "x"}]}),
        _rs("response.output_item.added", item={"type": "message"}),
        _rs("response.refusal.delta", delta="No."),
        _rs("response.output_text.delta"),
        _rs(
            "response.output_item.done",
            item={"type": "message", "content": [{"type": "output_text", "text": "dup"}]},
        ),
        _rs("response.output_item.added", item={"type": "function_call"}),
        _rs("response.function_call_arguments.delta"),
        _rs("response.function_call_arguments.delta", delta="{}"),
        _rs("response.output_item.done", item={"type": "function_call", "arguments": "{}"}),
        _rs("response.completed", response={"usage": {"input_tokens": 5, "output_tokens": 2}}),
    ],
    "whole_items": [
        _rs("response.created", response={"id": "resp_9"}),
        _rs("response.output_item.added", item="odd"),
        _rs("response.output_item.added", item={"type": "reasoning"}),
        _rs(
            "response.output_item.done",
            item={
                "type": "reasoning",
                "summary": [{"text": "a"}, {"text": 5}, {"text": "b"}],
                "encrypted_content": "E",
            },
        ),
        _rs("response.output_item.added", item={"type": "reasoning", "id": "rs_1"}),
        _rs(
            "response.output_item.done",
            item={"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "F"},
        ),
        _rs("response.output_item.added", item={"type": "message"}),
        _rs(
            "response.output_item.done",
            item={
                "type": "message",
                "content": [
                    {"type": "output_text", "text": "Hel"},
                    {"type": "refusal", "refusal": "skip"},
                    {"type": "output_text"},
                    {"type": "output_text", "text": "lo"},
                ],
            },
        ),
        _rs("response.output_item.added", item={"type": "message"}),
        _rs("response.output_item.done", item={"type": "message", "content": []}),
        _rs(
            "response.output_item.added",
            item={"type": "function_call", "call_id": "c1", "name": "f"},
        ),
        _rs("response.output_item.done", item={"type": "function_call", "arguments": '{"a":1}'}),
        _rs("response.output_item.done", item=None),
        _rs("response.output_item.done", item={"type": "web_search_call"}),
        _rs("response.incomplete", response={"incomplete_details": {"reason": "content_filter"}}),
    ],
    "incomplete_unknown_reason": [
        _rs("response.created", response="odd"),
        _rs("response.incomplete", response={"incomplete_details": "odd"}),
    ],
    "failed_with_code": [
        _rs("response.failed", response={"error": {"code": "c" * 80, "message": "broke"}}),
    ],
    "failed_with_type": [_rs("response.failed", response={"error": {"type": "server_error"}})],
    "failed_bare": [_rs("response.failed", response="odd")],
    "error_event": [_rs("error", error={"type": "overloaded", "message": "later"})],
    "error_flat": [_rs("error", code="x" * 80)],
    "error_bare": [_rs("error")],
    "junk": [_rs("response.in_progress"), {"no": "type"}],
}

# A fold fed out of the usual order: a second Started, split reasoning, arguments after the
# call ended, text after a tool call.
QUIRKS = [
    Started("msg_a", "model-a"),
    Started("msg_b", "model-b"),
    ReasoningDelta("thin"),
    ReasoningDelta("king"),
    ReasoningEnd("sig"),
    ReasoningDelta("again"),
    TextDelta("Hi"),
    ToolStart("c1", "f"),
    ToolArgs("{}"),
    TextDelta("between"),
    ToolArgs("lost"),
    ToolStart("c2", "g"),
    ToolEnd(),
    ToolArgs("late"),
    TextDelta("after"),
    Usage(1, 2, 3),
    Finished("completed", "stop"),
]

UPSTREAM_ANTHROPIC = {
    "odd_blocks": [
        {"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": -1}}},
        {"type": "message_start", "message": "odd"},
        {"type": "content_block_start", "content_block": {"type": "thinking", "thinking": "pre"}},
        {"type": "content_block_delta", "delta": {"type": "signature_delta"}},
        {"type": "content_block_delta", "delta": {"type": "signature_delta", "signature": "A"}},
        {"type": "content_block_delta", "delta": {"type": "signature_delta", "signature": "B"}},
        {"type": "content_block_delta", "delta": {"type": "thinking_delta"}},
        {"type": "content_block_stop"},
        {"type": "content_block_start", "content_block": {"type": "thinking", "signature": "S0"}},
        {"type": "content_block_stop"},
        {"type": "content_block_start", "content_block": {"type": "text", "text": "pre"}},
        {"type": "content_block_delta", "delta": {"type": "text_delta"}},
        {"type": "content_block_delta", "delta": "odd"},
        {"type": "content_block_delta", "delta": {"type": "citations_delta"}},
        {"type": "content_block_stop"},
        {"type": "content_block_start", "content_block": {"type": "tool_use"}},
        {"type": "content_block_delta", "delta": {"type": "input_json_delta"}},
        {"type": "content_block_stop"},
        {"type": "content_block_start", "content_block": "odd"},
        {"type": "content_block_start", "content_block": {"type": "redacted_thinking"}},
        {"type": "content_block_stop"},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": "odd"},
        {"type": "message_delta", "delta": "odd", "usage": {"output_tokens": 4}},
        {"type": "message_stop"},
    ],
    "no_input_count": [
        {"type": "message_start", "message": {"id": "m", "usage": {"output_tokens": 1}}},
        {"type": "message_delta", "delta": {"stop_reason": "refusal"}},
        {"type": "message_stop"},
    ],
    "unknown_stop": [
        {"type": "message_delta", "delta": {"stop_reason": "pause_turn"}},
        {"type": "message_stop"},
    ],
    "plain_stop": [{"type": "message_stop"}],
    "error": [{"type": "error", "error": {"type": "overloaded_error" + "x" * 60, "message": "m"}}],
    "error_without_message": [{"type": "error", "error": {"type": "api_error"}}],
    "error_bare": [{"type": "error", "error": "odd"}],
}


def _gm(*parts: Any, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    return {"response": {"candidates": [candidate], **extra}, "traceId": "tr-1"}


UPSTREAM_GEMINI = {
    "thoughts_calls_and_usage": [
        _gm({"thought": True}, modelVersion="gemini-3-pro-high"),
        _gm({"thought": True, "text": "plan", "thoughtSignature": "sig-t"}),
        _gm({"thought": True, "text": " more", "thoughtSignature": ""}),
        _gm({"text": "Hi"}, {"text": ""}, {"text": 5}, "odd"),
        _gm(
            {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "sig-c"},
            {"functionCall": {"id": "own", "args": "odd"}},
            usageMetadata={"promptTokenCount": 10, "candidatesTokenCount": 3},
        ),
        _gm(
            finish="STOP",
            usageMetadata={
                "promptTokenCount": 12,
                "thoughtsTokenCount": 4,
                "cachedContentTokenCount": 6,
            },
        ),
        _gm({"text": "after the end"}),
    ],
    "thought_then_length": [
        {
            "candidates": [{"content": {"parts": [{"thought": True, "text": "t"}]}}],
            "responseId": "r2",
        },
        _gm(finish="MAX_TOKENS", usageMetadata={"candidatesTokenCount": 2}),
    ],
    "safety": [_gm({"text": "no"}, finish="SAFETY", usageMetadata={"thoughtsTokenCount": 1})],
    "unknown_finish": [_gm(finish="SOMETHING_NEW", usageMetadata={"cachedContentTokenCount": 3})],
    "malformed_call": [_gm(finish="MALFORMED_FUNCTION_CALL")],
    "malformed_with_message": [_gm(finish="UNEXPECTED_TOOL_CALL", finishMessage_unused=1)],
    "error_status": [
        {"error": {"status": "RESOURCE_EXHAUSTED", "message": "quota"}},
        _gm({"text": "x"}),
    ],
    "error_code": [{"error": {"code": 500}}],
    "error_bare": [{"error": {}}],
    "no_candidates": [{"response": {"candidates": []}}, {"response": "odd", "candidates": "odd"}],
}

ERROR_BODIES = [
    b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    b'{"error":{"code":"rate_limit_exceeded","message":"slow"}}',
    b'{"error":{"type":"' + b"t" * 80 + b'"}}',
    b'{"error":{"message":"only a message"}}',
    b'{"error":{}}',
    b'{"error":"flat text"}',
    b'{"detail":{"code":"usage_limit_reached","message":"wait"}}',
    b'{"detail":{"type":"bad"}}',
    b'{"detail":{}}',
    b'{"detail":"Not Found"}',
    b'{"other":1}',
    b"[1, 2]",
    b"<html>" + b"x" * 400,
    b"   ",
    b"\xff\xfe",
]

ENDINGS = {"full": NEUTRAL, "cut_short": CUT_SHORT, "failed": FAILED}


def _renderers() -> dict[str, Any]:
    return {
        "chat": lambda: chat.ChatRenderer("m", "chatcmpl-1", 7, include_usage=True),
        "chat_no_usage": lambda: chat.ChatRenderer("m", "chatcmpl-2", 8),
        "anthropic": lambda: an.AnthropicRenderer("m", "msg_x"),
        "responses": lambda: rs.ResponsesRenderer("m", "resp_1", 9),
    }


def streams() -> dict[str, Any]:
    cases: dict[str, Any] = {}
    for name, make in _renderers().items():
        for ending, events in ENDINGS.items():
            cases[f"{name}_{ending}"] = render_all(make(), events)
        broken = make()
        cases[f"{name}_broken"] = render_all(broken, [TextDelta("so far")]) + broken.fail(
            "the upstream went away", "upstream_timeout"
        )
        cases[f"{name}_broken_at_once"] = make().fail("gone")
    return cases


def whole_answers() -> dict[str, Any]:
    cases: dict[str, Any] = {}
    for ending, events in ENDINGS.items():
        transcript = Transcript()
        transcript.feed(events)
        cases[f"chat_{ending}"] = chat.chat_completion(transcript, "m", "chatcmpl-1", 7)
        cases[f"anthropic_{ending}"] = an.anthropic_message(transcript, "m", "msg_x")
        cases[f"responses_{ending}"] = rs.responses_object(transcript, "m", "resp_1", 9)
    transcript = Transcript()
    transcript.feed(QUIRKS)
    cases["transcript_quirks"] = dataclasses.asdict(transcript)
    cases["errors"] = [
        an.anthropic_stream_error("overloaded_error", "busy"),
        an.anthropic_stream_error(None, None),
        chat.chat_error("rate_limit_error", "slow down"),
        chat.chat_error(None, None),
    ]
    return cases


def requests() -> dict[str, Any]:
    prompts = {
        "chat": lambda model: chat.prompt_from_chat(CHAT_BODY, model),
        "messages": lambda model: an.prompt_from_messages(MESSAGES_BODY, model),
        "responses": lambda model: rs.prompt_from_responses(RESPONSES_BODY, model),
    }
    for n, body in enumerate(ODD_CHAT):
        prompts[f"odd_chat_{n}"] = lambda model, body=body: chat.prompt_from_chat(body, model)
    for n, body in enumerate(ODD_MESSAGES):
        prompts[f"odd_messages_{n}"] = lambda model, body=body: an.prompt_from_messages(body, model)
    for n, body in enumerate(ODD_RESPONSES):
        prompts[f"odd_responses_{n}"] = lambda model, body=body: rs.prompt_from_responses(
            body, model
        )
    targets = {
        "anthropic": ("claude-sonnet-4-5", an.messages_request),
        "responses": ("gpt-5.4", rs.responses_request),
        "gemini": ("gemini-3-pro-high", gm.gemini_request),
    }
    cases: dict[str, Any] = {}
    for source, prompt in prompts.items():
        for target, (model, build) in targets.items():
            try:
                cases[f"{source}_to_{target}"] = build(prompt(model))
            except TranslationError as exc:
                cases[f"{source}_to_{target}"] = {"refused": str(exc)}
    return cases


def _events(events: list[Any]) -> list[dict[str, Any]]:
    return [{type(e).__name__: dataclasses.asdict(e)} for e in events]


def readers() -> dict[str, Any]:
    """What the Responses reader reads back from our own rendered streams, every ending."""
    cases: dict[str, Any] = {}
    for ending, events in ENDINGS.items():
        rendered = render_all(rs.ResponsesRenderer("m", "resp_1", 9), events)
        cases[f"responses_{ending}"] = _events(read_all(rs.ResponsesReader(), sse(rendered)))
        rendered = render_all(an.AnthropicRenderer("m", "msg_x"), events)
        cases[f"anthropic_{ending}"] = _events(read_all(an.AnthropicReader(), sse(rendered)))
    return cases


def upstream() -> dict[str, Any]:
    """What each reader makes of upstream answers of every shape, and of error bodies."""
    cases: dict[str, Any] = {}
    for name, payloads in UPSTREAM_ANTHROPIC.items():
        frames = [(p.get("type"), json.dumps(p)) for p in payloads] + [("ping", "")]
        cases[f"upstream_anthropic_{name}"] = _events(read_all(an.AnthropicReader(), frames))
    for name, payloads in UPSTREAM_GEMINI.items():
        frames = [(None, json.dumps(p)) for p in payloads] + [(None, "")]
        cases[f"upstream_gemini_{name}"] = _events(read_all(gm.GeminiReader(), frames))
    whole = json.dumps([p for p in UPSTREAM_GEMINI["thoughts_calls_and_usage"]]).encode()
    cases["gemini_whole_array"] = _events(list(gm.GeminiReader("call_w").feed_whole(whole)))
    one = json.dumps(UPSTREAM_GEMINI["safety"][0]).encode()
    cases["gemini_whole_object"] = _events(list(gm.GeminiReader().feed_whole(one)))
    cases["gemini_whole_junk"] = [
        _events(list(gm.GeminiReader().feed_whole(body))) for body in (b"[oops", b"[]", b"{}")
    ]
    cases["error_bodies"] = [list(read_error(body)) for body in ERROR_BODIES]
    for name, payloads in UPSTREAM_RESPONSES.items():
        frames = [(p.get("type"), json.dumps(p)) for p in payloads] + [(None, "not json")]
        cases[f"upstream_responses_{name}"] = _events(read_all(rs.ResponsesReader(), frames))
    return cases


GROUPS = {
    "streams": streams,
    "whole_answers": whole_answers,
    "requests": requests,
    "readers": readers,
    "upstream": upstream,
}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_the_wire_is_exactly_as_recorded(group):
    got = json.loads(json.dumps(GROUPS[group]()))
    path = WIRE / f"{group}.json"
    if os.environ.get("SUBLANE_WRITE_WIRE"):
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", "utf-8")
    expected = json.loads(path.read_text("utf-8"))
    assert sorted(got) == sorted(expected)
    for case in expected:
        assert got[case] == expected[case], case
