"""The neutral answer stream, its non-streaming fold (`Transcript`) and its record watch (`Tally`).

Blocks are implicit: text or reasoning deltas continue the current block of their kind and a
different kind (or a tool call) starts a new one; `ReasoningEnd` and `ToolEnd` close theirs.
Upstream streams are sequential, so one open block at a time is all a renderer must track.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Started:
    message_id: str
    model: str


@dataclass(slots=True)
class TextDelta:
    text: str


@dataclass(slots=True)
class ReasoningDelta:
    text: str


@dataclass(slots=True)
class ReasoningEnd:
    signature: str | None  # tagged with its origin, or None


@dataclass(slots=True)
class ToolStart:
    call_id: str
    name: str


@dataclass(slots=True)
class ToolArgs:
    text: str


@dataclass(slots=True)
class ToolEnd:
    pass


@dataclass(slots=True)
class Usage:
    input_tokens: int | None  # total input, cached included
    output_tokens: int | None
    cached_tokens: int | None
    written_tokens: int | None = None  # input written to the cache (Anthropic cache creation)


@dataclass(slots=True)
class Finished:
    status: str  # completed | incomplete | failed (the upstream's own terminal verdict)
    reason: str  # stop | length | tool_calls | content_filter | error
    error_type: str | None = None
    message: str | None = None


Event = (
    Started
    | TextDelta
    | ReasoningDelta
    | ReasoningEnd
    | ToolStart
    | ToolArgs
    | ToolEnd
    | Usage
    | Finished
)

NOTHING: tuple[Event, ...] = ()


def event_payload(data: str) -> dict[str, Any] | None:
    """An SSE event's data as a JSON object, or None (stream readers skip anything else)."""
    if not data or data[0] != "{":
        return None
    try:
        payload = json.loads(data)
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


# Reasoning blobs are only meaningful to the upstream that made them.
ANTHROPIC_TAG = "sl1.an."
OPENAI_TAG = "sl1.oa."
GEMINI_TAG = "sl1.gm."


def tag_signature(tag: str, value: str | None) -> str | None:
    return tag + value if value else None


def untag_signature(tag: str, value: str | None) -> str | None:
    if value and value.startswith(tag) and len(value) > len(tag):
        return value[len(tag) :]
    return None


# Mid-stream upstream errors that say the account (not the request) is in trouble.
ACCOUNT_ERRORS = frozenset(
    {
        "overloaded_error",
        "api_error",
        "server_error",
        "rate_limit_error",
        "rate_limit_exceeded",
        "usage_limit_reached",
        "insufficient_quota",
        "service_unavailable",
    }
)


class Tally:
    """What a relayed stream tells the request record: usage, first output, how it ended."""

    def __init__(self) -> None:
        self.first_output = False
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cached_tokens: int | None = None
        self.written_tokens: int | None = None
        self.finished: Finished | None = None

    def feed(self, events: tuple[Event, ...] | list[Event]) -> bool:
        """Returns True when this batch carried the first nonempty output delta (R-REC-3)."""
        first = False
        for event in events:
            if isinstance(event, (TextDelta, ReasoningDelta, ToolArgs)):
                if not self.first_output and event.text:
                    self.first_output = first = True
            elif isinstance(event, Usage):
                self.input_tokens = event.input_tokens
                self.output_tokens = event.output_tokens
                self.cached_tokens = event.cached_tokens
                self.written_tokens = event.written_tokens
            elif isinstance(event, Finished):
                self.finished = event
        return first

    def verdict(self) -> tuple[str, str | None, bool]:
        """(record outcome, error code, whether the account is to blame)."""
        end = self.finished
        if end is None:
            return "incomplete", "stream_truncated", True
        if end.status == "completed":
            return "success", None, False
        if end.status == "incomplete":
            return "incomplete", end.reason if end.reason != "stop" else None, False
        code = end.error_type or "upstream_failed"
        return "error", code, code in ACCOUNT_ERRORS


@dataclass
class Block:
    kind: str  # text | reasoning | tool
    text: str = ""
    signature: str | None = None
    call_id: str = ""
    name: str = ""
    closed: bool = False


@dataclass
class Transcript:
    """A whole answer folded from neutral events, for clients that did not ask to stream."""

    message_id: str = ""
    model: str = ""
    blocks: list[Block] = field(default_factory=list)
    usage: Usage = field(default_factory=lambda: Usage(None, None, None))
    finished: Finished | None = None

    def feed(self, events: tuple[Event, ...] | list[Event]) -> None:
        for event in events:
            self._one(event)

    def _open(self, kind: str) -> Block:
        last = self.blocks[-1] if self.blocks else None
        if last is not None and last.kind == kind and not last.closed:
            return last
        if last is not None and last.kind != "tool":
            last.closed = True
        block = Block(kind)
        self.blocks.append(block)
        return block

    def _one(self, event: Event) -> None:
        if isinstance(event, Started):
            self.message_id = self.message_id or event.message_id
            self.model = self.model or event.model
        elif isinstance(event, TextDelta):
            self._open("text").text += event.text
        elif isinstance(event, ReasoningDelta):
            self._open("reasoning").text += event.text
        elif isinstance(event, ReasoningEnd):
            block = self._open("reasoning")
            block.signature = event.signature
            block.closed = True
        elif isinstance(event, ToolStart):
            if self.blocks:
                self.blocks[-1].closed = True
            self.blocks.append(Block("tool", call_id=event.call_id, name=event.name))
        elif isinstance(event, ToolArgs):
            if self.blocks and self.blocks[-1].kind == "tool" and not self.blocks[-1].closed:
                self.blocks[-1].text += event.text
        elif isinstance(event, ToolEnd):
            if self.blocks and self.blocks[-1].kind == "tool":
                self.blocks[-1].closed = True
        elif isinstance(event, Usage):
            self.usage = event
        elif isinstance(event, Finished):
            self.finished = event

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.blocks if b.kind == "text")

    @property
    def reasoning(self) -> str:
        return "".join(b.text for b in self.blocks if b.kind == "reasoning")

    @property
    def tools(self) -> list[Block]:
        return [b for b in self.blocks if b.kind == "tool"]
