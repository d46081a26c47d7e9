"""Details of one request record (R-UI-3): the full request id and every stored field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.core.miss_words import LABELS, explain
from sublane_desktop.gui.dashboard import provider_name
from sublane_desktop.gui.dialogs.common import copy_button, main_action
from sublane_desktop.gui.requests_model import (
    NONE,
    Record,
    full_time,
    hit_rate,
    milliseconds,
    outcome_words,
    status,
    tokens,
)
from sublane_desktop.gui.sizing import keep_wrapped_text_whole, scroll_when_small

# What an error code means, said as a cause a person can act on (R-UI-8). Codes not listed
# here are the provider's own error types, shown as the provider named them.
CAUSES = {
    "upstream_unreachable": "the provider could not be reached (connection refused, DNS or "
    "TLS failure, or no answer in time)",
    "upstream_dropped": "the provider closed the connection before the answer was complete",
    "upstream_error": "the provider answered with an error",
    "upstream_timeout": "the provider did not answer in time",
    "credential_unavailable": "the account's credential was missing from the keyring or could "
    "not be read; sign in again or replace its credential",
    "auth_failed": "the account's sign-in is not usable; sign in again or replace its credential",
    "client_disconnected": "the client went away before the answer was complete",
    "gateway_error": "SubLane failed while relaying; the log has the details",
    "account_busy": "every account was at its request limit",
    "account_cooling": "every account that could serve it was cooling down after errors",
    "quota_exhausted": "every account that could serve it had used up its quota",
    "capacity_exhausted": "SubLane's pool-wide cap on simultaneous requests was reached",
    "no_account": "no account can serve this model",
    "invalid_request": "the request was not valid",
    "unknown_model": "no account serves this model",
    "request_too_large": "the request body was larger than allowed",
    "unauthorized": "the client key was missing or wrong",
    "forbidden": "the client key may not do this",
    "rate_limit_error": "the provider said too many requests",
    "overloaded_error": "the provider was overloaded",
    "authentication_error": "the provider refused the account's credential",
    "permission_error": "the provider refused: the account may not do this",
    "api_error": "the provider had an internal error",
    # R-WF-2: a refusal of the client, not of the account.
    "claude_code_only": "Anthropic serves Claude subscription logins to Claude Code only, and"
    " this client is not Claude Code; an Anthropic API key account would serve it",
    "third_party_extra_usage": "Anthropic sends third-party apps to extra usage instead of the"
    " plan's limits; the login is fine",
}


def cause_text(code: str | None, upstream_status: int | None = None) -> str:
    """`upstream_unreachable` → "the provider could not be reached (…) [upstream_unreachable]"."""
    if not code:
        return NONE
    cause = CAUSES.get(code)
    if cause is None and code.startswith("http_") and code[5:].isdigit():
        cause = f"the provider answered HTTP {code[5:]}"
    if cause is None:
        return code
    return f"{cause[0].upper()}{cause[1:]} [{code}]"


def detail_rows(
    record: Record, names: Mapping[str, Mapping[int, str]] | None = None
) -> list[tuple[str, str]]:
    """Label/value pairs for every field of a record (R-REC-2), in reading order.

    `names` optionally maps ids to names ({"keys": {id: name}, "users": {...}}) from the
    filters API, so a person sees "laptop (key 3)" rather than a bare number.
    """
    names = names or {}

    # Names only (R-UI-16): a bare number stands in only where the name is not known.
    def named(kind: str, noun: str, value: int | None) -> str:
        if value is None:
            return NONE
        return names.get(kind, {}).get(value) or f"{noun} {value}"

    account = record.get("account_name") or ""
    if not account and record.get("account_id") is not None:
        account = f"account {record['account_id']}"
    return [
        # The local date and time, never epoch seconds (fault 12).
        ("Started", full_time(record.get("started_at"))),
        ("Outcome", outcome_words(record.get("outcome"))),
        ("Cause", cause_text(record.get("error_code"), record.get("upstream_status"))),
        ("Provider status", status(record.get("upstream_status"))),  # its HTTP status
        ("Duration", milliseconds(record.get("duration_ms"))),
        ("First output", milliseconds(record.get("first_token_ms"))),
        ("Model", record.get("model") or NONE),
        # Words, not the stored ids (third newcomer pass: "anthropic", "messages").
        ("Provider", provider_name(record.get("provider")) if record.get("provider") else NONE),
        ("Protocol", _worded(PROTOCOL_WORDS, record.get("protocol"))),
        ("Operation", _worded(OPERATION_WORDS, record.get("operation"))),
        ("Account", account or NONE),
        ("Member", named("users", "member", record.get("user_id"))),
        ("Client key", named("keys", "key", record.get("key_id"))),
        ("Input tokens", tokens(record.get("input_tokens"))),
        ("Output tokens", tokens(record.get("output_tokens"))),
        ("Cached tokens", tokens(record.get("cached_tokens"))),
        ("Cache-hit rate", hit_rate(record)),
        ("Cache miss", _miss(record)),
        ("Read again", tokens(record.get("reread_tokens"))),
    ]


# The API a client spoke and what it asked for, as a person names them.
PROTOCOL_WORDS = {
    "anthropic": "Anthropic Messages API",
    "openai-chat": "OpenAI Chat Completions API",
    "openai-responses": "OpenAI Responses API",
}
OPERATION_WORDS = {
    "messages": "Send a message",
    "count_tokens": "Count tokens",
    "chat": "Chat completion",
    "responses": "Response",
    "compact": "Summarise the conversation",
}


def _worded(words: Mapping[str, str], value: Any) -> str:
    if not value:
        return NONE
    return words.get(str(value), str(value).replace("_", " "))


def _miss(record: Record) -> str:
    """What happened, in words (R-CF-3); a hit or an unbound request says so. The sentence
    alone: "first turn: first turn of this conversation…" said its cause twice."""
    if record.get("cache_miss") in LABELS:
        text = explain(record)
        return text[:1].upper() + text[1:]
    if record.get("reread_tokens") == 0:
        return "No: the cache served this turn"
    return NONE


class RequestDetailsDialog(QDialog):
    """Non-modal, reused by the Requests window: `show_record` swaps what it shows."""

    def __init__(
        self,
        record: Record,
        parent: QWidget | None = None,
        *,
        names: Mapping[str, Mapping[int, str]] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Request details")
        self.setMinimumWidth(520)

        self.request_id = QLineEdit()
        self.request_id.setReadOnly(True)
        font = self.request_id.font()
        font.setFamily("monospace")
        font.setStyleHint(font.StyleHint.Monospace)
        self.request_id.setFont(font)
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the full request id")
        copy_button(self.copy_button, self.request_id.text)
        id_row = QHBoxLayout()
        id_row.addWidget(self.request_id, 1)
        id_row.addWidget(self.copy_button)

        self._form = QFormLayout()
        self._form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self._form.addRow("Request ID", id_row)
        self._values: list[tuple[QLabel, QLabel]] = []

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addLayout(self._form)
        layout.addWidget(buttons)
        main_action(self, None)  # Enter must not press Copy
        scroll_when_small(self)
        keep_wrapped_text_whole(self)
        self.show_record(record, names=names)

    def show_record(
        self, record: Record, names: Mapping[str, Mapping[int, str]] | None = None
    ) -> None:
        self.record = dict(record)
        self.request_id.setText(record.get("request_id") or "")
        self.request_id.setCursorPosition(0)
        rows = detail_rows(record, names)
        while len(self._values) < len(rows):
            label, value = QLabel(), QLabel()
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            value.setWordWrap(True)  # a cache miss is explained in a sentence (R-CF-3)
            self._form.addRow(label, value)
            self._values.append((label, value))
        for (label, value), (name, text) in zip(self._values, rows, strict=False):
            label.setText(name)
            value.setText(text)

    def rows(self) -> list[tuple[str, str]]:
        """What the dialog shows, label and value, for tests and screenshots."""
        shown = [("Request ID", self.request_id.text())]
        return shown + [(label.text(), value.text()) for label, value in self._values]
