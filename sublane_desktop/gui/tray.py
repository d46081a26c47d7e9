"""The tray icon (R-UI-1, R-UI-6): pool health at a glance, a tooltip that says why, and a menu
that is the dashboard — one painted row per account (tightest window, state, marks), a submenu
with every window, its forecast and the levers, and when the gauges were last read. The menu is
rebuilt each time it opens (Vorta's pattern); the levers are the same service methods as the
API."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication, QMenu, QSystemTrayIcon

from sublane_desktop.core.miss_words import switch_warning, switched_today
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.dashboard import (
    AccountRow,
    account_rows,
    updated_line,
    verdict_words,
)
from sublane_desktop.gui.icons import health_icon
from sublane_desktop.gui.pool_status import PoolHealth, pool_health, tooltip_text
from sublane_desktop.gui.tray_rows import AccountRowWidget, WindowLineWidget, row_action


class Tray(QObject):
    openRequested = Signal()  # left click or "Open Accounts"
    requestsRequested = Signal()
    settingsRequested = Signal()
    setupToolRequested = Signal()

    def __init__(
        self, bridge: Bridge, *, requests_available: bool = False, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.setQuitOnLastWindowClosed(False)
        self._bridge = bridge
        self.requests_available = requests_available
        self.health = PoolHealth.DOWN
        # The menu has no parent widget; keep it on self so Python owns and keeps it alive.
        self.menu = QMenu()
        self.menu.aboutToShow.connect(self._rebuild_menu)
        self._submenus: list[QMenu] = []
        self.rows: dict[str, AccountRowWidget] = {}
        self.updated_action: QAction | None = None
        self.icon = QSystemTrayIcon(self)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._on_activated)
        bridge.accountsChanged.connect(self.refresh)
        bridge.settingsChanged.connect(self.refresh)
        bridge.ticked.connect(self._refresh_tooltip)
        bridge.missesChanged.connect(self._refresh_tooltip)
        bridge.verified.connect(self._show_verdict)
        self.refresh()
        bridge.refresh_misses()

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
        text = tooltip_text(
            self._bridge.endpoint_url(),
            self._bridge.snapshot(),
            self._bridge.settings(),
            self._bridge.now(),
        )
        warning = switch_warning(switched_today(self._bridge.misses_today()))
        if warning:  # R-CF-3: the hidden cost of switching, once it is worth a glance
            text += "\n" + warning
        if text != self.icon.toolTip():
            self.icon.setToolTip(text)

    def current_icon(self) -> QIcon:
        return health_icon(self.health)

    def show_message(self, title: str, body: str) -> None:
        self.icon.showMessage(title, body, self.current_icon())

    def _show_verdict(self, verdict: Any) -> None:
        """A verify asked from the menu answers as a notification: the menu is closed by now."""
        if isinstance(verdict, dict) and self.icon.isVisible():
            self.show_message(
                f"{verdict.get('name')}: {verdict_words(verdict)}", str(verdict.get("detail", ""))
            )

    # menu -------------------------------------------------------------------------------------

    def _rebuild_menu(self) -> None:
        # Rebuilt on open rather than kept in sync: accounts come and go, states change often.
        # Read the runtime now (memory only) rather than wait for the coalesced refresh.
        self._bridge.refresh_snapshot()
        self.menu.clear()
        for old in self._submenus:  # clear() drops actions, not the submenus it parented
            old.deleteLater()
        self._submenus = []
        self.rows = {}
        now = self._bridge.now()
        snapshot = self._bridge.snapshot()
        settings = self._bridge.settings()
        for row in account_rows(snapshot, settings, now):
            self._account_menu(row)
        if snapshot:
            self.menu.addSeparator()
            self.updated_action = self._add(updated_line(snapshot, now), self._refresh_quotas)
            self.updated_action.setToolTip("Read every account's quota now")
            self.menu.addSeparator()
        self._add("Open Accounts", self.openRequested.emit)
        requests = self._add("Open Requests", self.requestsRequested.emit)
        requests.setEnabled(self.requests_available)
        self._add("Settings…", self.settingsRequested.emit)
        self._add("Set up a tool…", self.setupToolRequested.emit)
        self._add("Copy endpoint URL", self.copy_endpoint_url)
        self.menu.addSeparator()
        self._add("Quit", self._bridge.request_quit)

    def _refresh_quotas(self) -> None:
        self._bridge.refresh_quotas()

    def _account_menu(self, row: AccountRow) -> None:
        sub = QMenu(row.name, self.menu)
        self._submenus.append(sub)
        widget = AccountRowWidget(self.menu, row)
        action = row_action(self.menu, widget, row.text)
        action.setMenu(sub)
        self.menu.addAction(action)
        self.rows[row.name] = widget
        # What the row cannot fit: every window with its forecast, then the levers.
        header = QAction(f"{row.name}: {row.state}", sub)
        header.setEnabled(False)
        sub.addAction(header)
        if row.windows:
            for line in row.windows:
                sub.addAction(row_action(sub, WindowLineWidget(sub, line), line.text))
        elif row.note:
            note = QAction(row.note, sub)
            note.setEnabled(False)
            sub.addAction(note)
        sub.addSeparator()
        ref = row.account_id
        switch_text = (
            f"Pinned — {row.pin_left} left (switch again to renew)"
            if row.pin_left is not None
            else "Switch to (pin for 5 minutes)"
        )
        switch = QAction(switch_text, sub)
        switch.triggered.connect(lambda: self._bridge.switch(ref))
        sub.addAction(switch)
        paused = row.paused
        pause = QAction("Resume" if paused else "Pause", sub)
        pause.triggered.connect(lambda: self._bridge.pause(ref, not paused))
        sub.addAction(pause)
        clear = QAction("Clear cooldown", sub)
        clear.setEnabled(row.can_clear)
        clear.triggered.connect(lambda: self._bridge.clear_cooldown(ref))
        sub.addAction(clear)
        disabled = row.disabled
        toggle = QAction("Enable" if disabled else "Disable", sub)
        toggle.setToolTip("A disabled account serves nothing and keeps its settings")
        toggle.triggered.connect(lambda: self._bridge.set_enabled(ref, disabled))
        sub.addAction(toggle)
        verify = QAction("Verify login", sub)
        verify.triggered.connect(lambda: self._bridge.verify(ref))
        sub.addAction(verify)
        if ref in self._needs_sign_in():  # R-LOGIN-1: mend it in place, no Remove
            again = QAction("Sign in again…", sub)
            again.setToolTip("Opens your browser; the account keeps its settings and history")
            again.triggered.connect(lambda: self._bridge.sign_in_again(ref))
            sub.addAction(again)

    def _needs_sign_in(self) -> set[int]:
        """Accounts whose login is refused or missing (auth_failed): they offer Sign in again."""
        return {a["id"] for a in self._bridge.snapshot() if a.get("state") == "auth_failed"}

    def _add(self, text: str, slot: Any) -> QAction:
        action = QAction(text, self.menu)
        action.triggered.connect(lambda: slot())  # triggered(bool) must not reach emit()
        self.menu.addAction(action)
        return action

    def account_menu(self, name: str) -> QMenu:
        """The submenu of one account, after the menu was built (tests, accessibility)."""
        widget = self.rows.get(name)
        menu = widget.action.menu() if widget is not None and widget.action is not None else None
        if not isinstance(menu, QMenu):
            raise LookupError(name)
        return menu

    def copy_endpoint_url(self) -> None:
        QGuiApplication.clipboard().setText(self._bridge.endpoint_url())

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.openRequested.emit()
