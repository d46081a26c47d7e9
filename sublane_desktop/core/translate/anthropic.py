"""Anthropic Messages on both sides: parse a client request, render an upstream request, read an
upstream stream, render a client stream or message (PROTOCOLS.md "Anthropic")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sublane_desktop.core.translate.events import (
    ANTHROPIC_TAG,
    GEMINI_TAG,
    NOTHING,
    OPENAI_TAG,
    Event,
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
    event_payload,
    tag_signature,
    untag_signature,
)
from sublane_desktop.core.translate.prompt import (
    EFFORT_BUDGETS,
    Image,
    Part,
    Prompt,
    Reasoning,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    TranslationError,
    as_dicts,
    as_float,
    as_int,
    as_str,
    effort_for_budget,
    json_mode_instruction,
    json_object,
    json_text,
    split_data_url,
    text_of,
)

DEFAULT_MAX_TOKENS = 8192

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
STOP_REASON_FOR = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
    "error": "end_turn",
}


# --- client request -> Prompt ---------------------------------------------------------------------


def _image(block: dict[str, Any]) -> Image | None:
    source = block.get("source")
    if not isinstance(source, dict):
        return None
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        return Image(f"data:{source.get('media_type') or 'image/png'};base64,{source['data']}")
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        return Image(source["url"])
    return None


def _result_content(content: Any) -> list[Text | Image]:
    if isinstance(content, str):
        return [Text(content)]
    parts: list[Text | Image] = []
    for block in as_dicts(content):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(Text(block["text"]))
        elif block.get("type") == "image":
            image = _image(block)
            if image is not None:
                parts.append(image)
        elif block.get("type") == "tool_reference" and isinstance(block.get("tool_name"), str):
            # Claude Code's tool search answers with references the Messages API expands into
            # the tool's definition; another provider cannot, but the tool itself is already in
            # the request (`defer_loading` tools go as plain tools), so say it is there.
            parts.append(Text(f"Tool {block['tool_name']} is now available."))
    return parts


def prompt_from_messages(body: dict[str, Any], model: str) -> Prompt:
    """A /v1/messages request body as a Prompt."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise TranslationError("messages must be an array")
    prompt = Prompt(model=model, stream=bool(body.get("stream")))
    system = body.get("system")
    if isinstance(system, str) and system:
        prompt.system.append(system)
    else:
        prompt.system.extend(
            b["text"] for b in as_dicts(system) if isinstance(b.get("text"), str) and b["text"]
        )
    for message in as_dicts(messages):
        role = "assistant" if message.get("role") == "assistant" else "user"
        content = message.get("content")
        if isinstance(content, str):
            prompt.add(role, Text(content))
            continue
        for block in as_dicts(content):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                prompt.add(role, Text(block["text"]))
            elif kind == "image":
                image = _image(block)
                if image is not None:
                    prompt.add(role, image)
            elif kind == "tool_use":
                prompt.add(
                    "assistant",
                    ToolCall(
                        str(block.get("id") or ""),
                        str(block.get("name") or ""),
                        json_text(block.get("input")),
                    ),
                )
            elif kind == "tool_result":
                prompt.add(
                    "user",
                    ToolResult(
                        str(block.get("tool_use_id") or ""),
                        _result_content(block.get("content")),
                        bool(block.get("is_error")),
                    ),
                )
            elif kind == "thinking":
                prompt.add(
                    "assistant",
                    Reasoning(str(block.get("thinking") or ""), as_str(block.get("signature"))),
                )
            # redacted_thinking, documents, server tool blocks: nothing the other side can take
    prompt.max_tokens = as_int(body.get("max_tokens"))
    prompt.temperature = as_float(body.get("temperature"))
    prompt.top_p = as_float(body.get("top_p"))
    stops = body.get("stop_sequences")
    prompt.stop = [s for s in stops if isinstance(s, str)] if isinstance(stops, list) else []
    for tool in as_dicts(body.get("tools")):
        schema = tool.get("input_schema")
        if isinstance(tool.get("name"), str) and isinstance(schema, dict):
            prompt.tools.append(Tool(tool["name"], str(tool.get("description") or ""), schema))
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        kind = choice.get("type")
        prompt.tool_choice = {
            "auto": "auto",
            "any": "required",
            "none": "none",
            "tool": "tool",
        }.get(str(kind))
        if kind == "tool":
            prompt.tool_name = as_str(choice.get("name"))
        if choice.get("disable_parallel_tool_use") is True:
            prompt.parallel_tool_calls = False
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive"):
        prompt.reasoning_effort = effort_for_budget(as_int(thinking.get("budget_tokens")))
    return prompt


