"""The tray icon (R-UI-1): pool health at a glance, a menu rebuilt each time it opens (Vorta's
pattern), and the operator levers per account — the same service methods as the API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication, QMenu, QSystemTrayIcon

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.icons import health_icon
from sublane_desktop.gui.pool_status import (
    PoolHealth,
    account_line,
    countdown,
    has_cooldown,
    pin_remaining,
    pool_health,
    tooltip_text,
)


class Tray(QObject):
    openRequested = Signal()  # left click or "Open Accounts"
    requestsRequested = Signal()
    settingsRequested = Signal()
    setupToolRequested = Signal()

    def __init__(self, bridge: Bridge, *, requests_available: bool = False,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        app = QApplication.instance()
        if app is not None:
            app.setQuitOnLastWindowClosed(False)
        self._bridge = bridge
        self.requests_available = requests_available
        self.health = PoolHealth.DOWN
        # The menu has no parent widget; keep it on self so Python owns and keeps it alive.
        self.menu = QMenu()
        self.menu.aboutToShow.connect(self._rebuild_menu)
        self._submenus: list[QMenu] = []
        self.icon = QSystemTrayIcon(self)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._on_activated)
        bridge.accountsChanged.connect(self.refresh)
        bridge.settingsChanged.connect(self.refresh)
        bridge.ticked.connect(self._refresh_tooltip)
        self.refresh()

    def show(self) -> None:
        self.icon.show()

    def hide(self) -> None:
        self.icon.hide()

    def refresh(self) -> None:
        health = pool_health(self._bridge.snapshot())
        if health is not self.health or self.icon.icon().isNull():
            self.health = health
            self.icon.setIcon(self.current_icon())
        self._refresh_tooltip()

    def _refresh_tooltip(self) -> None:
        text = tooltip_text(self._bridge.endpoint_url(), self._bridge.snapshot(),
                            self._bridge.settings(), self._bridge.now())
        if text != self.icon.toolTip():
            self.icon.setToolTip(text)

    def current_icon(self) -> QIcon:
        return health_icon(self.health)

    def show_message(self, title: str, body: str) -> None:
        self.icon.showMessage(title, body, self.current_icon())

    # menu -------------------------------------------------------------------------------------

    def _rebuild_menu(self) -> None:
        # Rebuilt on open rather than kept in sync: accounts come and go, states change often.
        # Read the runtime now (memory only) rather than wait for the coalesced refresh.
        self._bridge.refresh_snapshot()
        self.menu.clear()
        for old in self._submenus:  # clear() drops actions, not the submenus it parented
            old.deleteLater()
        self._submenus = []
        now = self._bridge.now()
        for account in self._bridge.snapshot():
            self._account_menu(account, now)
        if self._bridge.snapshot():
            self.menu.addSeparator()
        self._add("Open Accounts", self.openRequested.emit)
        requests = self._add("Open Requests", self.requestsRequested.emit)
        requests.setEnabled(self.requests_available)
        self._add("Settings…", self.settingsRequested.emit)
        self._add("Set up a tool…", self.setupToolRequested.emit)
        self._add("Copy endpoint URL", self.copy_endpoint_url)
        self.menu.addSeparator()
        self._add("Quit", self._bridge.request_quit)

    def _account_menu(self, account: Mapping[str, Any], now: float) -> None:
        title = account_line(account)
        if account.get("current"):
            title = "● " + title
        sub = QMenu(title, self.menu)
        self._submenus.append(sub)
        self.menu.addMenu(sub)
        ref = account["id"]
        remaining = pin_remaining(account, now)
        switch_text = (f"Pinned — {countdown(remaining)} left (switch again to renew)"
                       if remaining is not None else "Switch to (pin for 5 minutes)")
        switch = QAction(switch_text, sub)
        switch.triggered.connect(lambda: self._bridge.switch(ref))
        sub.addAction(switch)
        paused = bool(account.get("paused"))
        pause = QAction("Resume" if paused else "Pause", sub)
        pause.triggered.connect(lambda: self._bridge.pause(ref, not paused))
        sub.addAction(pause)
        clear = QAction("Clear cooldown", sub)
        clear.setEnabled(has_cooldown(account))
        clear.triggered.connect(lambda: self._bridge.clear_cooldown(ref))
        sub.addAction(clear)

    def _add(self, text: str, slot: Any) -> QAction:
        action = QAction(text, self.menu)
        action.triggered.connect(lambda: slot())  # triggered(bool) must not reach emit()
        self.menu.addAction(action)
        return action

    def account_menu(self, name: str) -> QMenu:
        """The submenu of one account, after the menu was built (tests, accessibility)."""
        for action in self.menu.actions():
            menu = action.menu()
            if menu is not None and action.text().lstrip("● ").startswith(f"{name} — "):
                return menu
        raise LookupError(name)

    def copy_endpoint_url(self) -> None:
        QGuiApplication.clipboard().setText(self._bridge.endpoint_url())

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.openRequested.emit()
