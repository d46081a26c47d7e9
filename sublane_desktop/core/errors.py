"""Gateway errors carry a stable code (R-PX-8); the proxy renders them per route."""

from __future__ import annotations

import math
from email.utils import parsedate_to_datetime

from sublane_desktop.core.numbers import finite_float

RETRY_AFTER_MIN = 1
RETRY_AFTER_MAX = 300
# Statuses that tell a client to come back later: each carries a bounded Retry-After (R-FT-4).
WAIT_STATUSES = frozenset({429, 503})
# An upstream wait longer than this is not a plan but a broken header: it is ignored and the
# cooldown ladder decides instead (R-FT-4).
UPSTREAM_WAIT_MAX = 86400.0

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
    # R-WF-2: only subscription logins that refuse this client could serve it.
    "claude_code_only": (403, "permission_error", "permission_error"),
    "not_found": (404, "not_found_error", "not_found_error"),
    "upstream_error": (502, "api_error", "server_error"),
    "upstream_timeout": (504, "api_error", "server_error"),
    "auth_failed": (503, "api_error", "server_error"),
    "upstream_unreachable": (502, "api_error", "server_error"),
    "internal_error": (500, "api_error", "server_error"),
    "method_not_allowed": (405, "invalid_request_error", "invalid_request_error"),
}


def bounded_retry_after(seconds: float | None) -> int:
    """The one Retry-After value every 429 and 503 leaving the server carries (R-FT-4):
    whole seconds in 1..300, whatever the wait it was computed from."""
    if seconds is None or not math.isfinite(seconds):
        return RETRY_AFTER_MIN
    return int(min(RETRY_AFTER_MAX, max(RETRY_AFTER_MIN, math.ceil(seconds))))


def parse_retry_after(value: object, now: float) -> float | None:
    """An upstream `retry-after` (delta-seconds or an HTTP date) as seconds from `now`.

    None for anything that is not a usable wait — missing, garbage, negative, zero, in the past
    or absurdly far away — so the caller falls back to the cooldown ladder and the raw value
    never reaches a client.
    """
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    seconds = finite_float(text)
    if seconds is None:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - now
    return seconds if 0 < seconds <= UPSTREAM_WAIT_MAX else None


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
            if (retry_after is not None or self.status in WAIT_STATUSES)
            else None
        )
