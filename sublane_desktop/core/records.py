"""Request records (SPEC §6): the metadata one model attempt leaves, and the cache-hit rate."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

OUTCOMES = ("success", "incomplete", "error", "canceled", "rejected")
MODEL_MAX = 128
ERROR_CODE_MAX = 64


class _CleanModel:
    """The model field: every write, the constructor's included, goes through clean_text and
    the length cap (R-REC-2, R-FT-10). A descriptor rather than a `__setattr__` hook, so the
    other twenty-odd fields are plain attribute writes: a record is made per request."""

    def __get__(self, record: object, owner: type | None = None) -> str:
        if record is None:
            raise AttributeError("model")  # no class-level default: the field stays required
        return record.__dict__["_model"]  # type: ignore[no-any-return]

    def __set__(self, record: object, value: object) -> None:
        record.__dict__["_model"] = clean_text(value)[:MODEL_MAX]


class _CleanErrorCode:
    """The error_code field: every write goes through sanitize_code (R-REC-2, R-FT-10)."""

    def __get__(self, record: object, owner: type | None = None) -> str | None:
        if record is None:
            return None  # the field's default
        return record.__dict__["_error_code"]  # type: ignore[no-any-return]

    def __set__(self, record: object, value: object) -> None:
        record.__dict__["_error_code"] = None if value is None else sanitize_code(value)


@dataclass(kw_only=True)  # model has a descriptor, so field order can't mark it required
class RequestRecord:
    request_id: str
    user_id: int
    key_id: int
    group_id: int
    provider: str
    model: _CleanModel = _CleanModel()
    protocol: str  # anthropic | openai-responses | openai-chat
    operation: str  # messages | count_tokens | responses | compact | chat
    started_at: float
    account_id: int | None = None
    duration_ms: int | None = None
    first_token_ms: int | None = None
    outcome: str = "success"
    error_code: _CleanErrorCode = _CleanErrorCode()
    upstream_status: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    # Cache-miss forensics (R-CF-1): a cause from core.cache_miss.CAUSES or None (a hit, an
    # unbound request, an attempt without usage counts); the input read again on a miss.
    cache_miss: str | None = None
    reread_tokens: int | None = None
    # On a miss only: who served the previous turn, and how long the conversation sat idle.
    previous_account_id: int | None = None
    idle_seconds: float | None = None
    id: int | None = None

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row.pop("id")
        return row


_CODE = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{ERROR_CODE_MAX - 1}}}", re.ASCII)
# Credential-shaped text: key prefixes (Anthropic, OpenAI, ours), JWTs, long random runs.
_SECRETISH = re.compile(r"(?i)(^|[^a-z])(sk|sl|sla|rt)-|eyJ[A-Za-z0-9_-]{8}|[A-Za-z0-9]{24}")


def sanitize_code(code: object, fallback: str = "error") -> str:
    """The one cleaner for every error code that is stored or shown (R-REC-2, R-FT-10).

    A code is an identifier such as `rate_limit_error` or `http_529`. Anything else an upstream
    sends as its error type or code (prose, punctuation, a credential that leaked into it) is
    replaced by `fallback` as a whole: cleaning it character by character would keep the secret.
    """
    text = str(code).strip() if code is not None else ""
    if not _CODE.fullmatch(text) or _SECRETISH.search(text):
        return fallback
    return text


def clean_text(value: object) -> str:
    """Text SQLite and UTF-8 can hold: lone surrogates become U+FFFD and NUL is dropped
    (R-FT-2: a client's odd string never costs a record)."""
    text = value if isinstance(value, str) else str(value)
    if "\x00" in text:
        text = text.replace("\x00", "")
    if text.isascii():  # a flag check: ASCII holds no surrogates (most text is ASCII)
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = _SURROGATE.sub("\ufffd", text)
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


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
