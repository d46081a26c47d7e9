"""Gemini `contents` on the upstream side (PROTOCOLS.md "Google Antigravity"): render the inner
Gemini request for a Prompt, and read Gemini answers (each SSE `data:` line of
`:streamGenerateContent?alt=sse`, or the whole `:generateContent` body) into neutral events.

Thought signatures. Gemini signs its reasoning and wants the signature back on the same part
next turn: on a `thought` part, and (Gemini 3) on the first `functionCall` part of a step, where
a missing one is a 400. A signature rides the client protocol's own opaque reasoning field (the
Anthropic thinking `signature`, the Responses reasoning `encrypted_content`), tagged with
GEMINI_TAG and with where it sat:

- `t:` — on a thought part: it travels with that reasoning block's text;
- `c:` — on a function call: it travels as an empty reasoning block right before the tool call,
  and goes back onto the next functionCall part of that turn.

Signatures on plain text parts are only advisory upstream and are not kept. A tool call whose
signature was lost (a Chat Completions client has nowhere to keep it) is sent with Google's
documented placeholder, so a Gemini 3 conversation still continues.
"""

from __future__ import annotations

import json
from typing import Any

from sublane_desktop.core.translate.events import (
    GEMINI_TAG,
    NOTHING,
    Event,
    Finished,
    ReasoningDelta,
    ReasoningEnd,
    Started,
    TextDelta,
    ToolArgs,
    ToolEnd,
    ToolStart,
    Usage,
    event_payload,
    tag_signature,
    untag_signature,
)
from sublane_desktop.core.translate.prompt import (
    EFFORT_BUDGETS,
    Image,
    Prompt,
    Reasoning,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    TranslationError,
    as_dicts,
    as_int,
    json_mode_instruction,
    json_object,
    json_text,
    split_data_url,
    text_of,
)

ON_THOUGHT = "t:"
ON_CALL = "c:"
# Google's documented stand-in for a function-call signature the client could not keep.
SKIP_SIGNATURE = "skip_thought_signature_validator"
DEFAULT_MAX_TOKENS = 8192

FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
}
# Finish reasons that mean the model could not produce a usable answer.
FAILED_FINISH = {
    "MALFORMED_FUNCTION_CALL": "malformed_function_call",
    "UNEXPECTED_TOOL_CALL": "unexpected_tool_call",
}

# JSON Schema keywords the Gemini function-declaration schema (an OpenAPI subset) accepts;
# the rest ($schema, additionalProperties, $ref…) is refused upstream with a 400, so dropped.
SCHEMA_KEYS = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "items",
        "enum",
        "format",
        "nullable",
        "anyOf",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "title",
        "propertyOrdering",
        "minProperties",
        "maxProperties",
    }
)


# String formats Gemini's schema accepts per type; any other format is refused with a 400.
FORMATS = {
    "string": ("enum", "date-time"),
    "integer": ("int32", "int64"),
    "number": ("float", "double"),
}


# --- Prompt -> Gemini request ---------------------------------------------------------------------


