"""Upstream error bodies, read whatever their shape, and error types per client protocol."""

from __future__ import annotations

import json
from typing import Any

ANTHROPIC_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
OPENAI_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


def read_error(body: bytes) -> tuple[str | None, str]:
    """(error type or code, message) from an Anthropic, OpenAI or ChatGPT-backend error body."""
    try:
        payload: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        text = body[:300].decode("utf-8", "replace").strip()
        return None, text or "upstream error"
    if not isinstance(payload, dict):
        return None, "upstream error"
    error = payload.get("error")
    if isinstance(error, dict):
        kind = error.get("type") or error.get("code")
        message = error.get("message") or kind or "upstream error"
        return (str(kind)[:64] if kind else None), str(message)
    detail = payload.get("detail")  # the ChatGPT backend's FastAPI-style errors
    if isinstance(detail, dict):
        kind = detail.get("code") or detail.get("type")
        return (str(kind)[:64] if kind else None), str(detail.get("message") or kind or detail)
    if isinstance(detail, str):
        return None, detail
    if isinstance(error, str):
        return None, error
    return None, "upstream error"


def anthropic_type_for(status: int) -> str:
    return ANTHROPIC_BY_STATUS.get(status, "api_error")


def openai_type_for(status: int) -> str:
    return OPENAI_BY_STATUS.get(status, "server_error")
