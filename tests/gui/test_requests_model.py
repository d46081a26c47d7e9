"""The Requests table model and its formatting: what each cell says (R-UI-3, R-REC-5)."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt

from sublane_desktop.core.history import present
from sublane_desktop.gui.request_details import detail_rows
from sublane_desktop.gui.requests_model import (
    HEADERS,
    Column,
    RecordRole,
    RequestIdRole,
    RequestsModel,
    compact_id,
    full_time,
    milliseconds,
    tokens,
)

FULL_ID = "req_3f9ac21b5e7d4a0c9b8e1f20"


def api_record(**fields) -> dict:
    """A record exactly as the history API presents it."""
    row = {
        "id": 7,
        "request_id": FULL_ID,
        "user_id": 1,
        "key_id": 2,
        "group_id": 1,
        "account_id": 3,
        "account_name": "work",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "protocol": "anthropic",
        "operation": "messages",
        "started_at": time.mktime((2026, 3, 14, 9, 26, 53, 0, 0, -1)),
        "duration_ms": 12_400,
        "first_token_ms": 830,
        "outcome": "success",
        "error_code": None,
        "upstream_status": 200,
        "input_tokens": 12_000,
        "output_tokens": 640,
        "cached_tokens": 9_000,
    }
    row.update(fields)
    return present(row, personal=False)


def cells(model: RequestsModel, row: int = 0) -> dict[str, str]:
    return {HEADERS[c]: model.index(row, c).data() for c in Column}


def test_cells_show_the_api_record() -> None:
    model = RequestsModel()
    model.set_records([api_record()])
    assert model.rowCount() == 1 and model.columnCount() == len(Column)
    assert cells(model) == {
        "Started": "09:26:53\nreq_3f9ac21b…",
        "Model": "claude-sonnet-4-5",
        "Account": "work",
        "Outcome": "Served",
        "Status": "200",
        "Duration": "12.4 s",
        "First output": "830 ms",
        "Input": "12,000",
        "Output": "640",
        "Cached": "9,000",
        "Cache hit": "75%",
    }
    index = model.index(0, Column.MODEL)
    assert index.data(RequestIdRole) == FULL_ID
    assert index.data(RecordRole)["id"] == 7
    assert FULL_ID in model.index(0, Column.STARTED).data(Qt.ItemDataRole.ToolTipRole)


def test_missing_values_read_as_a_dash() -> None:
    model = RequestsModel()
    model.set_records(
        [
            api_record(
                first_token_ms=None,
                upstream_status=None,
                duration_ms=None,
                input_tokens=None,
                output_tokens=None,
                cached_tokens=None,
                account_id=None,
                outcome="rejected",
                error_code="account_busy",
            )
        ]
    )
    shown = cells(model)
    for column in (
        "First output",
        "Status",
        "Duration",
        "Input",
        "Output",
        "Cached",
        "Cache hit",
        "Account",
    ):
        assert shown[column] == "—", column
    assert (
        shown["Outcome"] == "Refused by the pool\nall accounts busy"
    )  # words, not the code (R-UI-16)
    tip = model.index(0, Column.OUTCOME).data(Qt.ItemDataRole.ToolTipRole)
    assert tip == "all accounts busy [account_busy]"  # the code, for a search or a report
    assert model.index(0, Column.OUTCOME).data(Qt.ItemDataRole.ForegroundRole) is not None


def test_cache_hit_rate_is_said_as_every_percent_in_the_app() -> None:
    """Whole percent, as the gauges say it ("43%" beside "98.6%" was fault 16); rounding never
    claims a full or an empty cache that did not happen."""
    model = RequestsModel()
    model.set_records(
        [
            api_record(input_tokens=3, cached_tokens=1),
            api_record(input_tokens=100, cached_tokens=0),
            api_record(input_tokens=10, cached_tokens=20),
            api_record(input_tokens=1000, cached_tokens=998),
            api_record(input_tokens=1000, cached_tokens=2),
            api_record(input_tokens=1000, cached_tokens=1000),
        ]
    )
    assert [model.index(r, Column.CACHE_HIT).data() for r in range(6)] == [
        "33%",
        "0%",
        "—",
        "99%",
        "1%",
        "100%",
    ]


def test_formatting_helpers() -> None:
    assert compact_id(FULL_ID) == "req_3f9ac21b…"
    assert compact_id("req_short") == "req_short"
    assert compact_id(None) == "—"
    assert [milliseconds(v) for v in (None, 0, 999, 1000, 59_949, 125_000)] == [
        "—",
        "0 ms",
        "999 ms",
        "1.0 s",
        "59.9 s",
        "2 min 5 s",
    ]
    assert tokens(1234567) == "1,234,567" and tokens(None) == "—"


def test_numbers_are_right_aligned() -> None:
    model = RequestsModel()
    model.set_records([api_record()])
    align = model.index(0, Column.INPUT).data(Qt.ItemDataRole.TextAlignmentRole)
    assert Qt.AlignmentFlag(align) & Qt.AlignmentFlag.AlignRight
    align = model.index(0, Column.MODEL).data(Qt.ItemDataRole.TextAlignmentRole)
    assert not Qt.AlignmentFlag(align) & Qt.AlignmentFlag.AlignRight


def test_details_list_every_field_with_names() -> None:
    rows = dict(detail_rows(api_record(), {"keys": {2: "laptop"}, "users": {1: "admin"}}))
    # Names a person knows, not "work (3)"; the local time, not epoch seconds (fault 12).
    assert rows["Client key"] == "laptop"
    assert rows["Member"] == "admin"
    assert rows["Account"] == "work"
    assert rows["Started"] == full_time(api_record()["started_at"])
    assert str(int(api_record()["started_at"])) not in rows["Started"]
    unnamed = dict(detail_rows({**api_record(), "account_name": None}))
    assert unnamed["Client key"] == "key 2" and unnamed["Account"] == "account 3"
    assert rows["First output"] == "830 ms"
    assert rows["Cache-hit rate"] == "75%"
    assert "Record" not in rows and "Group" not in rows  # internal ids say nothing to a person
    personal = dict(detail_rows(present({**api_record(), "account_name": None}, personal=True)))
    assert personal["Account"] == "—"


def test_details_say_the_cause_not_only_the_code() -> None:
    from sublane_desktop.gui.request_details import cause_text

    failed = {**api_record(), "outcome": "error", "error_code": "upstream_unreachable"}
    assert dict(detail_rows(failed))["Cause"] == (
        "The provider could not be reached (connection refused, DNS or TLS failure, or no "
        "answer in time) [upstream_unreachable]"
    )
    assert cause_text("http_502") == "The provider answered HTTP 502 [http_502]"
    assert cause_text("overloaded_error") == "The provider was overloaded [overloaded_error]"
    assert cause_text("something_new") == "something_new"
    assert cause_text("claude_code_only").startswith(
        "Anthropic serves Claude subscription logins to Claude Code only"
    )
    assert cause_text("claude_code_only").endswith("would serve it [claude_code_only]")
    assert cause_text(None) == "—"


def test_every_known_error_code_has_words_for_the_table() -> None:
    from sublane_desktop.gui.request_details import CAUSES
    from sublane_desktop.gui.requests_model import CAUSE_WORDS, cause_words

    assert set(CAUSES) <= set(CAUSE_WORDS)
    assert cause_words("http_502") == "HTTP 502"
    assert cause_words("some_new_code") == "some new code"
