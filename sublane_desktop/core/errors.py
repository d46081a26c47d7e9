"""Gateway errors carry a stable code (R-PX-8); the proxy renders them per route."""

from __future__ import annotations

import math

RETRY_AFTER_MIN = 1
RETRY_AFTER_MAX = 300

# code -> (HTTP status, Anthropic error type, OpenAI error type)
_KINDS: dict[str, tuple[int, str, str]] = {
    "account_busy": (429, "rate_limit_error", "rate_limit_error"),
    "account_cooling": (429, "rate_limit_error", "rate_limit_error"),
    "quota_exhausted": (429, "rate_limit_error", "rate_limit_error"),
    "capacity_exhausted": (429, "rate_limit_error", "rate_limit_error"),
    "no_account": (503, "overloaded_error", "server_error"),
    "invalid_request": (400, "invalid_request_error", "invalid_request_error"),
    "unknown_model": (400, "invalid_request_error", "invalid_request_error"),
    "unsupported_media_type": (415, "invalid_request_error", "invalid_request_error"),
    "request_too_large": (413, "request_too_large", "invalid_request_error"),
    "unauthorized": (401, "authentication_error", "authentication_error"),
    "forbidden": (403, "permission_error", "permission_error"),
    "not_found": (404, "not_found_error", "not_found_error"),
    "upstream_error": (502, "api_error", "server_error"),
    "upstream_timeout": (504, "api_error", "server_error"),
    "auth_failed": (503, "api_error", "server_error"),
}


def bounded_retry_after(seconds: float | None) -> int:
    """Clamp a wait to the 1..300 s range every 429 must carry."""
    if seconds is None or not math.isfinite(seconds):
        return RETRY_AFTER_MIN
    return int(min(RETRY_AFTER_MAX, max(RETRY_AFTER_MIN, math.ceil(seconds))))


class GatewayError(Exception):
    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        default_status, self.anthropic_type, self.openai_type = _KINDS.get(
            code, (500, "api_error", "server_error")
        )
        self.status = status or default_status
        self.param = param
        self.retry_after: int | None = (
            bounded_retry_after(retry_after)
            if (retry_after is not None or self.status == 429)
            else None
        )
