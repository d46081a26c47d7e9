"""One way for tests to make a RequestRecord: the required fields filled in, any overridden."""

from __future__ import annotations

from typing import Any

from sublane_desktop.core.records import RequestRecord

REQUIRED: dict[str, Any] = dict(
    request_id="req_1",
    user_id=1,
    key_id=1,
    group_id=1,
    provider="anthropic",
    model="claude-sonnet-4-5",
    protocol="anthropic",
    operation="messages",
    started_at=0.0,
)


def a_record(**fields: Any) -> RequestRecord:
    return RequestRecord(**{**REQUIRED, **fields})
