"""Add an account (R-UI-4): import an installed CLI's login (Claude Code, Codex, Gemini CLI, an
Antigravity account file), or paste OAuth JSON or an API key.

The secret goes straight to service.add_account (validated there, stored in the keyring); this
dialog keeps it only in its text box, which is cleared once the account is added. Errors are the
service's CredentialError messages, shown inline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.accounts.credentials import LOGIN_FILES, PROVIDERS, CredentialError
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.dialogs.common import error_label, main_action, secret_field, show_error
from sublane_desktop.gui.dialogs.keyring_setup import secret_home_words
from sublane_desktop.gui.sizing import (
    keep_wrapped_text_whole,
    scroll_when_small,
    set_default_size,
)


def secret_from_text(text: str) -> dict[str, Any]:
    """What was pasted, as the secret object add_account validates: JSON, or a bare API key."""
    text = text.strip()
    if not text:
        raise CredentialError("paste the OAuth JSON or the API key")
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            raise CredentialError(
                "the pasted text starts like JSON but is not valid JSON"
            ) from None
        return value
    if any(c.isspace() for c in text):
        raise CredentialError("an API key is one word: no spaces or line breaks")
    return {"api_key": text}


# What the provider list says (R-UI-16: words a person uses, not ids).
PROVIDER_WORDS = {
    "anthropic": "Claude (Anthropic)",
    "codex": "ChatGPT / Codex (OpenAI)",
    "antigravity": "Antigravity (Google)",
}


class AddAccountDialog(QDialog):
    added = Signal(object)  # the new account's view

    def __init__(self, bridge: Bridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.setWindowTitle("Add account")

        # R-LOGIN-1: a login of SubLane's own (no tool's login is shared or broken)
        signin = QGroupBox("Sign in with the browser")
        self.signin_buttons: dict[str, QPushButton] = {}
        signin_row = QHBoxLayout(signin)
        for which, label, account in (
            ("claude", "Claude", "your Claude account"),
            ("codex", "Codex", "your ChatGPT account"),
            ("antigravity", "Antigravity", "your Google account"),
        ):
            button = QPushButton(f"{label}…")  # three in a row fit the dialog's width
            button.setAccessibleName(f"Sign in with browser: {label}")
            button.setToolTip(
                f"Opens your browser to sign in with {account}; SubLane keeps a login of its"
                " own, so no tool's login is shared"
            )
            button.clicked.connect(lambda _checked=False, w=which: self.sign_in(w))
            self.signin_buttons[which] = button
            signin_row.addWidget(button)
        self.signin_url = QLabel()
        self.signin_url.setWordWrap(True)
        self.signin_url.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.signin_url.hide()

        imports = QGroupBox("Import the login of an installed tool")
        self.import_claude = QPushButton("Import Claude Code login")
        self.import_claude.setToolTip(
            "Reads $CLAUDE_CONFIG_DIR/.credentials.json (default ~/.claude/) or, on macOS, the"
            " Keychain item Claude Code keeps; SubLane and Claude Code then share the login's"
            " refreshes, so neither signs the other out"
        )
        self.import_claude.clicked.connect(lambda: self._import("claude-code"))
        self.import_codex = QPushButton("Import Codex login")
        self.import_codex.setToolTip(
            "Reads $CODEX_HOME/auth.json (default ~/.codex/) or Codex's keyring entry; SubLane"
            " and Codex then share the login's refreshes"
        )
        self.import_codex.clicked.connect(lambda: self._import("codex"))
        self.import_gemini = QPushButton("Import Gemini CLI login")
        self.import_gemini.setToolTip(
            "Reads ~/.gemini/oauth_creds.json. Since 2026-06-18 Google no longer accepts this"
            " login for individual accounts (free, AI Pro, Ultra): sign in to Antigravity instead"
        )
        self.import_gemini.clicked.connect(lambda: self._import("gemini"))
        self.import_antigravity = QPushButton("Import Antigravity account…")
        self.import_antigravity.setToolTip(
            "Choose an Antigravity account file (JSON with "
            "access_token, refresh_token and project_id)"
        )
        self.import_antigravity.clicked.connect(self._import_antigravity_file)
        grid = QGridLayout(imports)
        grid.addWidget(self.import_claude, 0, 0)
        grid.addWidget(self.import_codex, 0, 1)
        grid.addWidget(self.import_gemini, 1, 0)
        grid.addWidget(self.import_antigravity, 1, 1)

        manual = QGroupBox("Or paste a credential")
        self.provider = QComboBox()
        for provider in PROVIDERS:  # words a person uses; the id travels as the item's data
            self.provider.addItem(PROVIDER_WORDS.get(provider, provider), provider)
        self.name = QLineEdit()
        self.name.setPlaceholderText("e.g. work-max")
        self.group = QLineEdit("default")
        self.limit = QSpinBox()
        self.limit.setRange(1, 8)
        self.limit.setValue(2)
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("provider default")
        # Masked like a password (R-UI-10), with Show to check a paste; JSON pastes fine.
        self.secret, secret_row = secret_field("Secret")
        self.secret.setPlaceholderText('OAuth JSON {"access_token": …} or an API key')
        form = QFormLayout(manual)
        form.addRow("Provider", self.provider)
        form.addRow("Name", self.name)
        form.addRow("Group", self.group)
        self.limit.setToolTip("How many of your requests this account serves at the same time")
        form.addRow("Requests at once", self.limit)
        form.addRow("Base URL", self.base_url)
        form.addRow("Secret", secret_row)
        # Below the form, not in a form row: a wrapped label in a row overlapped the Secret
        # box once an error line pushed the layout (issue 14).
        # Where the secret really goes: the system keyring, or a file keyring (SubLane's own
        # or one chosen in keyring's settings); it said "system keyring" whichever was in use.
        self.keyring_note = QLabel()
        self.keyring_note.setWordWrap(True)
        self.say_where_secrets_go()

        self.error = error_label()
        # R-LOGIN-4: a name that exists and needs a credential is mended in place, not refused
        self.replace_button = QPushButton("Replace its credential")
        self.replace_button.setAccessibleName("Replace the existing account's credential")
        self.replace_button.setToolTip(
            "Give the existing account this credential; it keeps its history and settings"
        )
        self.replace_button.clicked.connect(lambda: self._submit(replace=True))
        self.replace_button.hide()
        self.name.textChanged.connect(lambda _text: self.replace_button.hide())
        self._replacing = False
        self._signin_reply: Any = None  # the sign-in in flight, until it ends
        self.status = QLabel()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.add_button = self.buttons.addButton("Add", QDialogButtonBox.ButtonRole.ApplyRole)
        self.add_button.clicked.connect(self.submit)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(signin)
        layout.addWidget(self.signin_url)
        layout.addWidget(imports)
        layout.addWidget(manual)
        layout.addWidget(self.keyring_note)
        layout.addWidget(self.error)
        layout.addWidget(self.replace_button)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        main_action(self, self.add_button)  # Enter adds what was typed (fault 1)
        scroll_when_small(self)
        set_default_size(self, 520, 0)
        keep_wrapped_text_whole(self)  # an error line must not squash the fields (fault 6)

    def say_where_secrets_go(self) -> None:
        """Again each time the dialog opens: a keyring may have been set up meanwhile."""
        home = self._bridge.secret_home()
        self.keyring_note.setText(secret_home_words(home))
        self.keyring_note.setToolTip(home.file if home is not None and home.file else "")

    def showEvent(self, event: QShowEvent) -> None:
        self.say_where_secrets_go()
        super().showEvent(event)

    def provider_id(self) -> str:
        """The chosen provider's id ("anthropic", "codex", "antigravity")."""
        return str(self.provider.currentData())

    def choose_provider(self, provider: str) -> None:
        self.provider.setCurrentIndex(self.provider.findData(provider))

    def sign_in(self, which: str) -> None:
        """Run the browser sign-in through the service; progress, result and errors show here."""
        show_error(self.error, "")
        self.signin_url.hide()
        reply = self._bridge.sign_in(which, show_url=self._show_signin_url)
        if reply is None:
            show_error(self.error, "this build cannot sign in")
            return
        self._signin_reply = reply
        self._busy(True)
        self.status.setText("Waiting for you to sign in in your browser…")
        reply.done.connect(self._signed_in)
        reply.failed.connect(self._failed)

    def _show_signin_url(self, url: str) -> None:
        self.signin_url.setText(f"If your browser did not open, visit:\n{url}")
        self.signin_url.show()

    def _signed_in(self, settled: Any) -> None:
        self._busy(False)
        self.signin_url.hide()
        view = settled.get("account", {}) if isinstance(settled, dict) else {}
        verdict = settled.get("verdict", {}) if isinstance(settled, dict) else {}
        name = view.get("name", "account")
        self.status.setText(
            f"Signed in: {name} — {verdict.get('detail', 'verified')}; quota {settled.get('quota')}."
        )
        self.added.emit(view)

    def _busy(self, busy: bool) -> None:
        for widget in (
            *self.signin_buttons.values(),
            self.import_claude,
            self.import_codex,
            self.import_gemini,
            self.import_antigravity,
            self.add_button,
            self.replace_button,
        ):
            widget.setEnabled(not busy)

    def _import(self, which: str, path: Path | None = None) -> None:
        show_error(self.error, "")
        self._watch(self._bridge.import_login(which, path))

    def choose_antigravity_file(self) -> Path | None:
        """Ask for the account file (a separate step so tests can answer it)."""
        start = Path.home() / LOGIN_FILES["antigravity"]
        chosen, _ = QFileDialog.getOpenFileName(
            self,
            "Antigravity account file",
            str(start if start.exists() else Path.home()),
            "JSON files (*.json);;All files (*)",
        )
        return Path(chosen) if chosen else None

    def _import_antigravity_file(self) -> None:
        path = self.choose_antigravity_file()
        if path is not None:
            self._import("antigravity", path)

    def submit(self) -> None:
        self._submit(replace=False)

    def _submit(self, *, replace: bool) -> None:
        show_error(self.error, "")
        self.replace_button.hide()
        name = self.name.text().strip()
        if not name:
            show_error(self.error, "give the account a name")
            return
        try:
            secret = secret_from_text(self.secret.text())
        except CredentialError as exc:
            show_error(self.error, str(exc))
            return
        mendable = None if replace else self._needing_credential(name)
        if mendable is not None:
            reason = mendable.get("auth_reason") or "its sign-in no longer works"
            show_error(
                self.error,
                f"{name} already exists, and needs a new credential ({reason}). "
                "Replace its credential with this one? It keeps its history and settings.",
            )
            self.replace_button.show()
            return
        self._replacing = replace
        self._watch(
            self._bridge.add_account(
                self.provider_id(),
                name,
                secret,
                group=self.group.text().strip() or "default",
                base_url=self.base_url.text().strip() or None,
                max_concurrency=self.limit.value(),
                replace=replace,
            )
        )

    def _needing_credential(self, name: str) -> dict[str, Any] | None:
        """The existing account of this name and provider when its credential is missing or
        no longer works (R-LOGIN-4); a healthy one is still refused as "already exists"."""
        for account in self._bridge.accounts():
            if (
                account.get("name") == name
                and account.get("provider") == self.provider_id()
                and account.get("state") == "auth_failed"
            ):
                return account
        return None

    def _watch(self, reply: Any) -> None:
        if reply is None:
            show_error(self.error, "this build cannot add accounts")
            return
        self._busy(True)
        reply.done.connect(self._added)
        reply.failed.connect(self._failed)

    def _added(self, view: Any) -> None:
        self._busy(False)
        self.replace_button.hide()
        self.secret.clear()
        self.name.clear()  # the next account needs its own name
        name = view.get("name", "account") if isinstance(view, dict) else "account"
        replaced, self._replacing = self._replacing, False
        self.status.setText(f"Replaced the credential of {name}." if replaced else f"Added {name}.")
        self.added.emit(view)

    def _failed(self, message: str) -> None:
        self._busy(False)
        self.status.setText("")
        self.signin_url.hide()
        show_error(self.error, message)

    def hideEvent(self, event: Any) -> None:
        self.secret.clear()  # a pasted secret does not linger in a hidden dialog
        # Closing the dialog abandons a sign-in still waiting for the browser: it stops
        # listening, and a later answer adds nothing.
        reply, self._signin_reply = self._signin_reply, None
        if reply is not None and reply.task is not None and not reply.task.done():
            reply.task.cancel()
            self._busy(False)
            self.status.setText("")
            self.signin_url.hide()
        super().hideEvent(event)
