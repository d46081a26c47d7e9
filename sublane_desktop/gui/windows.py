"""The desktop's windows and dialogs: each built on first use, then shown and raised again.

The tray, the Accounts window and a second launch all open things through this one object, so
there is never a second Settings dialog or a second Accounts window.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget

from sublane_desktop.gui.accounts_window import AccountsWindow
from sublane_desktop.gui.bridge import Bridge

log = logging.getLogger(__name__)

REQUESTS_MODULE = "sublane_desktop.gui.requests_window"


def requests_window_available() -> bool:
    try:
        return importlib.util.find_spec(REQUESTS_MODULE) is not None
    except ImportError:
        return False


class Windows(QObject):
    def __init__(self, bridge: Bridge, *, main_window: bool = False,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        # main_window: no tray, so the Accounts window is the app and closing it quits.
        self._main_window = main_window
        self.requests_available = requests_window_available()
        self.accounts: AccountsWindow | None = None
        self.requests: QWidget | None = None
        self.dialogs: dict[str, QWidget] = {}

    def accounts_window(self) -> AccountsWindow:
        if self.accounts is None:
            window = AccountsWindow(self._bridge, quit_on_close=self._main_window,
                                    requests_available=self.requests_available)
            window.addAccountRequested.connect(self.show_add_account)
            window.settingsRequested.connect(self.show_settings)
            window.keysRequested.connect(self.show_keys)
            window.setupToolRequested.connect(self.show_setup_tool)
            window.requestsRequested.connect(self.show_requests)
            window.keyringRequested.connect(self.show_keyring)
            self.accounts = window
        return self.accounts

    def show_accounts(self) -> None:
        self.accounts_window().show_and_raise()

    def show_requests(self) -> None:
        if not self.requests_available:
            return
        if self.requests is None:
            try:
                module = importlib.import_module(REQUESTS_MODULE)
                self.requests = module.RequestsWindow(self._bridge)
            except Exception:  # a broken optional window must not take the tray down
                log.exception("the Requests window could not be opened")
                self._bridge.leverFailed.emit("open_requests", "the Requests window failed")
                return
        _raise(self.requests)

    def _dialog(self, name: str, build: Any) -> QWidget:
        dialog = self.dialogs.get(name)
        if dialog is None:
            dialog = build(self._bridge)
            self.dialogs[name] = dialog
        _raise(dialog)
        return dialog

    def show_add_account(self) -> QWidget:
        from sublane_desktop.gui.dialogs.add_account import AddAccountDialog

        return self._dialog("add_account", AddAccountDialog)

    def show_settings(self) -> QWidget:
        from sublane_desktop.gui.dialogs.settings import SettingsDialog

        dialog = self._dialog("settings", SettingsDialog)
        dialog.load()  # the stored values now, not those of the last time it was open
        return dialog

    def show_welcome(self) -> QWidget:
        """First run (R-UI-9): the four steps from no account to a working request."""
        from sublane_desktop.gui.welcome import WelcomeWindow

        welcome = self.dialogs.get("welcome")
        if welcome is None:
            welcome = WelcomeWindow(self._bridge)
            welcome.addAccountRequested.connect(self.show_add_account)
            welcome.setupToolRequested.connect(self.show_setup_tool)
            welcome.requestsRequested.connect(self.show_requests)
            self.dialogs["welcome"] = welcome
        _raise(welcome)
        return welcome

    def show_keyring(self) -> QWidget:
        from sublane_desktop.gui.dialogs.keyring_setup import KeyringDialog

        return self._dialog("keyring", KeyringDialog)

    def show_keys(self) -> QWidget:
        from sublane_desktop.gui.dialogs.client_keys import ClientKeysDialog

        return self._dialog("keys", ClientKeysDialog)

    def show_setup_tool(self) -> QWidget:
        from sublane_desktop.gui.dialogs.setup_tool import SetupToolDialog

        return self._dialog("setup_tool", SetupToolDialog)

    def close_all(self) -> None:
        widgets = [self.accounts, self.requests, *self.dialogs.values()]
        if self.accounts is not None:
            self.accounts.quit_on_close = False
        for widget in widgets:
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        self.accounts, self.requests, self.dialogs = None, None, {}


def _raise(widget: QWidget) -> None:
    if widget.isMinimized():
        widget.showNormal()
    widget.show()
    widget.raise_()
    widget.activateWindow()
