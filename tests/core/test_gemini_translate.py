"""Gemini translation as pure functions (core/translate/gemini.py): Messages, Chat Completions and
Responses requests as Gemini `contents`, Gemini answers as neutral events, and the thought
signatures that must survive a round trip through each client protocol."""

from __future__ import annotations

import json

import pytest

from sublane_desktop.core.translate import anthropic as an
from sublane_desktop.core.translate import chat
from sublane_desktop.core.translate import gemini as gm
from sublane_desktop.core.translate import responses as rs
from sublane_desktop.core.translate.events import (
    ANTHROPIC_TAG,
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
)
from sublane_desktop.core.translate.prompt import TranslationError

PNG = "data:image/png;base64,iVBORw0KGgo="
SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "command": {"type": "string", "description": "shell"},
        "mode": {"const": "fast"},
        "timeout": {"type": ["integer", "null"], "exclusiveMinimum": 0},
    },
    "required": ["command", "gone"],
}
TOOLS = [{"name": "Bash", "description": "Run a command", "input_schema": SCHEMA}]


def sse(payload: dict) -> str:
    return json.dumps({"response": payload, "traceId": "tr-1"})


def chunk(*parts: dict, finish: str | None = None, usage: dict | None = None) -> str:
    candidate: dict = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    payload: dict = {
        "candidates": [candidate],
        "responseId": "resp-1",
        "modelVersion": "gemini-3-pro-high",
    }
    if usage:
        payload["usageMetadata"] = usage
    return sse(payload)


USAGE = {
    "promptTokenCount": 120,
    "candidatesTokenCount": 30,
    "thoughtsTokenCount": 10,
    "totalTokenCount": 160,
    "cachedContentTokenCount": 90,
}

# A turn the way Gemini 3 streams it: signed thoughts, text, then a signed call without an id.
STREAM = [
    chunk({"thought": True, "text": "The user wants "}),
    chunk({"thought": True, "text": "a listing.", "thoughtSignature": "sig-thought"}),
    chunk({"text": "I'll run ls."}),
    chunk(
        {
            "functionCall": {"name": "Bash", "args": {"command": "ls"}},
            "thoughtSignature": "sig-call",
        },
        finish="STOP",
        usage=USAGE,
    ),
]


def read(lines: list[str]) -> list:
    reader = gm.GeminiReader("call_x")
    return [e for line in lines for e in reader.feed(None, line)]


def test_a_stream_reads_as_neutral_events():
    events = read(STREAM)
    assert events == [
        Started("resp-1", "gemini-3-pro-high"),
        ReasoningDelta("The user wants "),
        ReasoningDelta("a listing."),
        ReasoningEnd(gm.GEMINI_TAG + "t:sig-thought"),
        TextDelta("I'll run ls."),
        ReasoningEnd(gm.GEMINI_TAG + "c:sig-call"),
        ToolStart("call_x_1", "Bash"),
        ToolArgs('{"command":"ls"}'),
        ToolEnd(),
        Usage(120, 40, 90),
        Finished("completed", "tool_calls"),
    ]
    tally = Tally()
    tally.feed(events)
    assert (tally.input_tokens, tally.output_tokens, tally.cached_tokens) == (120, 40, 90)
    assert tally.verdict() == ("success", None, False)