# --- Prompt -> upstream request -------------------------------------------------------------------


def _image_block(image: Image) -> dict[str, Any]:
    data = split_data_url(image.url)
    if data is not None:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": data[0], "data": data[1]},
        }
    if image.url.startswith("data:"):
        raise TranslationError("images must be base64 data: URLs or http(s) URLs")
    return {"type": "image", "source": {"type": "url", "url": image.url}}


def _content(parts: Sequence[Part]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Text):
            if part.text:  # the API refuses empty text blocks
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, Image):
            blocks.append(_image_block(part))
        elif isinstance(part, ToolCall):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": part.call_id,
                    "name": part.name,
                    "input": json_object(part.arguments),
                }
            )
        elif isinstance(part, ToolResult):
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.call_id}
            if any(isinstance(p, Image) for p in part.content):
                result["content"] = _content(part.content)
            else:
                result["content"] = text_of(part.content)
            if part.is_error:
                result["is_error"] = True
            blocks.append(result)
        elif isinstance(part, Reasoning):
            signature = untag_signature(ANTHROPIC_TAG, part.signature)
            if signature is not None:
                blocks.append({"type": "thinking", "thinking": part.text, "signature": signature})
    return blocks


def messages_request(prompt: Prompt) -> dict[str, Any]:
    """The Anthropic Messages body for a Prompt; always streamed (the relay folds it back)."""
    messages: list[dict[str, Any]] = []
    for turn in prompt.turns:
        blocks = _content(turn.parts)
        if turn.role == "user":
            # tool results must open the user turn that answers the tool calls
            blocks.sort(key=lambda b: b["type"] != "tool_result")
        if blocks:
            if messages and messages[-1]["role"] == turn.role:
                messages[-1]["content"].extend(blocks)
            else:
                messages.append({"role": turn.role, "content": blocks})
    body: dict[str, Any] = {
        "model": prompt.model,
        "max_tokens": prompt.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": messages,
        "stream": True,
    }
    system = list(prompt.system)
    if prompt.output_format:  # Messages has no JSON mode: say it in the system prompt
        system.append(json_mode_instruction(prompt.output_format))
    if system:
        body["system"] = "\n\n".join(system)
    if prompt.stop:
        body["stop_sequences"] = prompt.stop[:4]
    if prompt.reasoning_effort and prompt.reasoning_effort != "none":
        budget = EFFORT_BUDGETS.get(prompt.reasoning_effort, 8192)
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if body["max_tokens"] <= budget:
            body["max_tokens"] = budget + (prompt.max_tokens or DEFAULT_MAX_TOKENS)
    else:  # thinking refuses sampling overrides
        if prompt.temperature is not None:
            body["temperature"] = prompt.temperature
        if prompt.top_p is not None:
            body["top_p"] = prompt.top_p
    if prompt.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in prompt.tools
        ]
        choice: dict[str, Any] | None = None
        if prompt.tool_choice == "none":
            choice = {"type": "none"}
        elif prompt.tool_choice == "required":
            choice = {"type": "any"}
        elif prompt.tool_choice == "tool" and prompt.tool_name:
            choice = {"type": "tool", "name": prompt.tool_name}
        elif prompt.parallel_tool_calls is False:
            choice = {"type": "auto"}
        if choice is not None:
            if prompt.parallel_tool_calls is False and choice["type"] != "none":
                choice["disable_parallel_tool_use"] = True
            body["tool_choice"] = choice
    return body


# --- upstream stream -> neutral events ------------------------------------------------------------


