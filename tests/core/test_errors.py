"""Gateway errors and upstream waits (R-PX-8, R-FT-4): a stable code with its status and
types per protocol, and an upstream Retry-After read only when it is a usable wait."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from sublane_desktop.core.errors import UPSTREAM_WAIT_MAX, GatewayError, parse_retry_after

NOW = 1_800_000_000.0


def http_date(at: float) -> str:
    return format_datetime(datetime.fromtimestamp(at, UTC), usegmt=True)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("30", 30.0),
        (" 2.5 ", 2.5),
        (str(UPSTREAM_WAIT_MAX), UPSTREAM_WAIT_MAX),
        (http_date(NOW + 120), 120.0),
        ("0", None),
        ("-5", None),
        (str(UPSTREAM_WAIT_MAX + 1), None),  # an absurd wait is a broken header
        (http_date(NOW - 60), None),  # already past
        ("Wed, 21 Oct 2026 07:28:00 -0000", None),  # a date without a zone says no moment
        ("soon", None),
        ("", None),
        (None, None),
        (30, None),
    ],
)
def test_an_upstream_wait_is_used_only_when_it_is_one(value, seconds):
    assert parse_retry_after(value, NOW) == seconds


def test_an_unknown_code_is_an_internal_error_in_both_protocols():
    err = GatewayError("something_new", "odd", param="model")
    assert (err.status, err.anthropic_type, err.openai_type) == (500, "api_error", "server_error")
    assert err.param == "model" and err.retry_after is None and err.message == "odd"


def test_only_a_wait_carries_a_bounded_retry_after():
    assert GatewayError("upstream_error", "x").retry_after is None
    assert GatewayError("no_account", "x").retry_after == 1  # a 503 always says when
    assert GatewayError("account_busy", "x", retry_after=9999).retry_after == 300
    assert GatewayError("upstream_error", "x", retry_after=2.2).retry_after == 3
    assert GatewayError("account_busy", "x", status=400).retry_after is None