def test_finish_reasons_errors_and_garbage():
    assert read([chunk({"text": "cut"}, finish="MAX_TOKENS")])[-1] == Finished(
        "completed", "length"
    )
    assert read([chunk(finish="SAFETY")])[-1] == Finished("completed", "content_filter")
    bad = read([chunk(finish="MALFORMED_FUNCTION_CALL")])[-1]
    assert (bad.status, bad.error_type) == ("failed", "malformed_function_call")
    error = read(
        [json.dumps({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota"}})]
    )
    assert error == [Finished("failed", "error", "resource_exhausted", "quota")]
    assert read(["not json", "[1]", json.dumps({"candidates": "nope"})]) == [Started("", "")]
    # a stream that ends without a finishReason is truncated, the account's fault
    tally = Tally()
    tally.feed(read([chunk({"text": "half"})]))
    assert tally.verdict() == ("incomplete", "stream_truncated", True)


def test_a_whole_answer_reads_like_a_stream():
    whole = json.dumps(
        {
            "response": {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": "Hi"}]},
                        "finishReason": "STOP",
                    }
                ],
                "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1},
            }
        }
    ).encode()
    events = gm.GeminiReader().feed_whole(whole)
    assert events[1:] == (TextDelta("Hi"), Usage(5, 1, 0), Finished("completed", "stop"))
    array = json.dumps(
        [json.loads(chunk({"text": "a"})), json.loads(chunk({"text": "b"}, finish="STOP"))]
    ).encode()
    transcript = Transcript()
    transcript.feed(gm.GeminiReader().feed_whole(array))
    assert transcript.text == "ab" and transcript.finished.status == "completed"


def sdk_content(payloads: list[dict]) -> list[dict]:
    """The message content a client SDK accumulates from Anthropic SSE payloads."""
    blocks: list[dict] = []
    for p in payloads:
        if p["type"] == "content_block_start":
            blocks.append(dict(p["content_block"]))
        elif p["type"] == "content_block_delta":
            delta, block = p["delta"], blocks[p["index"]]
            for kind, field in (
                ("text_delta", "text"),
                ("thinking_delta", "thinking"),
                ("signature_delta", "signature"),
                ("input_json_delta", "partial_json"),
            ):
                if delta["type"] == kind:
                    key = "json" if field == "partial_json" else field
                    block[key] = block.get(key, "") + delta[field]
    for block in blocks:
        if "json" in block:
            block["input"] = json.loads(block.pop("json"))
    return blocks


def test_claude_code_thinking_round_trip_keeps_both_signatures():
    """Gemini's answer rendered as Anthropic SSE, folded as Claude Code keeps it, sent back:
    the thought signature returns on its thought part, the call's on the function call."""
    renderer = an.AnthropicRenderer("gemini-3-pro-high", "msg_1")
    payloads = [p for e in read(STREAM) for p in renderer.render(e)]
    content = sdk_content(payloads)
    assert [b["type"] for b in content] == ["thinking", "text", "thinking", "tool_use"]
    body = {
        "model": "gemini-3-pro-high",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "list the files"},
            {"role": "assistant", "content": content},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "call_x_1", "content": "a.txt"}],
            },
        ],
    }
    request = gm.gemini_request(an.prompt_from_messages(body, "gemini-3-pro-high"))
    _, model, result = request["contents"]
    assert model == {
        "role": "model",
        "parts": [
            {
                "thought": True,
                "text": "The user wants a listing.",
                "thoughtSignature": "sig-thought",
            },
            {"text": "I'll run ls."},
            {
                "functionCall": {"name": "Bash", "args": {"command": "ls"}, "id": "call_x_1"},
                "thoughtSignature": "sig-call",
            },
        ],
    }
    assert result == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "name": "Bash",
                    "id": "call_x_1",
                    "response": {"output": "a.txt"},
                }
            }
        ],
    }


def test_responses_reasoning_items_carry_the_signatures():
    renderer = rs.ResponsesRenderer("gemini-3-pro-high", "resp_1", 0)
    for event in read(STREAM):
        renderer.render(event)
    output = renderer.shell["output"]
    assert [i["type"] for i in output] == ["reasoning", "message", "reasoning", "function_call"]
    assert output[0]["encrypted_content"] == gm.GEMINI_TAG + "t:sig-thought"
    follow = {
        "model": "gemini-3-pro-high",
        "input": [
            {"role": "user", "content": "list"},
            *output,
            {"type": "function_call_output", "call_id": "call_x_1", "output": "a.txt"},
        ],
    }
    request = gm.gemini_request(rs.prompt_from_responses(follow, "gemini-3-pro-high"))
    parts = request["contents"][1]["parts"]
    assert parts[0]["thoughtSignature"] == "sig-thought"
    assert parts[2]["thoughtSignature"] == "sig-call"


def test_schemas_in_the_subset_gemini_takes():
    schema = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "format": "uri"},
            "when": {"type": "string", "format": "date-time"},
            "n": {"type": "integer", "format": "int64", "default": 3},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}]},
            "opts": {"type": "object", "properties": {}, "additionalProperties": True},
            "kind": {"enum": [1, 2]},
        },
        "required": ["url", "missing"],
    }
    assert gm.clean_schema(schema) == {
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "when": {"type": "string", "format": "date-time"},
            "n": {"type": "integer", "format": "int64"},
            "pair": {"type": "array", "items": {"type": "string"}},
            "opts": {"type": "object"},
            "kind": {"enum": ["1", "2"], "type": "string"},
        },
        "required": ["url"],
    }
    assert gm.clean_schema({"type": "object", "required": ["x"]}) == {"type": "object"}


def test_messages_request_table():
    body = {
        "model": "gemini-3-pro-high",
        "max_tokens": 1000,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "temperature": 0.3,
        "stop_sequences": ["END"],
        "tools": TOOLS,
        "tool_choice": {"type": "tool", "name": "Bash"},
        "thinking": {"type": "enabled", "budget_tokens": 4000},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": "iVBORw0KGgo=",
                        },
                    },
                ],
            }
        ],
    }
    prompt = an.prompt_from_messages(body, "gemini-3-pro-high")
    prompt.cache_key = "conv-1"
    request = gm.gemini_request(prompt)
    assert request["systemInstruction"] == {
        "role": "user",
        "parts": [{"text": "You are Claude Code."}],
    }
    assert request["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "What is this?"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
            ],
        }
    ]
    assert request["generationConfig"] == {
        "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 8192},
        "maxOutputTokens": 9192,
        "temperature": 0.3,
        "stopSequences": ["END"],
    }
    declaration = request["tools"][0]["functionDeclarations"][0]
    assert declaration == {
        "name": "Bash",
        "description": "Run a command",
        "parameters": {
            "type": "object",
            "required": ["command"],
            "properties": {
                "command": {"type": "string", "description": "shell"},
                "mode": {"enum": ["fast"], "type": "string"},
                "timeout": {"type": "integer", "nullable": True},
            },
        },
    }
    assert request["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["Bash"]}
    }
    assert request["sessionId"] == "conv-1"


