"""OpenAI Responses on both sides: parse a client request, render an upstream request, read an
upstream stream, render a client stream or response object (PROTOCOLS.md "OpenAI / Codex")."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
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
    json_text,
)

TERMINAL = ("response.completed", "response.incomplete", "response.failed")
INCOMPLETE_REASONS = {
    "max_output_tokens": "length",
    "max_tokens": "length",
    "content_filter": "content_filter",
}


# --- client request -> Prompt ---------------------------------------------------------------------


def _parts(content: Any) -> list[Text | Image]:
    if isinstance(content, str):
        return [Text(content)]
    parts: list[Text | Image] = []
    for block in as_dicts(content):
        kind = block.get("type")
        if kind in ("input_text", "output_text", "text", "refusal"):
            text = block.get("text") if kind != "refusal" else block.get("refusal")
            if isinstance(text, str):
                parts.append(Text(text))
        elif kind == "input_image":
            url = block.get("image_url")
            if isinstance(url, dict):
                url = url.get("url")
            if isinstance(url, str) and url:
                parts.append(Image(url))
            elif block.get("file_id"):
                raise TranslationError("input_image by file_id cannot be forwarded; send a URL")
    return parts


def prompt_from_responses(body: dict[str, Any], model: str) -> Prompt:
    """A /v1/responses request body (or a WebSocket response.create) as a Prompt."""
    prompt = Prompt(model=model, stream=bool(body.get("stream")))
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        prompt.system.append(instructions)
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    elif items is None:
        items = []
    elif not isinstance(items, list):
        raise TranslationError("input must be a string or an array")
    for item in as_dicts(items):
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            parts = _parts(item.get("content"))
            if role in ("system", "developer"):
                prompt.system.extend(p.text for p in parts if isinstance(p, Text) and p.text)
            else:
                for part in parts:
                    prompt.add("assistant" if role == "assistant" else "user", part)
        elif kind == "function_call":
            prompt.add(
                "assistant",
                ToolCall(
                    str(item.get("call_id") or ""),
                    str(item.get("name") or ""),
                    json_text(item.get("arguments")),
                ),
            )
        elif kind == "function_call_output":
            output = item.get("output")
            prompt.add(
                "user",
                ToolResult(
                    str(item.get("call_id") or ""), _parts(output if output is not None else "")
                ),
            )
        elif kind == "reasoning":
            summary = "\n\n".join(
                s["text"] for s in as_dicts(item.get("summary")) if isinstance(s.get("text"), str)
            )
            prompt.add("assistant", Reasoning(summary, as_str(item.get("encrypted_content"))))
        # item_reference, built-in tool calls: nothing the other side can take
    for tool in as_dicts(body.get("tools")):
        if tool.get("type") == "function" and isinstance(tool.get("name"), str):
            params = tool.get("parameters")
            prompt.tools.append(
                Tool(
                    tool["name"],
                    str(tool.get("description") or ""),
                    params if isinstance(params, dict) else {"type": "object", "properties": {}},
                )
            )
    choice = body.get("tool_choice")
    if choice in ("auto", "none", "required"):
        prompt.tool_choice = choice
    elif isinstance(choice, dict) and choice.get("type") == "function":
        prompt.tool_choice, prompt.tool_name = "tool", as_str(choice.get("name"))
    prompt.max_tokens = as_int(body.get("max_output_tokens"))
    prompt.temperature = as_float(body.get("temperature"))
    prompt.top_p = as_float(body.get("top_p"))
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and isinstance(reasoning.get("effort"), str):
        prompt.reasoning_effort = reasoning["effort"]
    if isinstance(body.get("parallel_tool_calls"), bool):
        prompt.parallel_tool_calls = body["parallel_tool_calls"]
    prompt.cache_key = as_str(body.get("prompt_cache_key")) or None
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, dict) else None
    if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
        prompt.output_format = fmt
    return prompt


# --- Prompt -> upstream request -------------------------------------------------------------------


def _input_content(parts: Sequence[Part], role: str) -> list[dict[str, Any]]:
    text_type = "output_text" if role == "assistant" else "input_text"
    content = []
    for part in parts:
        if isinstance(part, Text):
            content.append({"type": text_type, "text": part.text})
        elif isinstance(part, Image):
            content.append({"type": "input_image", "image_url": part.url})
    return content


def _reasoning_item(part: Reasoning) -> dict[str, Any] | None:
    blob = untag_signature(OPENAI_TAG, part.signature)
    if blob is None:
        return None
    item_id, _, encrypted = blob.partition(".")
    item: dict[str, Any] = {
        "type": "reasoning",
        "summary": ([{"type": "summary_text", "text": part.text}] if part.text else []),
    }
    if item_id:
        item["id"] = item_id
    item["encrypted_content"] = encrypted
    return item


def _flush(items: list[dict[str, Any]], pending: list[Part], role: str) -> None:
    content = _input_content(pending, role)
    if content:
        items.append({"type": "message", "role": role, "content": content})
    pending.clear()


def responses_request(prompt: Prompt) -> dict[str, Any]:
    """The Responses body for a Prompt: streamed and stateless (the whole history goes up)."""
    items: list[dict[str, Any]] = []
    for turn in prompt.turns:
        pending: list[Part] = []  # consecutive text/image parts become one message item
        for part in turn.parts:
            if isinstance(part, (Text, Image)):
                pending.append(part)
                continue
            _flush(items, pending, turn.role)
            if isinstance(part, ToolCall):
                items.append(
                    {
                        "type": "function_call",
                        "call_id": part.call_id,
                        "name": part.name,
                        "arguments": part.arguments or "{}",
                    }
                )
            elif isinstance(part, ToolResult):
                if any(isinstance(p, Image) for p in part.content):
                    output: Any = _input_content(part.content, "user")
                else:
                    output = "".join(p.text for p in part.content if isinstance(p, Text))
                items.append(
                    {"type": "function_call_output", "call_id": part.call_id, "output": output}
                )
            elif isinstance(part, Reasoning):
                item = _reasoning_item(part)
                if item is not None:
                    items.append(item)
        _flush(items, pending, turn.role)
    body: dict[str, Any] = {"model": prompt.model, "input": items, "stream": True, "store": False}
    if prompt.system:
        body["instructions"] = "\n\n".join(prompt.system)
    if prompt.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in prompt.tools
        ]
        if prompt.tool_choice == "tool" and prompt.tool_name:
            body["tool_choice"] = {"type": "function", "name": prompt.tool_name}
        elif prompt.tool_choice in ("auto", "none", "required"):
            body["tool_choice"] = prompt.tool_choice
    if prompt.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = prompt.parallel_tool_calls
    if prompt.max_tokens is not None:
        body["max_output_tokens"] = prompt.max_tokens
    if prompt.temperature is not None:
        body["temperature"] = prompt.temperature
    if prompt.top_p is not None:
        body["top_p"] = prompt.top_p
    if prompt.reasoning_effort:
        body["reasoning"] = {"effort": prompt.reasoning_effort, "summary": "auto"}
        body["include"] = ["reasoning.encrypted_content"]
    if prompt.cache_key:
        body["prompt_cache_key"] = prompt.cache_key
    if prompt.output_format:
        body["text"] = {"format": prompt.output_format}
    return body


# --- upstream stream -> neutral events ------------------------------------------------------------


def usage_of(response: Any) -> Usage | None:
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return None
    details = usage.get("input_tokens_details")
    cached = as_int(details.get("cached_tokens")) if isinstance(details, dict) else None
    return Usage(as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens")), cached)


class ResponsesReader:
    """Reads Responses SSE events into neutral events (also the pass-through record watch).

    `response` keeps the terminal event's full response object, which is the whole answer for
    a client that did not ask to stream.
    """

    # Events a pass-through may leave unread once the first output has been seen.
    BULK = frozenset(
        {
            "response.output_text.delta",
            "response.function_call_arguments.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_text.delta",
            "response.refusal.delta",
            "response.custom_tool_call_input.delta",
        }
    )

    def __init__(self) -> None:
        self.response: dict[str, Any] | None = None
        self.payload: dict[str, Any] | None = None  # the last event, parsed
        self.item_type: str | None = None
        self.item_deltas = False  # the open item streamed its content as deltas
        self.saw_tool = False

    def feed(self, event: str | None, data: str) -> tuple[Event, ...]:
        self.payload = payload = event_payload(data)
        if payload is None:
            return NOTHING
        kind = payload.get("type") or event
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            self.item_deltas = True
            return (TextDelta(str(payload.get("delta") or "")),)
        if kind == "response.function_call_arguments.delta":
            self.item_deltas = True
            return (ToolArgs(str(payload.get("delta") or "")),)
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            self.item_deltas = True
            return (ReasoningDelta(str(payload.get("delta") or "")),)
        if kind == "response.reasoning_summary_part.added":
            if as_int(payload.get("summary_index")):
                return (ReasoningDelta("\n\n"),)
            return NOTHING
        if kind == "response.output_item.added":
            item = payload.get("item")
            if not isinstance(item, dict):
                return NOTHING
            self.item_type, self.item_deltas = item.get("type"), False
            if self.item_type == "function_call":
                self.saw_tool = True
                return (ToolStart(str(item.get("call_id") or ""), str(item.get("name") or "")),)
            return NOTHING
        if kind == "response.output_item.done":
            return self._item_done(payload.get("item"))
        if kind in TERMINAL:
            return self._terminal(kind, payload.get("response"))
        if kind == "response.created":
            response = payload.get("response")
            if isinstance(response, dict):
                return (Started(str(response.get("id") or ""), str(response.get("model") or "")),)
            return NOTHING
        if kind == "error":
            found = payload.get("error")
            error = found if isinstance(found, dict) else payload
            code = str(error.get("code") or error.get("type") or "error")[:64]
            return (Finished("failed", "error", code, str(error.get("message") or code)),)
        return NOTHING

    def _item_done(self, item: Any) -> tuple[Event, ...]:
        if not isinstance(item, dict):
            return NOTHING
        kind, streamed = item.get("type"), self.item_deltas
        self.item_type, self.item_deltas = None, False
        if kind == "function_call":
            args = item.get("arguments")
            if not streamed and isinstance(args, str) and args:
                return (ToolArgs(args), ToolEnd())
            return (ToolEnd(),)
        if kind == "reasoning":
            out: list[Event] = []
            if not streamed:
                text = "\n\n".join(
                    s["text"]
                    for s in as_dicts(item.get("summary"))
                    if isinstance(s.get("text"), str)
                )
                if text:
                    out.append(ReasoningDelta(text))
            encrypted = item.get("encrypted_content")
            blob = f"{item.get('id') or ''}.{encrypted}" if isinstance(encrypted, str) else None
            out.append(ReasoningEnd(tag_signature(OPENAI_TAG, blob)))
            return tuple(out)
        if kind == "message" and not streamed:
            text = "".join(
                c.get("text") or ""
                for c in as_dicts(item.get("content"))
                if c.get("type") == "output_text"
            )
            return (TextDelta(text),) if text else NOTHING
        return NOTHING

    def _terminal(self, kind: str, response: Any) -> tuple[Event, ...]:
        response = response if isinstance(response, dict) else {}
        self.response = response
        usage = usage_of(response)
        if kind == "response.completed":
            end = Finished("completed", "tool_calls" if self.saw_tool else "stop")
        elif kind == "response.incomplete":
            details = response.get("incomplete_details")
            why = details.get("reason") if isinstance(details, dict) else None
            end = Finished("incomplete", INCOMPLETE_REASONS.get(str(why), "length"))
        else:
            error = response.get("error") if isinstance(response.get("error"), dict) else {}
            code = str(error.get("code") or error.get("type") or "upstream_failed")[:64]
            end = Finished("failed", "error", code, str(error.get("message") or code))
        return (usage, end) if usage is not None else (end,)


# --- neutral events -> client stream / response object --------------------------------------------


def _usage_json(usage: Usage) -> dict[str, Any] | None:
    if usage.input_tokens is None and usage.output_tokens is None:
        return None
    inp, out = usage.input_tokens or 0, usage.output_tokens or 0
    cached = usage.cached_tokens or 0
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": inp + out,
    }


def response_shell(response_id: str, model: str, created_at: int) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": "in_progress",
        "model": model,
        "output": [],
        "usage": None,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "temperature": None,
        "top_p": None,
        "text": {"format": {"type": "text"}},
        "reasoning": None,
        "store": False,
    }


def _finish_shell(shell: dict[str, Any], end: Finished | None, usage: Usage) -> str:
    """Fill in the terminal fields; returns the terminal event type."""
    shell["usage"] = _usage_json(usage)
    if end is None or end.status == "failed":
        shell["status"] = "failed"
        shell["error"] = {
            "code": (end.error_type if end else None) or "server_error",
            "message": (end.message if end else None) or "upstream error",
        }
        return "response.failed"
    if end.reason in ("length", "content_filter"):
        shell["status"] = "incomplete"
        shell["incomplete_details"] = {
            "reason": "max_output_tokens" if end.reason == "length" else "content_filter"
        }
        return "response.incomplete"
    shell["status"] = "completed"
    return "response.completed"


class ResponsesRenderer:
    """Neutral events as Responses SSE event payloads, in the order the API sends them."""

    def __init__(
        self,
        model: str,
        response_id: str,
        created_at: int,
        new_id: Callable[[str], str] | None = None,
    ) -> None:
        self.shell = response_shell(response_id, model, created_at)
        self.seq = 0
        self.started = False
        self.item: dict[str, Any] | None = None  # the open output item
        self.usage = Usage(None, None, None)
        self.done = False
        self._ids = 0
        self._new_id = new_id or self._counter_id

    def _counter_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}_{self.shell['id'].removeprefix('resp_')}{self._ids:03d}"

    def _ev(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return event

    def _start(self) -> list[dict[str, Any]]:
        if self.started:
            return []
        self.started = True
        return [
            self._ev("response.created", response=_copy(self.shell)),
            self._ev("response.in_progress", response=_copy(self.shell)),
        ]

    @property
    def _index(self) -> int:
        return len(self.shell["output"])

    def _close(self) -> list[dict[str, Any]]:
        item, self.item = self.item, None
        if item is None:
            return []
        out: list[dict[str, Any]] = []
        index = self._index
        if item["type"] == "message":
            part = item["content"][0]
            out.append(
                self._ev(
                    "response.output_text.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    text=part["text"],
                    logprobs=[],
                )
            )
            out.append(
                self._ev(
                    "response.content_part.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    part=dict(part),
                )
            )
        elif item["type"] == "reasoning":
            if item["summary"]:
                part = item["summary"][0]
                out.append(
                    self._ev(
                        "response.reasoning_summary_text.done",
                        item_id=item["id"],
                        output_index=index,
                        summary_index=0,
                        text=part["text"],
                    )
                )
                out.append(
                    self._ev(
                        "response.reasoning_summary_part.done",
                        item_id=item["id"],
                        output_index=index,
                        summary_index=0,
                        part=dict(part),
                    )
                )
        elif item["type"] == "function_call":
            out.append(
                self._ev(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=index,
                    arguments=item["arguments"],
                )
            )
        item["status"] = "completed"
        if item["type"] == "reasoning":
            item.pop("status")
        out.append(self._ev("response.output_item.done", output_index=index, item=_copy(item)))
        self.shell["output"].append(item)
        return out

    def _current(self) -> dict[str, Any]:
        """The output item just opened (`_open` always sets one)."""
        assert self.item is not None
        return self.item

    def _open(self, item: dict[str, Any]) -> list[dict[str, Any]]:
        out = self._close()
        self.item = item
        out.append(
            self._ev("response.output_item.added", output_index=self._index, item=_copy(item))
        )
        return out

    def render(self, event: Event) -> list[dict[str, Any]]:
        if self.done:
            return []
        out = self._start()
        item = self.item
        if isinstance(event, TextDelta):
            if item is None or item["type"] != "message":
                out += self._open(
                    {
                        "type": "message",
                        "id": self._new_id("msg"),
                        "status": "in_progress",
                        "role": "assistant",
                        "content": [],
                    }
                )
                item = self._current()
                part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                out.append(
                    self._ev(
                        "response.content_part.added",
                        item_id=item["id"],
                        output_index=self._index,
                        content_index=0,
                        part=dict(part),
                    )
                )
                item["content"].append(part)
            if event.text:
                item["content"][0]["text"] += event.text
                out.append(
                    self._ev(
                        "response.output_text.delta",
                        item_id=item["id"],
                        output_index=self._index,
                        content_index=0,
                        delta=event.text,
                        logprobs=[],
                    )
                )
        elif isinstance(event, (ReasoningDelta, ReasoningEnd)):
            if item is None or item["type"] != "reasoning":
                out += self._open(
                    {
                        "type": "reasoning",
                        "id": self._new_id("rs"),
                        "summary": [],
                        "status": "in_progress",
                    }
                )
                item = self._current()
            if isinstance(event, ReasoningDelta) and event.text:
                if not item["summary"]:
                    part = {"type": "summary_text", "text": ""}
                    out.append(
                        self._ev(
                            "response.reasoning_summary_part.added",
                            item_id=item["id"],
                            output_index=self._index,
                            summary_index=0,
                            part=dict(part),
                        )
                    )
                    item["summary"].append(part)
                item["summary"][0]["text"] += event.text
                out.append(
                    self._ev(
                        "response.reasoning_summary_text.delta",
                        item_id=item["id"],
                        output_index=self._index,
                        summary_index=0,
                        delta=event.text,
                    )
                )
            elif isinstance(event, ReasoningEnd):
                if event.signature:
                    item["encrypted_content"] = event.signature
                out += self._close()
        elif isinstance(event, ToolStart):
            out += self._open(
                {
                    "type": "function_call",
                    "id": self._new_id("fc"),
                    "call_id": event.call_id,
                    "name": event.name,
                    "arguments": "",
                    "status": "in_progress",
                }
            )
        elif isinstance(event, ToolArgs):
            if item is not None and item["type"] == "function_call" and event.text:
                item["arguments"] += event.text
                out.append(
                    self._ev(
                        "response.function_call_arguments.delta",
                        item_id=item["id"],
                        output_index=self._index,
                        delta=event.text,
                    )
                )
        elif isinstance(event, ToolEnd):
            if item is not None and item["type"] == "function_call":
                out += self._close()
        elif isinstance(event, Usage):
            self.usage = event
        elif isinstance(event, Finished):
            out += self._finish(event)
        return out

    def _finish(self, end: Finished | None) -> list[dict[str, Any]]:
        out = self._close()
        self.done = True
        kind = _finish_shell(self.shell, end, self.usage)
        out.append(self._ev(kind, response=_copy(self.shell)))
        return out

    def fail(self, message: str, code: str = "upstream_error") -> list[dict[str, Any]]:
        if self.done:
            return []
        return self._start() + self._finish(Finished("failed", "error", code, message))


def _copy(value: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(value))
    return copied


def responses_object(
    transcript: Transcript, model: str, response_id: str, created_at: int
) -> dict[str, Any]:
    """A whole Responses answer: replays the fold through the renderer, so both agree."""
    renderer = ResponsesRenderer(model, response_id, created_at)
    for block in transcript.blocks:
        if block.kind == "text":
            renderer.render(TextDelta(block.text))
        elif block.kind == "reasoning":
            renderer.render(ReasoningDelta(block.text))
            renderer.render(ReasoningEnd(block.signature))
        else:
            renderer.render(ToolStart(block.call_id, block.name))
            renderer.render(ToolArgs(block.text))
            renderer.render(ToolEnd())
    renderer.render(transcript.usage)
    renderer._finish(transcript.finished)
    return renderer.shell


# Reasoning other upstreams signed, which the Responses API cannot decrypt (Claude, Gemini).
FOREIGN_TO_OPENAI = (ANTHROPIC_TAG, GEMINI_TAG)


def strip_foreign_reasoning(body: dict[str, Any]) -> dict[str, Any] | None:
    """A native Responses body without the reasoning items a Claude or Gemini model wrote
    (their content is a signature the Responses API cannot decrypt); None when there are none.
    A conversation that switches from a Claude or Gemini to a GPT model carries them."""
    items = body.get("input")
    if not isinstance(items, list):
        return None
    kept = [
        i
        for i in items
        if not (
            isinstance(i, dict)
            and i.get("type") == "reasoning"
            and str(i.get("encrypted_content") or "").startswith(FOREIGN_TO_OPENAI)
        )
    ]
    return dict(body, input=kept) if len(kept) != len(items) else None
