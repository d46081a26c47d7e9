"""The tray icon (R-UI-1, R-UI-6, R-UI-12): pool health at a glance, a tooltip that says why, and
a menu that is the dashboard — one painted row per account with every window, its state in
words and "current for Claude"; a submenu per account with only the levers that apply; how much
the pool has left; when the gauges were last read. The menu is rebuilt each time it opens
(Vorta's pattern) and ticks while it is open; the levers are the same service methods as the API.

Every lever answers: the menu closes when one is pulled, so what it did (or why it could not)
comes back as a tray message, and messages queue rather than replace one another (fault 9,
fault 17). Disable asks first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QAction, QGuiApplication, QIcon
from PySide6.QtWidgets import (
    QApplication,
    QMenu,
    QMessageBox,
    QSystemTrayIcon,
    QWidgetAction,
)

from sublane_desktop.core.miss_words import switch_warning, switched_today
from sublane_desktop.gui.bridge import Bridge, Reply
from sublane_desktop.gui.dashboard import (
    AccountRow,
    account_rows,
    pool_left,
    updated_line,
    verdict_words,
)
from sublane_desktop.gui.dialogs.common import ask_to_disable
from sublane_desktop.gui.icons import health_icon, percent_icon
from sublane_desktop.gui.pool_status import (
    PoolHealth,
    pool_health,
    tightest_gauge,
    tooltip_text,
)
from sublane_desktop.gui.tray_rows import (
    AccountRowWidget,
    Columns,
    PoolLineWidget,
    reading_action,
    row_action,
)

MessageIcon = QSystemTrayIcon.MessageIcon
# How long a tray message stays, and so how long the next one waits behind it: a message
# shown while another is up replaces it on most desktops, and the first one is lost.
MESSAGE_MS = 6000


class Tray(QObject):
    openRequested = Signal()  # left click or "Open Accounts"
    requestsRequested = Signal()
    settingsRequested = Signal()
    setupToolRequested = Signal()
    addAccountRequested = Signal()
    welcomeRequested = Signal()

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
        self.icon_percent: int | None = None  # the percent the icon carries, None: none
        # The menu has no parent widget; keep it on self so Python owns and keeps it alive.
        self.menu = QMenu()
        self.menu.setToolTipsVisible(True)  # the levers' tooltips say what they do
        self.menu.aboutToShow.connect(self._rebuild_menu)
        self._submenus: list[QMenu] = []
        self.rows: dict[str, AccountRowWidget] = {}
        self.updated_action: QAction | None = None
        self.pool_actions: list[QAction] = []
        self.icon = QSystemTrayIcon(self)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._on_activated)
        # Tray messages, one at a time (fault 17): (title, body, icon)
        self.message_ms = MESSAGE_MS
        self._messages: deque[tuple[str, str, MessageIcon]] = deque()
        self._showing: tuple[str, str, MessageIcon] | None = None
        self._message_timer = QTimer(self)
        self._message_timer.setSingleShot(True)
        self._message_timer.timeout.connect(self._next_message)
        # The question asked before a lever that is not undone in one click (Disable).
        self.confirm_box: QMessageBox | None = None
        bridge.accountsChanged.connect(self.refresh)
        bridge.settingsChanged.connect(self.refresh)
        bridge.ticked.connect(self._refresh_tooltip)
        bridge.ticked.connect(self._tick_menu)
        bridge.missesChanged.connect(self._refresh_tooltip)
        bridge.verified.connect(self._show_verdict)
        self.refresh()
        bridge.refresh_misses()

    def show(self) -> None:
        self.icon.show()

    def hide(self) -> None:
        self.icon.hide()

    def refresh(self) -> None:
        snapshot = self._bridge.snapshot()
        health = pool_health(snapshot)
        shown = self._icon_percent(snapshot)
        if health is not self.health or shown != self.icon_percent or self.icon.icon().isNull():
            self.health, self.icon_percent = health, shown
            self.icon.setIcon(self.current_icon())
        self._refresh_tooltip()
        self._tick_menu()

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
        if self.icon_percent is not None:
            return percent_icon(self.health, self.icon_percent)
        return health_icon(self.health)

    def _icon_percent(self, snapshot: list[dict[str, Any]]) -> int | None:
        """The tightest window's percent among the accounts in use, when the setting is on."""
        settings = self._bridge.settings()
        if not settings.get("tray.icon_percent", True):
            return None
        tight = tightest_gauge(snapshot, settings)
        if tight is None:
            return None
        return round(float(tight[2]["utilization"]) * 100)

    # messages ---------------------------------------------------------------------------------

    def show_message(
        self, title: str, body: str, icon: MessageIcon = MessageIcon.Information
    ) -> None:
        """Show a tray message now, or after the one on screen has had its time (fault 17).
        A message already on screen or waiting is not added again."""
        message = (title, body, icon)
        if message == self._showing or message in self._messages:
            return  # a lever's answer and the notification of the same change: said once
        self._messages.append(message)
        if not self._message_timer.isActive():
            self._next_message()

    def _next_message(self) -> None:
        self._showing = None
        if not self._messages:
            return
        title, body, icon = self._showing = self._messages.popleft()
        self.icon.showMessage(title, body, icon, self.message_ms)
        self._message_timer.start(self.message_ms)

    def _show_verdict(self, verdict: Any) -> None:
        """A verify asked from the menu answers as a message: the menu is closed by now. A
        login that works is news, not a warning (fault 9: it used to come with a red icon)."""
        if isinstance(verdict, dict) and self.icon.isVisible():
            good = verdict.get("result") == "ok"
            self.show_message(
                f"{verdict.get('name')}: {verdict_words(verdict)}",
                str(verdict.get("detail", "")),
                MessageIcon.Information if good else MessageIcon.Warning,
            )

    # menu -------------------------------------------------------------------------------------

    def _rebuild_menu(self) -> None:
        # Rebuilt on open rather than kept in sync: accounts come and go, states change often.
        # Read the runtime now (memory only) rather than wait for the coalesced refresh.
        self._bridge.refresh_snapshot()
        self._bridge.read_stale_quotas()
        self.menu.clear()
        for old in self._submenus:  # clear() drops actions, not the submenus it parented
            old.deleteLater()
        self._submenus = []
        self.rows = {}
        self.updated_action = None
        self.pool_actions = []
        now = self._bridge.now()
        snapshot = self._bridge.snapshot()
        rows = account_rows(snapshot, self._bridge.settings(), now)
        columns = Columns.for_rows(rows, self.menu.fontMetrics())
        for row in rows:
            self._account_menu(row, columns)
        if snapshot:
            self.menu.addSeparator()
            for line in pool_left(snapshot):
                said = reading_action(self.menu, line)  # not a keyboard stop
                self.menu.addAction(said)
                self.pool_actions.append(said)
            self.updated_action = self._add(updated_line(snapshot, now), self._refresh_quotas)
            self.updated_action.setToolTip("Read every account's quota now")
            self.menu.addSeparator()
        self._add("Open Accounts", self.openRequested.emit)
        requests = self._add("Open Requests", self.requestsRequested.emit)
        requests.setEnabled(self.requests_available)
        self._add("Add account…", self.addAccountRequested.emit)
        self._add("Set up a tool…", self.setupToolRequested.emit)
        self._add("Settings…", self.settingsRequested.emit)
        self._add("Welcome…", self.welcomeRequested.emit)
        copy = self._add("Copy endpoint URL", self.copy_endpoint_url)
        copy.setToolTip(self._bridge.endpoint_url())
        self.menu.addSeparator()
        self._add("Quit", self._bridge.request_quit)

    def _tick_menu(self) -> None:
        """While the menu is open its countdowns and "Updated … ago" move (R-UI-14)."""
        if not self.menu.isVisible() or not self.rows:
            return
        snapshot = self._bridge.snapshot()
        now = self._bridge.now()
        for row in account_rows(snapshot, self._bridge.settings(), now):
            widget = self.rows.get(row.name)
            if widget is not None:
                widget.set_row(row)
        if self.updated_action is not None:
            self.updated_action.setText(updated_line(snapshot, now))
        for action, line in zip(self.pool_actions, pool_left(snapshot), strict=False):
            action.setText(line)
            reading = action.defaultWidget() if isinstance(action, QWidgetAction) else None
            if isinstance(reading, PoolLineWidget):
                reading.set_text(line)

    def _refresh_quotas(self) -> None:
        reply = self._bridge.refresh_quotas()
        self._answer(reply, "Could not read the quotas", self._quotas_read)

    def _quotas_read(self, started: Any) -> None:
        count = started if isinstance(started, int) else 0
        if count:
            many = "account's quota" if count == 1 else "accounts' quotas"
            self.show_message(f"Reading {count} {many}", "The bars update in a moment.")
        else:
            self.show_message(
                "No quota to read now",
                "API keys have none; paused, disabled and signed-out accounts are not read.",
            )

    def _account_menu(self, row: AccountRow, columns: Columns) -> None:
        sub = QMenu(row.name, self.menu)
        sub.setToolTipsVisible(True)
        self._submenus.append(sub)
        widget = AccountRowWidget(self.menu, row, columns)
        action = row_action(self.menu, widget)
        action.setMenu(sub)
        self.menu.addAction(action)
        self.rows[row.name] = widget
        # Only the levers that apply (R-UI-12): a paused, disabled or signed-out account is not
        # one to switch to, and has no cooldown worth clearing.
        ref, name = row.account_id, row.name
        if row.needs_sign_in:  # R-LOGIN-1: mend it in place, no Remove
            again = QAction("Sign in again…", sub)
            again.setToolTip("Opens your browser; the account keeps its settings and history")
            again.triggered.connect(lambda: self._sign_in_again(ref, name))
            sub.addAction(again)
        usable = not (row.paused or row.disabled or row.needs_sign_in)
        if usable:
            switch_text = (
                f"Pinned — {row.pin_left} left (switch again to renew)"
                if row.pin_left is not None
                else "Switch to (pin for 5 minutes)"
            )
            switch = QAction(switch_text, sub)
            switch.setToolTip(f"Send every request to {name} for the next 5 minutes")
            switch.triggered.connect(lambda: self._switch(ref, name))
            sub.addAction(switch)
        if usable and row.can_clear:
            clear = QAction("Clear cooldown", sub)
            clear.setToolTip(f"Let {name} take requests again now")
            clear.triggered.connect(lambda: self._clear_cooldown(ref, name))
            sub.addAction(clear)
        if not row.disabled:
            paused = row.paused
            pause = QAction("Resume" if paused else "Pause", sub)
            pause.setToolTip(
                f"{name} takes requests again"
                if paused
                else f"New requests go to other accounts until you resume {name}"
            )
            pause.triggered.connect(lambda: self._pause(ref, name, not paused))
            sub.addAction(pause)
        verify = QAction("Verify login", sub)
        verify.setToolTip("One cheap call upstream to check the login works")
        verify.triggered.connect(lambda: self._verify(ref, name))
        sub.addAction(verify)
        sub.addSeparator()
        if row.disabled:
            toggle = QAction("Enable", sub)
            toggle.setToolTip(f"{name} serves requests again; its quota is read at once")
        else:
            toggle = QAction("Disable…", sub)
            toggle.setToolTip("A disabled account serves nothing and keeps its settings")
        disabled = row.disabled
        toggle.triggered.connect(lambda: self._set_enabled(ref, name, disabled))
        sub.addAction(toggle)

    # levers: each one answers in a tray message (fault 9) -------------------------------------

    def _answer(self, reply: Reply | None, failed_title: str, done: Callable[[Any], None]) -> None:
        if reply is None:
            return
        reply.done.connect(done)
        reply.failed.connect(
            lambda message: self.show_message(failed_title, message, MessageIcon.Warning)
        )

    def _switch(self, ref: int, name: str) -> None:
        self._answer(
            self._bridge.switch(ref),
            f"Could not switch to {name}",
            lambda _: self.show_message(
                f"Switched to {name}", "New requests go to it for the next 5 minutes."
            ),
        )

    def _pause(self, ref: int, name: str, paused: bool) -> None:
        if paused:
            title, body = f"Paused {name}", "New requests go to other accounts until you resume it."
        else:
            title, body = f"Resumed {name}", "It takes requests again."
        self._answer(
            self._bridge.pause(ref, paused),
            f"Could not {'pause' if paused else 'resume'} {name}",
            lambda _: self.show_message(title, body),
        )

    def _clear_cooldown(self, ref: int, name: str) -> None:
        self._answer(
            self._bridge.clear_cooldown(ref),
            f"Could not clear {name}'s cooldown",
            # the words of the "recovered" notification, so the two show as one message
            lambda _: self.show_message(f"{name} recovered", "It takes requests again."),
        )

    def _set_enabled(self, ref: int, name: str, enabled: bool) -> None:
        if enabled:
            self._enable(ref, name, True)
            return
        self._ask_first(ask_to_disable(None, name), lambda: self._enable(ref, name, False))

    def _enable(self, ref: int, name: str, enabled: bool) -> None:
        if enabled:
            title, body = f"Enabled {name}", "It serves requests again; its quota is being read."
        else:
            title, body = f"Disabled {name}", "It serves nothing until you enable it."
        self._answer(
            self._bridge.set_enabled(ref, enabled),
            f"Could not {'enable' if enabled else 'disable'} {name}",
            lambda _: self.show_message(title, body),
        )

    def _verify(self, ref: int, name: str) -> None:
        # the verdict itself arrives on bridge.verified (_show_verdict)
        self._answer(self._bridge.verify(ref), f"Could not check {name}'s login", lambda _: None)

    def _sign_in_again(self, ref: int, name: str) -> None:
        self.show_message(f"Signing in {name} again", "Finish the sign-in in your browser.")
        self._answer(
            self._bridge.sign_in_again(ref),
            f"{name} is not signed in",
            lambda _: self.show_message(f"{name} is signed in again", "It takes requests again."),
        )

    def _ask_first(self, box: QMessageBox, then: Callable[[], None]) -> None:
        box.finished.connect(lambda result: self._answered(box, result, then))
        self.confirm_box = box
        box.open()  # not exec(): a nested event loop would stall the proxy's asyncio loop

    def _answered(self, box: QMessageBox, result: int, then: Callable[[], None]) -> None:
        self.confirm_box = None
        box.deleteLater()
        if result == QMessageBox.StandardButton.Yes:
            then()

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
        url = self._bridge.endpoint_url()
        QGuiApplication.clipboard().setText(url)
        self.show_message("Endpoint URL copied", url)

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.openRequested.emit()
