"""The welcome window (R-UI-9): shown when there are no accounts yet.

Four steps, top to bottom, each one click: import the logins found on this computer, create a
client key, point a tool at SubLane, and send a test request — which then appears in the
Requests window, so the person sees the whole path work before they rely on it.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent, QShowEvent
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.dialogs.common import (
    copy_button,
    error_label,
    secret_field,
    show_error,
)
from sublane_desktop.gui.icons import app_icon
from sublane_desktop.gui.requests_model import milliseconds
from sublane_desktop.gui.sizing import keep_wrapped_text_whole, scroll_when_small, set_default_size
from sublane_desktop.gui.tool_setup import TOOLS

KEY_NAME = "desktop"
TOOL_NOTE = "Claude Code, Codex CLI or the SDKs: the exact lines to paste."


class WelcomeWindow(QWidget):
    addAccountRequested = Signal()
    setupToolRequested = Signal()
    requestsRequested = Signal()

    def __init__(self, bridge: Bridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.key: str | None = None
        # The client keys that exist, by name (read each time the window is shown): their
        # secrets are shown once, when made, so an earlier key is named but never filled in.
        self.keys: list[str] = []
        self.setWindowTitle("Welcome to SubLane")
        self.setWindowIcon(app_icon())

        intro = QLabel(
            "SubLane pools your subscription accounts behind one local endpoint,\n"
            f"{bridge.endpoint_url()}\nFour steps and your tools use it."
        )
        intro.setWordWrap(True)

        # 1. logins -----------------------------------------------------------------------------
        self.logins_box = QGroupBox("1. Import your logins")
        logins = QVBoxLayout(self.logins_box)
        self.import_buttons: dict[str, QPushButton] = {}
        self.import_status: dict[str, QLabel] = {}
        self.import_warnings: dict[str, QLabel] = {}
        self.unread: list[QLabel] = []  # places whose login could not be read, in words
        self.also_found: list[QLabel] = []  # further places holding a login of a tool
        listed = bridge.found_logins()
        found = [login for login in listed if login.get("found", True)]
        for login in found:
            button = QPushButton(f"Import {login['title']} login")
            button.setToolTip(f"{login.get('place', login['title'])}: {login['path']}")
            button.clicked.connect(lambda _=False, w=login["which"]: self.import_login(w))
            status = QLabel(f"found at {login['path']}")
            status.setWordWrap(True)
            status.setToolTip(login.get("place", ""))
            row = QHBoxLayout()
            row.addWidget(button)
            row.addWidget(status, 1)
            logins.addLayout(row)
            self.import_buttons[login["which"]] = button
            self.import_status[login["which"]] = status
            if login.get("warning"):  # Gemini CLI: Google no longer takes it for individuals
                warning = QLabel(f"⚠ {login['warning']}")
                warning.setWordWrap(True)
                logins.addWidget(warning)
                self.import_warnings[login["which"]] = warning
        for login in listed:
            if login.get("found", True):
                continue
            if login.get("also"):
                label = QLabel(
                    f"{login['title']} also keeps a login in {login['place']} ({login['path']});"
                    " the import takes the one above."
                )
                label.setWordWrap(True)
                logins.addWidget(label)
                self.also_found.append(label)
                continue
            label = QLabel(
                f"Could not read {login['title']}'s login in {login['place']}: {login['problem']}"
            )
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            logins.addWidget(label)
            self.unread.append(label)
        self.none_found = QLabel(
            "No Claude Code, Codex, Antigravity or Gemini CLI login was found on this computer."
        )
        self.none_found.setWordWrap(True)
        self.none_found.setVisible(not found)
        logins.addWidget(self.none_found)
        self.add_button = QPushButton("Add an account by hand…")
        self.add_button.clicked.connect(self.addAccountRequested)
        add_row = QHBoxLayout()
        add_row.addWidget(self.add_button)
        add_row.addStretch(1)
        logins.addLayout(add_row)
        self.import_error = error_label()
        logins.addWidget(self.import_error)

        # 2. client key ----------------------------------------------------------------------
        key_box = QGroupBox("2. Create a client key")
        self.key_button = QPushButton("Create a client key")
        self.key_button.clicked.connect(self.create_key)
        self.key_field, key_row = secret_field("Client key")
        self.key_field.setReadOnly(True)
        # Short enough for the box at its default width (the longer hint was cut off, R-UI-16);
        # the why is in the tooltip.
        self.key_field.setPlaceholderText("no key yet")
        self.key_field.setToolTip("Your tools use this key instead of your logins")
        self.copy_key = QPushButton("Copy")
        self.copy_key.setEnabled(False)
        copy_button(self.copy_key, lambda: self.key or "")
        row = QHBoxLayout(key_box)
        row.addWidget(self.key_button)
        row.addWidget(key_row, 1)
        row.addWidget(self.copy_key)
        self.key_error = error_label()
        key_outer = QVBoxLayout()
        key_outer.addWidget(key_box)
        key_outer.addWidget(self.key_error)

        # 3. tool -----------------------------------------------------------------------------
        tool_box = QGroupBox("3. Point a tool at SubLane")
        self.tool_button = QPushButton("Set up a tool…")
        self.tool_button.clicked.connect(self.setupToolRequested)
        self.tool_note = QLabel(TOOL_NOTE)
        self.tool_note.setWordWrap(True)
        row = QHBoxLayout(tool_box)
        row.addWidget(self.tool_button)
        row.addWidget(self.tool_note, 1)

        # 4. test -----------------------------------------------------------------------------
        test_box = QGroupBox("4. Send a test request")
        self.test_button = QPushButton("Send a test request")
        self.test_button.clicked.connect(self.send_test)
        self.test_result = QLabel("Import a login and create a key first.")
        self.test_result.setWordWrap(True)
        self.test_result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.requests_button = QPushButton("Open Requests")
        self.requests_button.clicked.connect(self.requestsRequested)
        self.requests_button.hide()
        row = QHBoxLayout(test_box)
        row.addWidget(self.test_button)
        row.addWidget(self.test_result, 1)
        row.addWidget(self.requests_button)

        self.close_button = QPushButton("Close")
        self.close_button.setToolTip(
            "SubLane keeps running; open this again with Welcome… in the tray menu or Accounts"
        )
        self.close_button.clicked.connect(self.close)
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        bottom.addWidget(self.close_button)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.logins_box)
        layout.addLayout(key_outer)
        layout.addWidget(tool_box)
        layout.addWidget(test_box)
        layout.addStretch(1)
        layout.addLayout(bottom)
        bridge.accountsChanged.connect(self._update_steps)
        self._update_steps()
        scroll_when_small(self)
        keep_wrapped_text_whole(self)
        # As tall as its steps (a fixed 460 px left a band of empty space above Close at 100 %);
        # steps that grow later (logins found) grow the window (scroll_when_small).
        width = self.sizeHint().expandedTo(self.minimumSizeHint()).width() + 40
        set_default_size(self, width, 0)

    def _has_account(self) -> bool:
        return bool(self._bridge.snapshot())

    def showEvent(self, event: QShowEvent) -> None:
        """Each time it is shown the steps say how things stand now: a welcome reopened after
        keys were made said "no key yet" (second newcomer pass)."""
        super().showEvent(event)
        self._bridge.refresh_snapshot()
        self._update_steps()
        reply = self._bridge.list_keys()
        if reply is not None:
            reply.done.connect(self._keys_listed)

    def _keys_listed(self, keys: Any) -> None:
        self.keys = [str(k.get("name")) for k in keys or [] if not k.get("revoked")]
        self._update_steps()

    def _update_steps(self) -> None:
        self._show_earlier_imports()
        self._show_earlier_keys()
        ready = self._has_account() and self.key is not None
        self.test_button.setEnabled(ready)
        if self.requests_button.isVisible():
            return  # a test's result stays until the next test
        if ready:
            # Said once both steps are done, or step 4 kept asking for a key it had (fault 11).
            self.test_result.setText("Ready: one small request goes through SubLane.")
            return
        missing = []
        if not self._has_account():
            missing.append("import a login")
        if self.key is None:
            # An earlier key's secret is not shown again: the test needs one made here.
            missing.append("create a key here" if self.keys else "create a key")
        self.test_result.setText(" and ".join(missing).capitalize() + " first.")

    def _show_earlier_keys(self) -> None:
        if self.key is not None:
            return  # this window's own key is on show
        count = len(self.keys)
        self.key_field.setPlaceholderText(
            f"{count} key{'' if count == 1 else 's'} made already" if count else "no key yet"
        )
        self.key_field.setToolTip(
            "Your tools use a client key instead of your logins. "
            + (
                f"Made already: {', '.join(self.keys)}. A key is shown only once, when it is"
                " made; create another to see one here."
                if count
                else ""
            )
        )
        self.key_button.setText("Create another key" if count else "Create a client key")
        tools = [tool.title for tool in TOOLS if tool.id in self.keys]
        self.tool_note.setText(
            f"Set up already: {', '.join(tools)} (a key named after it exists). " + TOOL_NOTE
            if tools
            else TOOL_NOTE
        )

    # step 1 ------------------------------------------------------------------------------------

    def import_login(self, which: str) -> None:
        show_error(self.import_error, "")
        reply = self._bridge.import_login(which)
        if reply is None:
            return
        button = self.import_buttons[which]
        button.setEnabled(False)
        reply.done.connect(lambda view: self._imported(which, view))
        reply.failed.connect(lambda message: self._import_failed(which, message))

    def _imported(self, which: str, view: Any) -> None:
        name = view.get("name", which) if isinstance(view, dict) else which
        self._mark_imported(which, name)
        self._bridge.refresh_snapshot()
        self._update_steps()

    def _mark_imported(self, which: str, name: str) -> None:
        self.import_status[which].setText(f"✓ imported as {name}")
        self.import_buttons[which].setText("Imported")
        self.import_buttons[which].setEnabled(False)

    def _show_earlier_imports(self) -> None:
        """A login imported before, in this run or an earlier one, reads as done, not as a step
        still to take: reopened after a restart the welcome offered "Import Claude Code login"
        for the account the pool already had. An import names the account after its tool."""
        names = {account.get("name") for account in self._bridge.snapshot()}
        for which, button in self.import_buttons.items():
            if which in names and button.text() != "Imported":
                self._mark_imported(which, which)

    def _import_failed(self, which: str, message: str) -> None:
        self.import_buttons[which].setEnabled(True)
        show_error(self.import_error, message)

    # step 2 ------------------------------------------------------------------------------------

    def create_key(self) -> None:
        show_error(self.key_error, "")
        reply = self._bridge.create_key(KEY_NAME)
        if reply is None:
            return
        self.key_button.setEnabled(False)
        reply.done.connect(self._key_created)
        reply.failed.connect(self._key_failed)

    def _key_created(self, result: Any) -> None:
        _info, key = result
        self.use_key(key)

    def use_key(self, key: str, where: str = "") -> None:
        """The key the steps use: created here, or in Set up a tool (`where` says so)."""
        self.key = key
        self.key_field.setText(key)
        self.key_field.setCursorPosition(0)
        self.copy_key.setEnabled(True)
        self.key_button.setText(f"Key created{where}")
        self._update_steps()

    def _key_failed(self, message: str) -> None:
        self.key_button.setEnabled(True)
        show_error(self.key_error, message)

    # step 4 ------------------------------------------------------------------------------------

    def send_test(self) -> None:
        if self.key is None:
            return
        reply = self._bridge.test_request(self.key)
        if reply is None:
            return
        self.test_button.setEnabled(False)
        self.test_result.setText("Sending…")
        reply.done.connect(self._tested)
        reply.failed.connect(self._test_failed)

    def _tested(self, result: Any) -> None:
        self.test_button.setEnabled(True)
        if result.get("checked_login"):
            self._login_checked(result)
            return
        if result.get("ok"):
            by = f" by {result['account']}" if result.get("account") else ""
            self.test_result.setText(
                f"✓ {result['model']} answered{by} in {milliseconds(result['ms'])}. "
                "It is in the Requests window."
            )
            self.requests_button.show()
        else:
            self.test_result.setText(
                f"✗ The test request failed: {result.get('error')}. "
                "The Requests window has the details."
            )
            self.requests_button.show()

    def _login_checked(self, result: Any) -> None:
        """Only Claude subscription logins: Anthropic answers them for Claude Code alone, so
        SubLane checked the sign-in rather than send a message of its own (R-WF-2)."""
        rule = (
            "Claude subscription logins answer Claude Code only, so SubLane does not send a test"
            " message of its own: run `sublane run -- claude` to try it."
        )
        if result.get("ok"):
            self.test_result.setText(f"✓ {result['account']} is signed in. {rule}")
        else:
            self.test_result.setText(
                f"✗ {result['account']} could not be checked: {result.get('error')}. {rule}"
            )

    def _test_failed(self, message: str) -> None:
        self.test_button.setEnabled(True)
        self.test_result.setText(f"✗ The test request could not be sent: {message}")

    def closeEvent(self, event: QCloseEvent) -> None:
        # Closing never stops the proxy (R-UI-5), and the key leaves the screen with it.
        self.key_field.clear()
        self.key = None
        self.copy_key.setEnabled(False)
        self.key_button.setEnabled(True)
        self.key_button.setText("Create a client key")
        event.ignore()
        self.hide()
