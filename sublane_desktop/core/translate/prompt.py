"""The neutral request: what every client protocol can say and every upstream can hear."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sublane_desktop.core.json_text import parse as parse_json


@dataclass
class Text:
    text: str


@dataclass
class Image:
    url: str  # an http(s) URL or a data: URL


@dataclass
class ToolCall:
    call_id: str
    name: str
    arguments: str  # JSON text, as the model wrote it


@dataclass
class ToolResult:
    call_id: str
    content: list[Text | Image]
    is_error: bool = False


@dataclass
class Reasoning:
    text: str
    signature: str | None = None  # opaque, tagged with its origin (events.tag_signature)


Part = Text | Image | ToolCall | ToolResult | Reasoning


@dataclass
class Turn:
    role: str  # user | assistant
    parts: list[Part]


@dataclass
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class Prompt:
    model: str
    system: list[str] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    tool_choice: str | None = None  # auto | none | required | tool (then tool_name)
    tool_name: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: list[str] = field(default_factory=list)
    stream: bool = False
    reasoning_effort: str | None = None  # minimal | low | medium | high
    parallel_tool_calls: bool | None = None
    cache_key: str | None = None  # Responses prompt_cache_key
    include_usage: bool = False  # Chat Completions stream_options.include_usage
    output_format: dict[str, Any] | None = None  # Responses `text.format` (JSON modes)

    def add(self, role: str, part: Part) -> None:
        """Append a part, merging into the last turn when the role repeats."""
        if self.turns and self.turns[-1].role == role:
            self.turns[-1].parts.append(part)
        else:
            self.turns.append(Turn(role, [part]))


class TranslationError(ValueError):
    """The request cannot be expressed for the target protocol (a 400 for the client)."""


# --- small readers shared by the parsers ----------------------------------------------------------


def as_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def json_text(value: Any) -> str:
    """Tool arguments as JSON text, whatever form the client gave them in."""
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, separators=(",", ":"))


def json_object(text: str) -> dict[str, Any]:
    """Tool arguments as an object (Anthropic wants one); unparsable text is kept visible."""
    if not text.strip():
        return {}
    try:
        value = parse_json(text)
    except ValueError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_value": value}


def text_of(parts: list[Text | Image]) -> str:
    return "".join(p.text for p in parts if isinstance(p, Text))


def split_data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a base64 data: URL, else None."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[: -len(";base64")] or "application/octet-stream", data


EFFORT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32000}


def effort_for_budget(budget: int | None) -> str:
    """An Anthropic thinking budget as a Responses reasoning effort."""
    if budget is None or budget <= 2048:
        return "low"
    return "medium" if budget <= 8192 else "high"


def json_mode_instruction(output_format: dict[str, Any]) -> str:
    """What an upstream without a JSON mode is told instead."""
    schema = output_format.get("schema")
    if isinstance(schema, dict):
        return (
            "Reply with only a JSON object, no prose and no code fence, matching this JSON"
            " schema: " + json.dumps(schema, separators=(",", ":"))
        )
    return "Reply with only a JSON object, no prose and no code fence."