class AnthropicReader:
    """Reads Anthropic SSE events into neutral events (also the pass-through record watch)."""

    # Events a pass-through may leave unread once the first output has been seen.
    BULK = frozenset({"content_block_delta", "ping"})

    def __init__(self) -> None:
        self.block_kind: str | None = None
        self.signature = ""
        self.input_tokens: int | None = None
        self.cache_read: int | None = None
        self.cache_creation: int | None = None
        self.output_tokens: int | None = None
        self.stop_reason: str | None = None
        self.payload: dict[str, Any] | None = None  # the last event, parsed

    def _usage(self, usage: Any) -> Usage | None:
        if not isinstance(usage, dict):
            return None
        for attr, key in (
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cache_read", "cache_read_input_tokens"),
            ("cache_creation", "cache_creation_input_tokens"),
        ):
            value = as_int(usage.get(key))
            if value is not None and value >= 0:
                setattr(self, attr, value)
        if self.input_tokens is None:
            return Usage(None, self.output_tokens, None)
        # Anthropic's input_tokens leaves out cache reads and writes (R-REC-5)
        total = self.input_tokens + (self.cache_read or 0) + (self.cache_creation or 0)
        return Usage(total, self.output_tokens, self.cache_read or 0, self.cache_creation or 0)

    def feed(self, event: str | None, data: str) -> tuple[Event, ...]:
        self.payload = payload = event_payload(data)
        if payload is None:
            return NOTHING
        kind = payload.get("type") or event
        if kind == "content_block_delta":
            delta = payload.get("delta")
            if not isinstance(delta, dict):
                return NOTHING
            dtype = delta.get("type")
            if dtype == "text_delta":
                return (TextDelta(str(delta.get("text") or "")),)
            if dtype == "thinking_delta":
                return (ReasoningDelta(str(delta.get("thinking") or "")),)
            if dtype == "input_json_delta":
                return (ToolArgs(str(delta.get("partial_json") or "")),)
            if dtype == "signature_delta":
                self.signature += str(delta.get("signature") or "")
            return NOTHING
        if kind == "content_block_start":
            block = payload.get("content_block")
            if not isinstance(block, dict):
                return NOTHING
            self.block_kind = block.get("type")
            if self.block_kind == "tool_use":
                return (ToolStart(str(block.get("id") or ""), str(block.get("name") or "")),)
            if self.block_kind == "thinking":
                self.signature = str(block.get("signature") or "")
                if block.get("thinking"):
                    return (ReasoningDelta(str(block["thinking"])),)
            if self.block_kind == "text" and block.get("text"):
                return (TextDelta(str(block["text"])),)
            return NOTHING
        if kind == "content_block_stop":
            kind_was, self.block_kind = self.block_kind, None
            if kind_was == "tool_use":
                return (ToolEnd(),)
            if kind_was == "thinking":
                return (ReasoningEnd(tag_signature(ANTHROPIC_TAG, self.signature)),)
            return NOTHING
        if kind == "message_start":
            message = payload.get("message")
            if not isinstance(message, dict):
                return NOTHING
            started = Started(str(message.get("id") or ""), str(message.get("model") or ""))
            usage = self._usage(message.get("usage"))
            return (started, usage) if usage is not None else (started,)
        if kind == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self.stop_reason = str(delta["stop_reason"])
            usage = self._usage(payload.get("usage"))
            return (usage,) if usage is not None else NOTHING
        if kind == "message_stop":
            reason = STOP_REASONS.get(self.stop_reason or "end_turn", "stop")
            return (Finished("completed", reason),)
        if kind == "error":
            error = payload.get("error")
            error_type = str(error.get("type"))[:64] if isinstance(error, dict) else "error"
            message = error.get("message") if isinstance(error, dict) else None
            return (Finished("failed", "error", error_type, str(message or error_type)),)
        return NOTHING


# --- neutral events -> client stream / message ----------------------------------------------------


def _anthropic_usage(usage: Usage) -> dict[str, Any]:
    total = usage.input_tokens or 0
    cached = usage.cached_tokens or 0
    return {
        "input_tokens": max(0, total - cached),
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
        "output_tokens": usage.output_tokens or 0,
    }


