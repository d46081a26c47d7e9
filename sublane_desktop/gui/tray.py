"""The tray icon: pool health at a glance, a menu rebuilt each time it opens (Vorta's pattern)."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication, QMenu, QSystemTrayIcon

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.icons import health_icon
from sublane_desktop.gui.pool_status import PoolHealth, account_line, pool_health, tooltip_text


class Tray(QObject):
    openRequested = Signal()  # left click: show the window

    def __init__(self, bridge: Bridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        app = QApplication.instance()
        if app is not None:
            app.setQuitOnLastWindowClosed(False)
        self._bridge = bridge
        self.health = PoolHealth.DOWN
        # The menu has no parent widget; keep it on self so Python owns and keeps it alive.
        self.menu = QMenu()
        self.menu.aboutToShow.connect(self._rebuild_menu)
        self.icon = QSystemTrayIcon(self)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._on_activated)
        bridge.accountsChanged.connect(self.refresh)
        self.refresh()

    def show(self) -> None:
        self.icon.show()

    def hide(self) -> None:
        self.icon.hide()

    def refresh(self) -> None:
        accounts = self._bridge.accounts()
        self.health = pool_health(accounts)
        self.icon.setIcon(self.current_icon())
        self.icon.setToolTip(tooltip_text(self._bridge.endpoint_url(), accounts))

    def current_icon(self) -> QIcon:
        return health_icon(self.health)

    def _rebuild_menu(self) -> None:
        # Rebuilt on open rather than kept in sync: accounts come and go, states change often.
        self.menu.clear()
        for account in self._bridge.accounts():
            action = self.menu.addAction(account_line(account))
            action.setEnabled(False)
            if account.get("current"):
                font = action.font()
                font.setBold(True)
                action.setFont(font)
        self.menu.addSeparator()
        copy = QAction("Copy endpoint URL", self.menu)
        copy.triggered.connect(self.copy_endpoint_url)
        self.menu.addAction(copy)
        quit_action = QAction("Quit", self.menu)
        quit_action.triggered.connect(self._bridge.request_quit)
        self.menu.addAction(quit_action)

    def copy_endpoint_url(self) -> None:
        QGuiApplication.clipboard().setText(self._bridge.endpoint_url())

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.openRequested.emit()