def clean_schema(schema: Any) -> Any:
    """A tool's JSON Schema in the subset Gemini takes: unknown keywords dropped, `const` as a
    one-value enum, a `["T", "null"]` type as nullable T."""
    if isinstance(schema, list):
        return [clean_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "const":
            out["enum"] = [value]
        elif key == "type" and isinstance(value, list):
            kinds = [v for v in value if v != "null"]
            out["type"] = kinds[0] if kinds else "string"
            if "null" in value:
                out["nullable"] = True
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {name: clean_schema(sub) for name, sub in value.items()}
        elif key in ("items", "anyOf"):
            out[key] = clean_schema(value)
        elif key in SCHEMA_KEYS:
            out[key] = value
    if isinstance(out.get("enum"), list):
        out["enum"] = [str(v) for v in out["enum"]]  # Gemini enums are strings
        out.setdefault("type", "string")
    if out.get("format") not in FORMATS.get(str(out.get("type")), ()):
        out.pop("format", None)  # "uri", "email"…: a 400 upstream, and only a hint anyway
    if isinstance(out.get("items"), list):  # tuple-style items: Gemini takes one schema
        out["items"] = out["items"][0] if out["items"] else {}
    if out.get("properties") == {}:
        del out["properties"]  # "should be non-empty for OBJECT type"
    if isinstance(out.get("required"), list):
        properties = out.get("properties")
        names: dict[str, Any] = properties if isinstance(properties, dict) else {}
        out["required"] = [r for r in out["required"] if r in names]
        if not out["required"]:
            del out["required"]
    return out


def _image_part(image: Image) -> dict[str, Any]:
    data = split_data_url(image.url)
    if data is None:
        raise TranslationError("images for Gemini models must be base64 data: URLs")
    return {"inlineData": {"mimeType": data[0], "data": data[1]}}


def _call_names(prompt: Prompt) -> dict[str, str]:
    """call id -> function name: a functionResponse must name its call, which Chat
    Completions tool messages and Anthropic tool_result blocks do not."""
    return {
        p.call_id: p.name for turn in prompt.turns for p in turn.parts if isinstance(p, ToolCall)
    }


def _signature(part: Reasoning) -> tuple[str, str] | None:
    """(where, signature) of a reasoning part Gemini made, else None."""
    blob = untag_signature(GEMINI_TAG, part.signature)
    if blob is None or blob[:2] not in (ON_THOUGHT, ON_CALL) or len(blob) <= 2:
        return None
    return blob[:2], blob[2:]


def _model_parts(parts: list[Any], gemini_model: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: str | None = None  # a signature waiting for the next function call
    signed_step = False  # this step's first call already carries one
    for part in parts:
        if isinstance(part, Reasoning):
            found = _signature(part)
            if found is None:
                continue  # another upstream's reasoning means nothing here
            where, signature = found
            if where == ON_CALL:
                pending = signature
            elif part.text:
                out.append({"thought": True, "text": part.text, "thoughtSignature": signature})
        elif isinstance(part, Text):
            if part.text:
                out.append({"text": part.text})
            signed_step = False
        elif isinstance(part, ToolCall):
            call: dict[str, Any] = {
                "functionCall": {
                    "name": part.name,
                    "args": json_object(part.arguments),
                    "id": part.call_id,
                }
            }
            if pending is not None:
                call["thoughtSignature"], pending = pending, None
                signed_step = True
            elif gemini_model and not signed_step:
                call["thoughtSignature"] = SKIP_SIGNATURE
                signed_step = True
            out.append(call)
        elif isinstance(part, Image):
            out.append(_image_part(part))
    return out


def _user_parts(parts: list[Any], names: dict[str, str]) -> list[dict[str, Any]]:
    responses: list[dict[str, Any]] = []  # function responses open the turn that answers
    rest: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Text):
            if part.text:
                rest.append({"text": part.text})
        elif isinstance(part, Image):
            rest.append(_image_part(part))
        elif isinstance(part, ToolResult):
            key = "error" if part.is_error else "output"
            responses.append(
                {
                    "functionResponse": {
                        "name": names.get(part.call_id) or part.call_id,
                        "id": part.call_id,
                        "response": {key: text_of(part.content)},
                    }
                }
            )
            rest.extend(_image_part(p) for p in part.content if isinstance(p, Image))
    return responses + rest


def _declaration(tool: Tool) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
    parameters = clean_schema(tool.parameters)
    if isinstance(parameters, dict) and parameters.get("properties"):
        declaration["parameters"] = parameters  # a tool without arguments declares none
    return declaration


def gemini_request(prompt: Prompt) -> dict[str, Any]:
    """The inner Gemini request for a Prompt (the provider wraps it in the v1internal
    envelope). Raises TranslationError for what cannot cross."""
    names = _call_names(prompt)
    gemini_model = prompt.model.startswith("gemini-")
    contents: list[dict[str, Any]] = []
    for turn in prompt.turns:
        if turn.role == "assistant":
            role, parts = "model", _model_parts(turn.parts, gemini_model)
        else:
            role, parts = "user", _user_parts(turn.parts, names)
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    if not contents:
        raise TranslationError("the request has no content to send")
    body: dict[str, Any] = {"contents": contents}
    system = list(prompt.system)
    config: dict[str, Any] = {}
    if prompt.output_format:
        system.append(json_mode_instruction(prompt.output_format))
        config["responseMimeType"] = "application/json"
    if system:
        body["systemInstruction"] = {"role": "user", "parts": [{"text": "\n\n".join(system)}]}
    max_tokens = prompt.max_tokens
    if prompt.reasoning_effort and prompt.reasoning_effort not in ("none", "minimal"):
        budget = EFFORT_BUDGETS.get(prompt.reasoning_effort, 8192)
        config["thinkingConfig"] = {"includeThoughts": True, "thinkingBudget": budget}
        if max_tokens is not None and max_tokens <= budget:
            max_tokens = budget + max_tokens  # the budget counts against the output limit
    if max_tokens is not None:
        config["maxOutputTokens"] = max_tokens
    if prompt.temperature is not None:
        config["temperature"] = prompt.temperature
    if prompt.top_p is not None:
        config["topP"] = prompt.top_p
    if prompt.stop:
        config["stopSequences"] = prompt.stop[:5]
    if config:
        body["generationConfig"] = config
    if prompt.tools:
        body["tools"] = [{"functionDeclarations": [_declaration(t) for t in prompt.tools]}]
        mode = {"none": "NONE", "required": "ANY", "tool": "ANY"}.get(
            prompt.tool_choice or "", "AUTO"
        )
        calling: dict[str, Any] = {"mode": mode}
        if prompt.tool_choice == "tool" and prompt.tool_name:
            calling["allowedFunctionNames"] = [prompt.tool_name]
        body["toolConfig"] = {"functionCallingConfig": calling}
    if prompt.cache_key:
        body["sessionId"] = prompt.cache_key  # stable per conversation: Google's cache affinity
    return body


# --- Gemini answer -> neutral events --------------------------------------------------------------


def usage_of(metadata: Any) -> Usage | None:
    """promptTokenCount includes the cached part; thoughts count as output."""
    if not isinstance(metadata, dict):
        return None
    prompt_tokens = as_int(metadata.get("promptTokenCount"))
    candidates = as_int(metadata.get("candidatesTokenCount"))
    thoughts = as_int(metadata.get("thoughtsTokenCount"))
    cached = as_int(metadata.get("cachedContentTokenCount"))
    output = (
        None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    )
    if prompt_tokens is None and output is None:
        return None
    return Usage(prompt_tokens, output, (cached or 0) if prompt_tokens is not None else None)


class GeminiReader:
    """Reads Gemini answers into neutral events: each SSE data line of a stream, or a whole
    `generateContent` body fed as one piece. `call_prefix` names tool calls that came without
    an id (ids must pair, and the client needs one to answer)."""

    BULK: frozenset[str] = frozenset()  # unnamed events: every one is read

    def __init__(self, call_prefix: str = "call_gm") -> None:
        self.call_prefix = call_prefix
        self.payload: dict[str, Any] | None = None
        self.started = False
        self.reasoning_open = False
        self.thought_signature: str | None = None
        self.calls = 0
        self.usage: Usage | None = None
        self.done = False

    def _end_reasoning(self) -> list[Event]:
        if not self.reasoning_open:
            return []
        self.reasoning_open = False
        signature, self.thought_signature = self.thought_signature, None
        return [
            ReasoningEnd(tag_signature(GEMINI_TAG, ON_THOUGHT + signature) if signature else None)
        ]

    def _part(self, part: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        call = part.get("functionCall")
        if part.get("thought") is True:
            text = part.get("text")
            if not self.reasoning_open:
                self.reasoning_open = True
            if isinstance(text, str) and text:
                out.append(ReasoningDelta(text))
            if signature:
                self.thought_signature = signature
            return out
        out += self._end_reasoning()
        if isinstance(call, dict):
            self.calls += 1
            if signature:
                out.append(ReasoningEnd(tag_signature(GEMINI_TAG, ON_CALL + signature)))
            call_id = call.get("id")
            if not isinstance(call_id, str) or not call_id:
                call_id = f"{self.call_prefix}_{self.calls}"
            args = call.get("args")
            out += [
                ToolStart(call_id, str(call.get("name") or "")),
                ToolArgs(json_text(args if isinstance(args, dict) else {})),
                ToolEnd(),
            ]
            return out
        text = part.get("text")
        if isinstance(text, str) and text:
            out.append(TextDelta(text))
        return out

    def feed(self, event: str | None, data: str) -> tuple[Event, ...]:
        self.payload = payload = event_payload(data)
        if payload is None or self.done:
            return NOTHING
        if isinstance(payload.get("error"), dict):
            error = payload["error"]
            code = str(error.get("status") or error.get("code") or "error").lower()[:64]
            self.done = True
            return (Finished("failed", "error", code, str(error.get("message") or code)),)
        inner = payload.get("response")
        response: dict[str, Any] = inner if isinstance(inner, dict) else payload
        out: list[Event] = []
        if not self.started:
            self.started = True
            out.append(
                Started(
                    str(response.get("responseId") or payload.get("traceId") or ""),
                    str(response.get("modelVersion") or ""),
                )
            )
        usage = usage_of(response.get("usageMetadata"))
        if usage is not None:
            self.usage = usage
        candidates = as_dicts(response.get("candidates"))
        candidate = candidates[0] if candidates else {}
        content = candidate.get("content")
        for part in as_dicts(content.get("parts") if isinstance(content, dict) else None):
            out += self._part(part)
        finish = candidate.get("finishReason")
        if isinstance(finish, str) and finish:
            out += self._end_reasoning()
            if self.usage is not None:
                out.append(self.usage)
            self.done = True
            if finish in FAILED_FINISH:
                code = FAILED_FINISH[finish]
                out.append(
                    Finished("failed", "error", code, str(candidate.get("finishMessage") or code))
                )
            else:
                reason = FINISH_REASONS.get(finish, "stop")
                if reason == "stop" and self.calls:
                    reason = "tool_calls"
                out.append(Finished("completed", reason))
        return tuple(out)

    def feed_whole(self, body: bytes) -> tuple[Event, ...]:
        """A whole `generateContent` answer (a JSON object, or a JSON array of chunks)."""
        text = body.decode("utf-8", "replace").strip()
        if text.startswith("["):
            try:
                chunks = json.loads(text)
            except ValueError:
                return NOTHING
            out: list[Event] = []
            for chunk in chunks if isinstance(chunks, list) else []:
                out += self.feed(None, json.dumps(chunk))
            return tuple(out)
        return self.feed(None, text)
