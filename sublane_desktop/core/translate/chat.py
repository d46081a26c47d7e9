"""OpenAI Chat Completions on the client side: parse a request, render chunks or a completion
(PROTOCOLS.md "Chat Completions stream"). No upstream speaks it, so there is no reader."""

from __future__ import annotations

from typing import Any

from sublane_desktop.core.translate.events import (
    Event,
    Finished,
    ReasoningDelta,
    TextDelta,
    ToolArgs,
    ToolStart,
    Transcript,
    Usage,
)
from sublane_desktop.core.translate.prompt import (
    Image,
    Prompt,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    TranslationError,
    as_dicts,
    as_float,
    as_int,
    as_str,
    json_text,
)

DONE = "[DONE]"


def _parts(content: Any) -> list[Text | Image]:
    if isinstance(content, str):
        return [Text(content)]
    parts: list[Text | Image] = []
    for block in as_dicts(content):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(Text(block["text"]))
        elif kind == "image_url":
            url = block.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            if isinstance(url, str) and url:
                parts.append(Image(url))
        elif kind in ("input_audio", "file"):
            raise TranslationError(f"content parts of type {kind!r} cannot be forwarded")
    return parts


def prompt_from_chat(body: dict[str, Any], model: str) -> Prompt:
    """A /v1/chat/completions request body as a Prompt."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise TranslationError("messages must be a non-empty array")
    prompt = Prompt(model=model, stream=bool(body.get("stream")))
    for message in as_dicts(messages):
        role = message.get("role")
        if role in ("system", "developer"):
            prompt.system.extend(
                p.text for p in _parts(message.get("content")) if isinstance(p, Text) and p.text
            )
        elif role == "user":
            for part in _parts(message.get("content")):
                prompt.add("user", part)
        elif role == "assistant":
            for part in _parts(message.get("content")):
                prompt.add("assistant", part)
            for call in as_dicts(message.get("tool_calls")):
                found = call.get("function")
                called: dict[str, Any] = found if isinstance(found, dict) else {}
                prompt.add(
                    "assistant",
                    ToolCall(
                        str(call.get("id") or ""),
                        str(called.get("name") or ""),
                        json_text(called.get("arguments")),
                    ),
                )
        elif role == "tool":
            prompt.add(
                "user",
                ToolResult(
                    str(message.get("tool_call_id") or ""), _parts(message.get("content") or "")
                ),
            )
        else:
            raise TranslationError(f"unsupported message role {str(role)[:40]!r}")
    for tool in as_dicts(body.get("tools")):
        function = tool.get("function")
        if (
            tool.get("type") == "function"
            and isinstance(function, dict)
            and isinstance(function.get("name"), str)
        ):
            params = function.get("parameters")
            prompt.tools.append(
                Tool(
                    function["name"],
                    str(function.get("description") or ""),
                    params if isinstance(params, dict) else {"type": "object", "properties": {}},
                )
            )
    choice = body.get("tool_choice")
    if choice in ("auto", "none", "required"):
        prompt.tool_choice = choice
    elif isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        prompt.tool_choice, prompt.tool_name = "tool", as_str(choice["function"].get("name"))
    prompt.max_tokens = as_int(body.get("max_completion_tokens")) or as_int(body.get("max_tokens"))
    prompt.temperature = as_float(body.get("temperature"))
    prompt.top_p = as_float(body.get("top_p"))
    stop = body.get("stop")
    prompt.stop = (
        [stop]
        if isinstance(stop, str)
        else [s for s in stop if isinstance(s, str)]
        if isinstance(stop, list)
        else []
    )
    if isinstance(body.get("reasoning_effort"), str):
        prompt.reasoning_effort = body["reasoning_effort"]
    if isinstance(body.get("parallel_tool_calls"), bool):
        prompt.parallel_tool_calls = body["parallel_tool_calls"]
    prompt.cache_key = as_str(body.get("prompt_cache_key")) or None
    response_format = body.get("response_format")
    if isinstance(response_format, dict):
        kind = response_format.get("type")
        if kind == "json_object":
            prompt.output_format = {"type": "json_object"}
        elif kind == "json_schema" and isinstance(response_format.get("json_schema"), dict):
            spec = response_format["json_schema"]
            prompt.output_format = {
                "type": "json_schema",
                "name": str(spec.get("name") or "output"),
                "schema": spec.get("schema") or {},
                "strict": bool(spec.get("strict")),
            }
    options = body.get("stream_options")
    prompt.include_usage = isinstance(options, dict) and options.get("include_usage") is True
    return prompt


def chat_usage(usage: Usage) -> dict[str, Any] | None:
    if usage.input_tokens is None and usage.output_tokens is None:
        return None
    prompt, completion = usage.input_tokens or 0, usage.output_tokens or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens or 0},
    }


def chat_error(error_type: str | None, message: str | None) -> dict[str, Any]:
    return {
        "error": {
            "type": "server_error",
            "code": error_type or "upstream_error",
            "message": message or "upstream error",
            "param": None,
        }
    }


class ChatRenderer:
    """Neutral events as `chat.completion.chunk` payloads, then the `[DONE]` marker."""

    def __init__(
        self, model: str, completion_id: str, created: int, include_usage: bool = False
    ) -> None:
        self.model = model
        self.completion_id = completion_id
        self.created = created
        self.include_usage = include_usage
        self.started = False
        self.tool_index = -1
        self.usage = Usage(None, None, None)
        self.done = False

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    def render(self, event: Event) -> list[dict[str, Any] | str]:
        if self.done:
            return []
        out: list[dict[str, Any] | str] = []
        if not self.started:
            self.started = True
            out.append(self._chunk({"role": "assistant", "content": ""}))
        if isinstance(event, TextDelta):
            if event.text:
                out.append(self._chunk({"content": event.text}))
        elif isinstance(event, ReasoningDelta):
            if event.text:  # the field DeepSeek, vLLM and most chat UIs read
                out.append(self._chunk({"reasoning_content": event.text}))
        elif isinstance(event, ToolStart):
            self.tool_index += 1
            out.append(
                self._chunk(
                    {
                        "tool_calls": [
                            {
                                "index": self.tool_index,
                                "id": event.call_id,
                                "type": "function",
                                "function": {"name": event.name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
        elif isinstance(event, ToolArgs):
            if event.text and self.tool_index >= 0:
                out.append(
                    self._chunk(
                        {
                            "tool_calls": [
                                {"index": self.tool_index, "function": {"arguments": event.text}}
                            ]
                        }
                    )
                )
        elif isinstance(event, Usage):
            self.usage = event
        elif isinstance(event, Finished):
            self.done = True
            if event.status == "failed":
                out.append(chat_error(event.error_type, event.message))
                return out
            out.append(self._chunk({}, event.reason if event.reason != "error" else "stop"))
            usage = chat_usage(self.usage)
            if self.include_usage:
                out.append(
                    {
                        "id": self.completion_id,
                        "object": "chat.completion.chunk",
                        "created": self.created,
                        "model": self.model,
                        "choices": [],
                        "usage": usage,
                    }
                )
            out.append(DONE)
        return out

    def fail(self, message: str, code: str = "upstream_error") -> list[dict[str, Any] | str]:
        if self.done:
            return []
        self.done = True
        return [chat_error(code, message)]


def chat_completion(
    transcript: Transcript, model: str, completion_id: str, created: int
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": transcript.text or None,
        "refusal": None,
    }
    if transcript.reasoning:
        message["reasoning_content"] = transcript.reasoning
    tools = transcript.tools
    if tools:
        message["tool_calls"] = [
            {
                "id": b.call_id,
                "type": "function",
                "function": {"name": b.name, "arguments": b.text or "{}"},
            }
            for b in tools
        ]
    reason = transcript.finished.reason if transcript.finished else "stop"
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reason if reason != "error" else "stop",
            }
        ],
        "usage": chat_usage(transcript.usage),
    }
