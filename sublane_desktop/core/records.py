"""Request records (SPEC §6): the metadata one model attempt leaves, and the cache-hit rate."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

OUTCOMES = ("success", "incomplete", "error", "canceled", "rejected")
MODEL_MAX = 128
ERROR_CODE_MAX = 64


@dataclass
class RequestRecord:
    request_id: str
    user_id: int
    key_id: int
    group_id: int
    provider: str
    model: str
    protocol: str  # anthropic | openai-responses | openai-chat
    operation: str  # messages | count_tokens | responses | compact | chat
    started_at: float
    account_id: int | None = None
    duration_ms: int | None = None
    first_token_ms: int | None = None
    outcome: str = "success"
    error_code: str | None = None
    upstream_status: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    id: int | None = None

    def __post_init__(self) -> None:
        self.model = self.model[:MODEL_MAX]
        if self.error_code is not None:
            self.error_code = sanitize_code(self.error_code)

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row.pop("id")
        return row


def sanitize_code(code: str) -> str:
    """Error codes are identifiers, never upstream prose (R-REC-2)."""
    cleaned = "".join(c if (c.isalnum() or c in "_.-") else "_" for c in str(code))
    return cleaned[:ERROR_CODE_MAX] or "error"


def cache_hit_rate(input_tokens: int | None, cached_tokens: int | None) -> str:
    """Cached input ÷ total input as a display string (R-REC-5).

    `input_tokens` is the total input (for Anthropic already input + cache read + creation).
    """
    if input_tokens is None or cached_tokens is None or input_tokens <= 0:
        return "—"
    if cached_tokens < 0 or cached_tokens > input_tokens:
        return "—"
    if cached_tokens == 0:
        return "0%"
    percent = round(cached_tokens * 100.0 / input_tokens, 1)
    # Rounding must not claim a full or an empty cache that did not happen.
    if cached_tokens < input_tokens:
        percent = min(percent, 99.9)
    percent = max(percent, 0.1)
    text = f"{percent:.1f}".rstrip("0").rstrip(".")
    return f"{text}%"
