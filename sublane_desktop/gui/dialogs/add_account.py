"""Add an account (R-UI-4): import an installed CLI's login, or paste OAuth JSON or an API key.

The secret goes straight to service.add_account (validated there, stored in the keyring); this
dialog keeps it only in its text box, which is cleared once the account is added. Errors are the
service's CredentialError messages, shown inline.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.credentials import PROVIDERS, CredentialError
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.dialogs.common import error_label, show_error


def secret_from_text(text: str) -> dict[str, Any]:
    """What was pasted, as the secret object add_account validates: JSON, or a bare API key."""
    text = text.strip()
    if not text:
        raise CredentialError("paste the OAuth JSON or the API key")
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            raise CredentialError("the pasted text starts like JSON but is not valid JSON"
                                  ) from None
        return value
    if any(c.isspace() for c in text):
        raise CredentialError("an API key is one word: no spaces or line breaks")
    return {"api_key": text}


class AddAccountDialog(QDialog):
    added = Signal(object)  # the new account's view

    def __init__(self, bridge: Bridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.setWindowTitle("Add account")

        imports = QGroupBox("Import the login of an installed tool")
        self.import_claude = QPushButton("Import Claude Code login")
        self.import_claude.setToolTip("Reads ~/.claude/.credentials.json")
        self.import_claude.clicked.connect(lambda: self._import("claude-code"))
        self.import_codex = QPushButton("Import Codex login")
        self.import_codex.setToolTip("Reads ~/.codex/auth.json")
        self.import_codex.clicked.connect(lambda: self._import("codex"))
        row = QHBoxLayout(imports)
        row.addWidget(self.import_claude)
        row.addWidget(self.import_codex)
        row.addStretch(1)

        manual = QGroupBox("Or paste a credential")
        self.provider = QComboBox()
        self.provider.addItems(list(PROVIDERS))
        self.name = QLineEdit()
        self.name.setPlaceholderText("e.g. work-max")
        self.group = QLineEdit("default")
        self.limit = QSpinBox()
        self.limit.setRange(1, 8)
        self.limit.setValue(2)
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("provider default")
        self.secret = QPlainTextEdit()
        self.secret.setPlaceholderText(
            '{"access_token": "…", "refresh_token": "…", "expires_at": 1767225600}\n'
            "or an API key (sk-ant-…, sk-…)")
        self.secret.setFixedHeight(self.secret.fontMetrics().lineSpacing() * 5)
        form = QFormLayout(manual)
        form.addRow("Provider", self.provider)
        form.addRow("Name", self.name)
        form.addRow("Group", self.group)
        form.addRow("Limit", self.limit)
        form.addRow("Base URL", self.base_url)
        form.addRow("Secret", self.secret)
        note = QLabel("The secret goes to the system keyring, never to SubLane's database.")
        note.setWordWrap(True)
        form.addRow(note)

        self.error = error_label()
        self.status = QLabel()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.add_button = self.buttons.addButton("Add", QDialogButtonBox.ButtonRole.ApplyRole)
        self.add_button.setDefault(True)
        self.add_button.clicked.connect(self.submit)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(imports)
        layout.addWidget(manual)
        layout.addWidget(self.error)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self.resize(520, 0)

    def _busy(self, busy: bool) -> None:
        for widget in (self.import_claude, self.import_codex, self.add_button):
            widget.setEnabled(not busy)

    def _import(self, which: str) -> None:
        show_error(self.error, "")
        self._watch(self._bridge.import_login(which))

    def submit(self) -> None:
        show_error(self.error, "")
        name = self.name.text().strip()
        if not name:
            show_error(self.error, "give the account a name")
            return
        try:
            secret = secret_from_text(self.secret.toPlainText())
        except CredentialError as exc:
            show_error(self.error, str(exc))
            return
        self._watch(self._bridge.add_account(
            self.provider.currentText(), name, secret, group=self.group.text().strip()
            or "default", base_url=self.base_url.text().strip() or None,
            max_concurrency=self.limit.value()))

    def _watch(self, reply: Any) -> None:
        if reply is None:
            show_error(self.error, "this build cannot add accounts")
            return
        self._busy(True)
        reply.done.connect(self._added)
        reply.failed.connect(self._failed)

    def _added(self, view: Any) -> None:
        self._busy(False)
        self.secret.clear()
        name = view.get("name", "account") if isinstance(view, dict) else "account"
        self.status.setText(f"Added {name}.")
        self.added.emit(view)

    def _failed(self, message: str) -> None:
        self._busy(False)
        show_error(self.error, message)

    def hideEvent(self, event: Any) -> None:
        self.secret.clear()  # a pasted secret does not linger in a hidden dialog
        super().hideEvent(event)