class AnthropicRenderer:
    """Neutral events as Anthropic SSE event payloads (each has its own `type`)."""

    def __init__(self, model: str, message_id: str) -> None:
        self.model = model
        self.message_id = message_id
        self.started = False
        self.open: str | None = None  # text | thinking | tool_use
        self.index = -1
        self.usage = Usage(None, None, None)
        self.done = False

    def _start(self) -> list[dict[str, Any]]:
        if self.started:
            return []
        self.started = True
        return [
            {
                "type": "message_start",
                "message": {
                    "id": self.message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 0, "output_tokens": 0},
                },
            }
        ]

    def _close(self) -> list[dict[str, Any]]:
        if self.open is None:
            return []
        self.open = None
        return [{"type": "content_block_stop", "index": self.index}]

    def _block(self, kind: str, block: dict[str, Any]) -> list[dict[str, Any]]:
        out = self._close()
        self.index += 1
        self.open = kind
        out.append({"type": "content_block_start", "index": self.index, "content_block": block})
        return out

    def render(self, event: Event) -> list[dict[str, Any]]:
        if self.done:
            return []
        out = self._start()
        if isinstance(event, TextDelta):
            if self.open != "text":
                out += self._block("text", {"type": "text", "text": ""})
            if event.text:
                out.append(
                    {
                        "type": "content_block_delta",
                        "index": self.index,
                        "delta": {"type": "text_delta", "text": event.text},
                    }
                )
        elif isinstance(event, ReasoningDelta):
            if self.open != "thinking":
                out += self._block(
                    "thinking", {"type": "thinking", "thinking": "", "signature": ""}
                )
            if event.text:
                out.append(
                    {
                        "type": "content_block_delta",
                        "index": self.index,
                        "delta": {"type": "thinking_delta", "thinking": event.text},
                    }
                )
        elif isinstance(event, ReasoningEnd):
            if self.open != "thinking":
                out += self._block(
                    "thinking", {"type": "thinking", "thinking": "", "signature": ""}
                )
            if event.signature:
                out.append(
                    {
                        "type": "content_block_delta",
                        "index": self.index,
                        "delta": {"type": "signature_delta", "signature": event.signature},
                    }
                )
            out += self._close()
        elif isinstance(event, ToolStart):
            out += self._block(
                "tool_use",
                {"type": "tool_use", "id": event.call_id, "name": event.name, "input": {}},
            )
        elif isinstance(event, ToolArgs):
            if self.open == "tool_use" and event.text:
                out.append(
                    {
                        "type": "content_block_delta",
                        "index": self.index,
                        "delta": {"type": "input_json_delta", "partial_json": event.text},
                    }
                )
        elif isinstance(event, ToolEnd):
            if self.open == "tool_use":
                out += self._close()
        elif isinstance(event, Usage):
            self.usage = event
        elif isinstance(event, Finished):
            out += self._close()
            self.done = True
            if event.status == "failed":
                out.append(anthropic_stream_error(event.error_type, event.message))
                return out
            out.append(
                {
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": STOP_REASON_FOR.get(event.reason, "end_turn"),
                        "stop_sequence": None,
                    },
                    "usage": _anthropic_usage(self.usage),
                }
            )
            out.append({"type": "message_stop"})
        return out

    def fail(self, message: str, code: str = "upstream_error") -> list[dict[str, Any]]:
        """The stream broke off: close what is open and say so in-band."""
        if self.done:
            return []
        self.done = True
        error = anthropic_stream_error("api_error", message)
        error["error"]["code"] = code
        return self._start() + self._close() + [error]


def anthropic_stream_error(error_type: str | None, message: str | None) -> dict[str, Any]:
    kind = error_type if error_type in ANTHROPIC_ERROR_TYPES else "api_error"
    return {"type": "error", "error": {"type": kind, "message": message or "upstream error"}}


ANTHROPIC_ERROR_TYPES = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "request_too_large",
        "rate_limit_error",
        "api_error",
        "overloaded_error",
    }
)


def anthropic_message(transcript: Transcript, model: str, message_id: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block in transcript.blocks:
        if block.kind == "text":
            content.append({"type": "text", "text": block.text})
        elif block.kind == "reasoning":
            content.append(
                {"type": "thinking", "thinking": block.text, "signature": block.signature or ""}
            )
        else:
            content.append(
                {
                    "type": "tool_use",
                    "id": block.call_id,
                    "name": block.name,
                    "input": json_object(block.text),
                }
            )
    reason = transcript.finished.reason if transcript.finished else "stop"
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": STOP_REASON_FOR.get(reason, "end_turn"),
        "stop_sequence": None,
        "usage": _anthropic_usage(transcript.usage),
    }


# Signatures other upstreams made, which Anthropic would refuse (Codex, Gemini).
FOREIGN_TO_ANTHROPIC = (OPENAI_TAG, GEMINI_TAG)


def strip_foreign_thinking(body: dict[str, Any]) -> dict[str, Any] | None:
    """A native Messages body without the thinking blocks a Codex or Gemini model wrote (their
    signatures mean nothing to Anthropic and would be refused); None when there are none.

    A conversation that switches from a GPT or Gemini to a Claude model carries them."""
    changed = False
    messages = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            kept = [
                b
                for b in content
                if not (
                    isinstance(b, dict)
                    and b.get("type") == "thinking"
                    and str(b.get("signature") or "").startswith(FOREIGN_TO_ANTHROPIC)
                )
            ]
            if len(kept) != len(content):
                changed = True
                message = dict(message, content=kept or [{"type": "text", "text": "…"}])
        messages.append(message)
    return dict(body, messages=messages) if changed else None