def test_chat_request_table_and_lost_signatures():
    body = {
        "model": "gemini-3-flash",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "time", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "rain"},
            {"role": "tool", "tool_call_id": "c2", "content": "noon"},
        ],
        "tool_choice": "none",
        "tools": [
            {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
        ],
        "max_tokens": 50,
    }
    request = gm.gemini_request(chat.prompt_from_chat(body, "gemini-3-flash"))
    assert request["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    _, model, results = request["contents"]
    # Chat has nowhere to keep a signature: the first call of the step gets the placeholder
    assert model["parts"][0]["thoughtSignature"] == gm.SKIP_SIGNATURE
    assert "thoughtSignature" not in model["parts"][1]
    assert [p["functionResponse"]["name"] for p in results["parts"]] == ["weather", "time"]
    assert [p["functionResponse"]["id"] for p in results["parts"]] == ["c1", "c2"]
    assert request["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    # a tool without arguments declares no parameters (an empty OBJECT is a 400 upstream)
    assert request["tools"] == [{"functionDeclarations": [{"name": "weather", "description": ""}]}]
    assert request["generationConfig"] == {"maxOutputTokens": 50}
    # Claude models behind Antigravity get no Gemini placeholder
    claude = gm.gemini_request(chat.prompt_from_chat(body, "claude-sonnet-4-5"))
    assert "thoughtSignature" not in claude["contents"][1]["parts"][0]


def test_what_cannot_cross():
    body = {
        "model": "gemini-3-pro-high",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
                ],
            }
        ],
    }
    with pytest.raises(TranslationError, match="base64 data: URLs"):
        gm.gemini_request(chat.prompt_from_chat(body, "gemini-3-pro-high"))
    with pytest.raises(TranslationError, match="no content"):
        gm.gemini_request(an.prompt_from_messages({"messages": []}, "gemini-3-pro-high"))
    # reasoning another upstream signed is dropped, not sent to Gemini
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "mine", "signature": ANTHROPIC_TAG + "abc"},
                    {"type": "text", "text": "hello"},
                ],
            },
            {"role": "user", "content": "again"},
        ]
    }
    request = gm.gemini_request(an.prompt_from_messages(body, "gemini-3-pro-high"))
    assert request["contents"][1]["parts"] == [{"text": "hello"}]


def test_error_tool_results_and_json_mode():
    body = {
        "model": "gemini-2.5-pro",
        "input": [
            {"type": "function_call", "call_id": "c9", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c9", "output": "boom"},
        ],
        "text": {"format": {"type": "json_object"}},
        "reasoning": {"effort": "none"},
    }
    request = gm.gemini_request(rs.prompt_from_responses(body, "gemini-2.5-pro"))
    assert request["contents"][1]["parts"][0]["functionResponse"]["response"] == {"output": "boom"}
    assert request["generationConfig"] == {"responseMimeType": "application/json"}
    assert "JSON" in request["systemInstruction"]["parts"][0]["text"]
    message = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": "denied",
                    }
                ],
            }
        ]
    }
    request = gm.gemini_request(an.prompt_from_messages(message, "gemini-3-flash"))
    assert request["contents"][0]["parts"][0]["functionResponse"] == {
        "name": "t1",
        "id": "t1",
        "response": {"error": "denied"},
    }


def test_gemini_signatures_are_stripped_before_native_claude_and_gpt_requests():
    """A conversation that moves from a Gemini model to a Claude or GPT one carries Gemini's
    signed reasoning, which those APIs would refuse: the native pass-throughs drop it."""
    messages = {
        "messages": [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t", "signature": gm.GEMINI_TAG + "t:sig"},
                    {"type": "text", "text": "hi"},
                ],
            }
        ]
    }
    assert an.strip_foreign_thinking(messages)["messages"][0]["content"] == [
        {"type": "text", "text": "hi"}
    ]
    responses = {
        "input": [
            {"type": "reasoning", "summary": [], "encrypted_content": gm.GEMINI_TAG + "c:sig"},
            {"role": "user", "content": "next"},
        ]
    }
    assert rs.strip_foreign_reasoning(responses)["input"] == [{"role": "user", "content": "next"}]
