"""The Requests table (R-UI-3): one page of request records as a Qt table model.

Rows are the history API's record dicts exactly as `/api/requests` returns them (R-REC-2 fields
plus `account_name` and the `cache_hit_rate` display string), so the window shows what the API
and `sublane requests` show. The formatting helpers are plain functions, shared with the details
dialog.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from enum import IntEnum
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

from sublane_desktop.core.miss_words import LABELS, MARKS, explain
from sublane_desktop.gui.colours import on_base
from sublane_desktop.gui.pool_status import percent

Record = dict[str, Any]
Index = QModelIndex | QPersistentModelIndex
_ROOT = QModelIndex()  # the invalid index: a flat table has rows only under the root

NONE = "—"


class Column(IntEnum):
    STARTED = 0
    MODEL = 1
    ACCOUNT = 2
    OUTCOME = 3
    STATUS = 4
    DURATION = 5
    FIRST_OUTPUT = 6
    INPUT = 7
    OUTPUT = 8
    CACHED = 9
    CACHE_HIT = 10


HEADERS = {
    Column.STARTED: "Started",
    Column.MODEL: "Model",
    Column.ACCOUNT: "Account",
    Column.OUTCOME: "Outcome",
    Column.STATUS: "Status",
    Column.DURATION: "Duration",
    Column.FIRST_OUTPUT: "First output",
    Column.INPUT: "Input",
    Column.OUTPUT: "Output",
    Column.CACHED: "Cached",
    Column.CACHE_HIT: "Cache hit",
}
HEADER_TIPS = {
    Column.STARTED: "Local start time and request id (click for details)",
    Column.STATUS: "The HTTP status the provider answered with",
    Column.FIRST_OUTPUT: "Time from the gateway start to the first text, reasoning or tool delta",
    Column.INPUT: "Total input tokens (cache reads and writes included)",
    Column.CACHED: "Input tokens served from the upstream cache",
    Column.CACHE_HIT: "Cached input ÷ total input; below it, why a turn missed the cache",
}
NUMERIC = frozenset(
    {
        Column.STATUS,
        Column.DURATION,
        Column.FIRST_OUTPUT,
        Column.INPUT,
        Column.OUTPUT,
        Column.CACHED,
        Column.CACHE_HIT,
    }
)

# The stored outcomes (core.records.OUTCOMES, what the API, the CLI and the filters' item data
# keep) in the words a person reads in the Requests window, its filter and request details.
# States are worded and capitalised ("Paused", "Limit reached"); outcomes read the same way.
OUTCOME_WORDS = {
    "success": "Served",
    "incomplete": "Cut short",
    "error": "Failed",
    "canceled": "Cancelled",
    "rejected": "Refused by the pool",
}
OUTCOME_TIPS = {
    "success": "The provider answered in full",
    "incomplete": "The answer stopped part way (the stream broke or timed out)",
    "error": "The provider or the gateway failed the request",
    "canceled": "The client went away before the answer was done",
    "rejected": "No account in the pool could take it; the line below says why",
}

# Muted enough for both light and dark palettes; success stays the plain text colour.
OUTCOME_COLORS = {
    "error": QColor("#d64541"),
    "rejected": QColor("#d9822b"),
    "incomplete": QColor("#b8860b"),
    "canceled": QColor("#8a8a8a"),
}

# A miss that cost something stands out; a conversation's first turn is expected and stays muted.
MISS_COLOR = QColor("#d9822b")
FIRST_TURN_COLOR = QColor("#8a8a8a")

RecordRole = Qt.ItemDataRole.UserRole + 1  # the whole record dict
RequestIdRole = Qt.ItemDataRole.UserRole + 2  # the full request id


# --- formatting (pure) ------------------------------------------------------------------------


def clock_time(seconds: float | None) -> str:
    if seconds is None:
        return NONE
    return time.strftime("%H:%M:%S", time.localtime(seconds))


def full_time(seconds: float | None) -> str:
    if seconds is None:
        return NONE
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(seconds)).strip()


def compact_id(request_id: str | None, keep: int = 8) -> str:
    """`req_` and the first hex digits: enough to tell rows apart; copying gives the full id."""
    if not request_id:
        return NONE
    prefix, sep, rest = request_id.partition("_")
    if not sep:
        prefix, rest = "", request_id
    if len(rest) <= keep + 1:
        return request_id
    return f"{prefix}{sep}{rest[:keep]}…"


def milliseconds(value: int | None) -> str:
    if value is None:
        return NONE
    if value < 1000:
        return f"{value} ms"
    if value < 60_000:
        return f"{value / 1000:.1f} s"
    minutes, rest = divmod(round(value / 1000), 60)
    return f"{minutes} min {rest} s"  # as idle times are said ("7 min"), fault 16


def hit_rate(record: Record) -> str:
    """Cached input ÷ total input in the app's one percent format ("97%", as the gauges say;
    fault 16), from the token counts. The API's `cache_hit_rate` keeps its own decimal (R-REC-5)
    and stands in when the counts are missing. Rounding never claims a full or an empty cache
    that did not happen."""
    total, cached = record.get("input_tokens"), record.get("cached_tokens")
    if not isinstance(total, int) or not isinstance(cached, int) or not 0 <= cached <= total:
        return record.get("cache_hit_rate") or NONE
    if total == 0:
        return record.get("cache_hit_rate") or NONE
    fraction = cached / total
    if 0 < cached < total:
        fraction = min(max(fraction, 0.01), 0.99)
    return percent(fraction)


def tokens(value: int | None) -> str:
    return NONE if value is None else f"{value:,}"


def status(value: int | None) -> str:
    return NONE if value is None else str(value)


def account(record: Record) -> str:
    return record.get("account_name") or NONE


# What went wrong, in a few words for the table's second line (R-UI-16: no internal ids); the
# details dialog says it in a sentence with the code, for a search or a bug report.
CAUSE_WORDS = {
    "upstream_unreachable": "provider unreachable",
    "upstream_dropped": "connection dropped",
    "upstream_error": "provider error",
    "upstream_timeout": "provider timed out",
    "credential_unavailable": "credential unreadable",
    "auth_failed": "sign-in needed",
    "client_disconnected": "client went away",
    "gateway_error": "SubLane failed",
    "account_busy": "all accounts busy",
    "account_cooling": "all accounts cooling",
    "quota_exhausted": "quota used up",
    "capacity_exhausted": "too many at once",
    "no_account": "no account for it",
    "invalid_request": "invalid request",
    "unknown_model": "unknown model",
    "request_too_large": "request too large",
    "unauthorized": "wrong client key",
    "forbidden": "not allowed",
    "rate_limit_error": "rate limited",
    "overloaded_error": "provider overloaded",
    "authentication_error": "credential refused",
    "permission_error": "not permitted",
    "api_error": "provider failed",
    "claude_code_only": "Claude Code only",
    "third_party_extra_usage": "sent to extra usage",
}


def cause_words(code: str) -> str:
    if code in CAUSE_WORDS:
        return CAUSE_WORDS[code]
    if code.startswith("http_") and code[5:].isdigit():
        return f"HTTP {code[5:]}"
    return code.replace("_", " ")


def outcome_words(stored: str | None) -> str:
    """One stored outcome in words; an outcome this version does not know is shown as it is."""
    if not stored:
        return NONE
    return OUTCOME_WORDS.get(stored, stored.replace("_", " "))


def outcome(record: Record) -> str:
    """Outcome, with what went wrong in words on a second line when there is an error code."""
    text = outcome_words(record.get("outcome"))
    if record.get("error_code"):
        text += "\n" + cause_words(record["error_code"])
    return text


def cell_text(record: Record, column: Column) -> str:
    if column == Column.STARTED:
        return f"{clock_time(record.get('started_at'))}\n{compact_id(record.get('request_id'))}"
    if column == Column.MODEL:
        return record.get("model") or NONE
    if column == Column.ACCOUNT:
        return account(record)
    if column == Column.OUTCOME:
        return outcome(record)
    if column == Column.STATUS:
        return status(record.get("upstream_status"))
    if column == Column.DURATION:
        return milliseconds(record.get("duration_ms"))
    if column == Column.FIRST_OUTPUT:
        return milliseconds(record.get("first_token_ms"))
    if column == Column.INPUT:
        return tokens(record.get("input_tokens"))
    if column == Column.OUTPUT:
        return tokens(record.get("output_tokens"))
    if column == Column.CACHED:
        return tokens(record.get("cached_tokens"))
    return cache_cell(record)


def cache_cell(record: Record) -> str:
    """The hit rate, and under it the miss's cause mark and name (R-CF-3)."""
    rate = hit_rate(record)
    cause = record.get("cache_miss")
    if cause not in LABELS:
        return rate
    return f"{rate}\n{MARKS[cause]} {LABELS[cause]}"


