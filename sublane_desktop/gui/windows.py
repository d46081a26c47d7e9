"""The desktop's windows and dialogs: each built on first use, then shown and raised again.

The tray, the Accounts window and a second launch all open things through this one object, so
there is never a second Settings dialog or a second Accounts window.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from typing import Any

from PySide6.QtCore import QEvent, QObject, QRect, QSettings
from PySide6.QtGui import QGuiApplication
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
    def __init__(
        self, bridge: Bridge, *, main_window: bool = False, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        # main_window: no tray, so the Accounts window is the app and closing it quits.
        self._main_window = main_window
        self.requests_available = requests_window_available()
        self.accounts: AccountsWindow | None = None
        self.requests: QWidget | None = None
        self.dialogs: dict[str, QWidget] = {}
        self.placement = Placement(self)
        # Any part of the GUI can bring the welcome back ("Welcome…" in the tray menu).
        bridge.welcomeRequested.connect(self.show_welcome)

    def accounts_window(self) -> AccountsWindow:
        if self.accounts is None:
            window = AccountsWindow(
                self._bridge,
                quit_on_close=self._main_window,
                requests_available=self.requests_available,
            )
            window.addAccountRequested.connect(self.show_add_account)
            window.settingsRequested.connect(self.show_settings)
            window.keysRequested.connect(self.show_keys)
            window.setupToolRequested.connect(self.show_setup_tool)
            window.requestsRequested.connect(self.show_requests)
            window.keyringRequested.connect(self.show_keyring)
            self.accounts = window
        return self.accounts

    def show_accounts(self) -> None:
        window = self.accounts_window()
        self.placement.place(window, "accounts")
        window.show_and_raise()

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
        self.placement.place(self.requests, "requests")
        _raise(self.requests)

    def _dialog(self, name: str, build: Any) -> QWidget:
        dialog = self.dialogs.get(name)
        if dialog is None:
            dialog = build(self._bridge)
            self.dialogs[name] = dialog
        self.placement.place(dialog, name)
        _raise(dialog)
        return dialog

    def show_add_account(self) -> QWidget:
        from sublane_desktop.gui.dialogs.add_account import AddAccountDialog

        return self._dialog("add_account", AddAccountDialog)

    def show_settings(self) -> QWidget:
        from sublane_desktop.gui.dialogs.settings import SettingsDialog

        dialog = self._dialog("settings", SettingsDialog)
        if isinstance(dialog, SettingsDialog):
            dialog.load()  # the stored values now, not those of the last time it was open
        return dialog

    def show_welcome(self) -> QWidget:
        """First run (R-UI-9): the four steps from no account to a working request."""
        from sublane_desktop.gui.welcome import WelcomeWindow

        welcome = self.dialogs.get("welcome")
        if welcome is None:
            welcome = WelcomeWindow(self._bridge)
            welcome.addAccountRequested.connect(self.show_add_account)
            welcome.setupToolRequested.connect(self._setup_tool_from_welcome)
            welcome.requestsRequested.connect(self.show_requests)
            self.dialogs["welcome"] = welcome
        self.placement.place(welcome, "welcome")
        _raise(welcome)
        return welcome

    def _setup_tool_from_welcome(self) -> None:
        """Set up a tool with the key the welcome just made, not a placeholder (fault 11)."""
        dialog = self.show_setup_tool()
        welcome = self.dialogs.get("welcome")
        key = getattr(welcome, "key", None)
        if key and hasattr(dialog, "use_key"):
            dialog.use_key(key)

    def _key_from_setup_tool(self, key: str) -> None:
        welcome = self.dialogs.get("welcome")
        if welcome is not None and hasattr(welcome, "use_key"):
            welcome.use_key(key, " in Set up a tool")

    def show_keyring(self) -> QWidget:
        from sublane_desktop.gui.dialogs.keyring_setup import KeyringDialog

        def build(bridge: Bridge) -> QWidget:
            dialog = KeyringDialog(bridge)
            dialog.finished.connect(self._after_keyring)
            return dialog

        return self._dialog("keyring", build)

    def _after_keyring(self, _result: int) -> None:
        """Whatever the answer (a keyring made, or "Not now"), a first run goes on to the
        welcome window: with no account there is nothing else to start from (fault 11)."""
        if not self._bridge.snapshot():
            self.show_welcome()

    def show_keys(self) -> QWidget:
        from sublane_desktop.gui.dialogs.client_keys import ClientKeysDialog

        return self._dialog("keys", ClientKeysDialog)

    def show_setup_tool(self) -> QWidget:
        from sublane_desktop.gui.dialogs.setup_tool import SetupToolDialog

        def build(bridge: Bridge) -> QWidget:
            dialog = SetupToolDialog(bridge)
            dialog.keyCreated.connect(self._key_from_setup_tool)
            return dialog

        return self._dialog("setup_tool", build)

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


class Placement(QObject):
    """Windows open centred the first time and where the person left them after that
    (R-UI-10): the geometry is saved when a window hides, in the desktop's settings store."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._placed: dict[int, str] = {}

    @staticmethod
    def settings() -> QSettings:
        return QSettings("SubLane", "SubLane")

    def place(self, window: QWidget, name: str) -> None:
        if id(window) in self._placed:
            return  # already placed in this run: Qt keeps where it is
        self._placed[id(window)] = name
        window.installEventFilter(self)
        rect = _rect(self.settings().value(f"geometry/{name}"))
        # Only where the whole window fits on a screen (R-UI-15): a position saved at another
        # scale or on a monitor unplugged since would open it partly or wholly off-screen.
        if rect is not None and any(
            screen.availableGeometry().contains(rect) for screen in QGuiApplication.screens()
        ):
            window.setGeometry(rect)
            return
        screen = window.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            return
        area = screen.availableGeometry()
        if rect is not None and rect.width() <= area.width() and rect.height() <= area.height():
            window.resize(rect.size())  # the size the person chose still fits: keep it
        chrome = window.frameGeometry().size() - window.size()  # title bar, borders
        if area.size().expandedTo(window.size() + chrome) != area.size():
            # Its default size is bigger than this screen (1280×800 at 200 % is 640×400):
            # as big as the screen instead; its content scrolls (sizing.scroll_when_small).
            window.resize(window.size().boundedTo(area.size() - chrome))
        frame = window.frameGeometry()
        frame.moveCenter(area.center())
        # A window bigger than the screen (its minimum size on a small screen at 200 %) would
        # centre with its title bar above the top edge, where it can be neither moved nor
        # closed: its top-left corner stays on the screen.
        window.move(max(frame.left(), area.left()), max(frame.top(), area.top()))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Hide and isinstance(watched, QWidget):
            name = self._placed.get(id(watched))
            if name is not None and watched.isWindow() and not _screen_bound(watched):
                g = watched.geometry()
                self.settings().setValue(
                    f"geometry/{name}", f"{g.x()},{g.y()},{g.width()},{g.height()}"
                )
        return False


def _screen_bound(window: QWidget) -> bool:
    """Whether the screen, not the person, set the window's size: as wide or as tall as the
    screen's free area (a small screen at 200 %, or maximized). Such a size is not kept: back
    at 100 % the Accounts window reopened in a quarter of the screen (third newcomer pass)."""
    screen = window.screen()
    if screen is None:
        return False
    area = screen.availableGeometry()
    frame = window.frameGeometry()
    return frame.width() >= area.width() - 2 or frame.height() >= area.height() - 2


def _rect(value: object) -> QRect | None:
    try:
        x, y, w, h = (int(part) for part in str(value).split(","))
    except ValueError:
        return None
    return QRect(x, y, w, h) if w > 0 and h > 0 else None