def cache_tooltip(record: Record) -> str:
    counts = (
        f"{tokens(record.get('cached_tokens'))} of {tokens(record.get('input_tokens'))}"
        " input tokens from the cache"
    )
    why = explain(record)
    return f"{why[:1].upper()}{why[1:]}\n{counts}" if why else counts


# The roles data() answers, as the plain ints Qt passes.
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_ALIGNMENT = int(Qt.ItemDataRole.TextAlignmentRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_RECORD = int(RecordRole)
_REQUEST_ID = int(RequestIdRole)
_ANSWERED = frozenset({_DISPLAY, _ALIGNMENT, _FOREGROUND, _TOOLTIP, _RECORD, _REQUEST_ID})


# --- the model --------------------------------------------------------------------------------


class RequestsModel(QAbstractTableModel):
    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._records: list[Record] = []
        self._texts: dict[tuple[int, int], str] = {}

    # Qt overrides (camelCase is Qt's)
    def rowCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._records)

    def columnCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(Column)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(Column):
            return None
        column = Column(section)
        if role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            return HEADER_TIPS.get(column)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _alignment(column)
        return None

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        # Asked for every role of every visible cell on each repaint, on the loop the proxy
        # shares: roles this model does not answer leave at the first line, and a cell's text
        # is made once per page (records are immutable; times are clock times, not "ago").
        if role not in _ANSWERED:
            return None
        row = index.row()
        if not index.isValid() or not 0 <= row < len(self._records):
            return None
        record = self._records[row]
        column = index.column()
        if role == _DISPLAY:
            text = self._texts.get((row, column))
            if text is None:
                text = self._texts[row, column] = cell_text(record, Column(column))
            return text
        if role == _RECORD:
            return record
        if role == _REQUEST_ID:
            return record.get("request_id")
        if role == _ALIGNMENT:
            return _ALIGNMENTS[column]
        if role == _FOREGROUND:
            if column == Column.OUTCOME:
                colour = OUTCOME_COLORS.get(record.get("outcome") or "")
                return on_base(colour) if colour is not None else None
            if column == Column.CACHE_HIT:
                cause = record.get("cache_miss")
                if cause in LABELS:
                    return on_base(FIRST_TURN_COLOR if cause == "first_turn" else MISS_COLOR)
            return None
        # the tooltip
        if column == Column.STARTED:
            return f"{record.get('request_id')}\n{full_time(record.get('started_at'))}"
        if column == Column.CACHE_HIT:
            return cache_tooltip(record)
        if column == Column.OUTCOME:
            if record.get("error_code"):
                return f"{cause_words(record['error_code'])} [{record['error_code']}]"
            return OUTCOME_TIPS.get(record.get("outcome") or "")
        return None

    # Ours
    def set_records(self, records: Sequence[Record]) -> None:
        self.beginResetModel()
        self._records = list(records)
        self._texts.clear()
        self.endResetModel()

    def record(self, row: int) -> Record:
        return self._records[row]

    def records(self) -> list[Record]:
        return list(self._records)

    def request_ids(self) -> list[str]:
        return [r.get("request_id") or "" for r in self._records]

    def row_of(self, record_id: int) -> int | None:
        for row, record in enumerate(self._records):
            if record.get("id") == record_id:
                return row
        return None


def _alignment(column: Column) -> Qt.AlignmentFlag:
    horizontal = Qt.AlignmentFlag.AlignRight if column in NUMERIC else Qt.AlignmentFlag.AlignLeft
    return horizontal | Qt.AlignmentFlag.AlignVCenter


_ALIGNMENTS = [_alignment(column) for column in Column]
