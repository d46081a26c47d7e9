"""The Accounts window (R-UI-2): one card per account with its gauges, state and levers.

Live without polling the database: the bridge re-reads the in-memory runtime after account
events (and once a second for countdowns). Every button calls a service method through the
bridge — the same method the management API and the CLI call (R-ARCH-2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from PySide6.QtCore import QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QCloseEvent,
    QPainter,
    QPaintEvent,
    QPalette,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.core.miss_words import reread_today, reread_today_by_account
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.colours import dim_text, tone_colour, with_alpha
from sublane_desktop.gui.dashboard import account_row, provider_name, verdict_words
from sublane_desktop.gui.dialogs.common import ask_first, ask_to_disable, copy_button
from sublane_desktop.gui.dialogs.keyring_setup import keyring_words
from sublane_desktop.gui.gauge import GaugeBar
from sublane_desktop.gui.icons import app_icon
from sublane_desktop.gui.pool_status import (
    Tone,
    badges,
    ceilings_for,
    gauge_windows,
    has_cooldown,
    is_api_key,
    state_status,
    window_label,
)
from sublane_desktop.gui.sizing import scroll_when_small, set_default_size
from sublane_desktop.gui.toggle_lever import ToggleLever
from sublane_desktop.gui.usage_chart import UsageChart

MIN_LIMIT, MAX_LIMIT = 1, 8
API_KEY_QUOTA_NOTE = "API key: no subscription quota"


class Badge(QWidget):
    """A small rounded label whose tint says how much attention the state needs."""

    def __init__(
        self,
        text: str = "",
        tone: Tone = Tone.MUTED,
        *,
        outline: bool = False,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.outline = outline
        self.text = ""
        self.tone = tone
        self.set(text, tone)
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)

    def set(self, text: str, tone: Tone) -> None:
        if (text, tone) != (self.text, self.tone):
            self.text, self.tone = text, tone
            self.updateGeometry()
            self.update()

    def sizeHint(self) -> QSize:
        fm = self.fontMetrics()
        return QSize(fm.horizontalAdvance(self.text) + 12, fm.height() + 4)

    def paintEvent(self, event: QPaintEvent) -> None:
        palette = self.palette()
        colour = tone_colour(self.tone, palette)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        painter.setPen(with_alpha(colour, 150))
        painter.setBrush(Qt.BrushStyle.NoBrush if self.outline else with_alpha(colour, 45))
        painter.drawRoundedRect(rect, 4, 4)
        painter.setPen(palette.color(QPalette.ColorRole.WindowText))
        painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self.text)
        painter.end()


class AccountCard(QFrame):
    """One account: name, markers, badges, in-flight / limit, levers, and its gauges."""

    removeRequested = Signal(int, str)
    disableRequested = Signal(int, str)  # the window asks first

    def __init__(
        self, bridge: Bridge, account: Mapping[str, Any], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.account_id = int(account["id"])
        self.account: Mapping[str, Any] = account
        self.setFrameShape(QFrame.Shape.StyledPanel)

        self.name_label = QLabel()
        font = self.name_label.font()
        font.setBold(True)
        self.name_label.setFont(font)
        self.provider_label = QLabel()
        provider_palette = self.provider_label.palette()
        provider_palette.setColor(QPalette.ColorRole.WindowText, dim_text(provider_palette))
        self.provider_label.setPalette(provider_palette)
        # The tray's words (dashboard.marks_of): which provider's requests it takes first.
        provider = provider_name(account.get("provider"))
        self.current_marker = Badge(f"current for {provider}", Tone.INFO, outline=True)
        self.fable_marker = Badge("current for Fable", Tone.INFO, outline=True)
        self.badge_row = QHBoxLayout()
        self.badge_row.setSpacing(4)
        self.badges: list[Badge] = []

        self.in_flight_label = QLabel()
        self.limit = QSpinBox()
        self.limit.setRange(MIN_LIMIT, MAX_LIMIT)
        self.limit.setKeyboardTracking(False)  # typed digits commit on Enter / focus-out
        self.limit.setToolTip("Simultaneous requests this account may serve (1–8)")
        self.limit.valueChanged.connect(self._limit_edited)

        # Real buttons (R-UI-10): the levers must read as things to press, not as labels.
        self.switch_button = self._lever(
            "Switch to", self._switch, "Serve this account's requests for 5 minutes"
        )
        self.pause_button = self._lever(
            "Pause", self._toggle_pause, "Stop sending new requests to this account"
        )
        self.clear_button = self._lever(
            "Clear cooldown", self._clear, "Let this account serve again now"
        )
        # On while its chart is shown, and looks it (ToggleLever).
        self.history_button = ToggleLever("History")
        self.history_button.setToolTip("Show the last 7 days of usage")
        self.history_button.setAutoDefault(False)
        self.history_button.toggled.connect(lambda _: self._toggle_history())
        self.more_button = QToolButton()
        self.more_button.setText("⋯")
        self.more_button.setAccessibleName(f"More actions for {account.get('name', '')}")
        self.more_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        more = QMenu(self.more_button)
        self.enable_action = more.addAction("Disable")
        self.enable_action.triggered.connect(self._toggle_enabled)
        self.verify_action = more.addAction("Verify login")
        self.verify_action.triggered.connect(self._verify)
        # R-LOGIN-1: shown while the account needs it (auth_failed), mends it in place
        self.signin_action = more.addAction("Sign in again…")
        self.signin_action.triggered.connect(lambda: self._bridge.sign_in_again(self.account_id))
        self.signin_action.setVisible(account.get("state") == "auth_failed")
        self.remove_action = more.addAction("Remove…")
        self.remove_action.triggered.connect(
            lambda: self.removeRequested.emit(self.account_id, str(self.account.get("name")))
        )
        self.more_button.setMenu(more)

        # Three rows so a pinned, cooling, current account still fits the default width
        # (R-UI-10): who and how it is; its gauges; its limit and levers.
        header = QHBoxLayout()
        header.setSpacing(6)
        header.addWidget(self.name_label)
        header.addWidget(self.provider_label)
        header.addWidget(self.current_marker)
        header.addWidget(self.fable_marker)
        header.addLayout(self.badge_row)
        header.addStretch(1)
        levers = QHBoxLayout()
        levers.setSpacing(6)
        levers.addWidget(self.in_flight_label)
        levers.addWidget(self.limit)
        levers.addStretch(1)
        for button in (
            self.switch_button,
            self.pause_button,
            self.clear_button,
            self.history_button,
            self.more_button,
        ):
            levers.addWidget(button)
        self.in_flight_label.setBuddy(self.limit)
        self.limit.setAccessibleName(f"Request limit of {account.get('name', '')}")
        self.chart = UsageChart()
        self.chart.hide()

        self.gauges: dict[str, GaugeBar] = {}
        gauge_grid = QGridLayout()
        gauge_grid.setContentsMargins(0, 0, 0, 0)
        gauge_grid.setVerticalSpacing(2)
        for row, window in enumerate(gauge_windows(account)):
            bar = GaugeBar(window_label(window))
            self.gauges[window] = bar
            gauge_grid.addWidget(bar, row, 0)
        # R-UI-10: an API key has no subscription quota; say so instead of empty gauges.
        self.quota_note = QLabel(API_KEY_QUOTA_NOTE)
        self.quota_note.setVisible(is_api_key(account))
        dim = self.quota_note.palette()
        dim.setColor(QPalette.ColorRole.WindowText, dim_text(dim))
        self.quota_note.setPalette(dim)
        # R-UI-7: "runs out in ~1h 10m, resets in 2h 40m" when a window would run out first.
        self.forecast_label = QLabel()
        self.forecast_label.setWordWrap(True)
        warn = self.forecast_label.palette()
        warn.setColor(QPalette.ColorRole.WindowText, tone_colour(Tone.WARN, warn))
        self.forecast_label.setPalette(warn)
        self.forecast_label.hide()
        # R-UI-8, R-LOGIN-4: why an account cannot serve, in words, with the fix
        self.reason_label = QLabel()
        self.reason_label.setWordWrap(True)
        bad = self.reason_label.palette()
        bad.setColor(QPalette.ColorRole.WindowText, tone_colour(Tone.BAD, bad))
        self.reason_label.setPalette(bad)
        self.reason_label.hide()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(4)
        layout.addLayout(header)
        layout.addWidget(self.reason_label)
        layout.addLayout(gauge_grid)
        layout.addWidget(self.quota_note)
        layout.addWidget(self.forecast_label)
        layout.addWidget(self.chart)
        layout.addLayout(levers)
        self.history_button.setVisible(bool(self.gauges))  # an API key has no history to show

    @staticmethod
    def _lever(text: str, slot: Callable[[], None], tip: str) -> QPushButton:
        button = QPushButton(text)
        button.setToolTip(tip)
        button.setAutoDefault(False)
        button.clicked.connect(lambda: slot())
        return button

    # usage history (R-UI-11) ---------------------------------------------------------------

    def _toggle_history(self) -> None:
        shown = self.history_button.isChecked()
        self.chart.setVisible(shown)
        if shown:
            self.load_history()

    def load_history(self) -> None:
        """Read the last 7 days from the store (off the loop thread) and draw them."""
        task = self._bridge.usage_history(self.account_id)
        windows = tuple(self.gauges)
        now = self._bridge.now()

        def loaded(done: Any) -> None:
            if done.cancelled() or done.exception() is not None:
                return
            try:
                self.chart.set_history(done.result(), windows, now)
            except RuntimeError:  # the card was deleted meanwhile
                pass

        task.add_done_callback(loaded)
        self.history_task = task

    def update_from(
        self, account: Mapping[str, Any], settings: Mapping[str, Any], now: float
    ) -> None:
        self.account = account
        self.name_label.setText(str(account.get("name", "?")))
        self.provider_label.setText(provider_name(account.get("provider")))  # not its id
        self.current_marker.setVisible(bool(account.get("current")))
        self.fable_marker.setVisible(bool(account.get("fable_current")))
        self._set_badges(badges(account, now))
        self.in_flight_label.setText(f"{account.get('in_flight', 0)} running · at most")
        limit = int(account.get("max_concurrency") or MIN_LIMIT)
        if self.limit.value() != limit and not self.limit.hasFocus():
            self.limit.blockSignals(True)
            self.limit.setValue(limit)
            self.limit.blockSignals(False)
        paused = bool(account.get("paused"))
        self.pause_button.setText("Resume" if paused else "Pause")
        self.enable_action.setText(
            "Enable" if account.get("state") == "disabled" else "Disable…"  # it asks first
        )
        self.signin_action.setVisible(account.get("state") == "auth_failed")
        # Only the levers that apply (R-UI-12), as in the tray: a paused, disabled or signed-out
        # account is not one to switch to and has no cooldown worth clearing.
        usable = not paused and account.get("state") not in ("disabled", "auth_failed")
        self.switch_button.setVisible(usable)
        self.clear_button.setVisible(usable)
        self.clear_button.setEnabled(has_cooldown(account))
        ceilings = ceilings_for(settings, account.get("name"))
        gauges = account.get("gauges") or {}
        for window, bar in self.gauges.items():
            bar.set_reading(gauges.get(window), ceilings.get(window, 1.0), now)
        reason = state_status(account, now).detail  # the badge says what; this says why
        if reason != self.reason_label.text():
            self.reason_label.setText(reason)
        self.reason_label.setVisible(bool(reason))
        row = account_row(account, settings, now)
        forecasts = [f"{line.label}: {line.forecast}" for line in row.windows if line.forecast]
        text = "\n".join(forecasts)
        if text != self.forecast_label.text():
            self.forecast_label.setText(text)
        self.forecast_label.setVisible(bool(text))

    def _set_badges(self, wanted: list[tuple[str, Tone]]) -> None:
        while len(self.badges) < len(wanted):
            badge = Badge()
            self.badges.append(badge)
            self.badge_row.addWidget(badge)
        for badge, (text, tone) in zip(self.badges, wanted, strict=False):
            badge.set(text, tone)
            badge.show()
        for badge in self.badges[len(wanted) :]:
            badge.hide()

    def badge_texts(self) -> list[str]:
        return [b.text for b in self.badges if not b.isHidden()]

    # levers ---------------------------------------------------------------------------------

    def _switch(self) -> None:
        self._bridge.switch(self.account_id)

    def _toggle_enabled(self) -> None:
        if self.account.get("state") == "disabled":
            self._bridge.set_enabled(self.account_id, True)
        else:
            self.disableRequested.emit(self.account_id, str(self.account.get("name")))

    def _verify(self) -> None:
        self._bridge.verify(self.account_id)

    def _toggle_pause(self) -> None:
        self._bridge.pause(self.account_id, not self.account.get("paused"))

    def _clear(self) -> None:
        self._bridge.clear_cooldown(self.account_id)

    def _limit_edited(self, value: int) -> None:
        self._bridge.set_limit(self.account_id, value)


class AccountsWindow(QWidget):
    addAccountRequested = Signal()
    settingsRequested = Signal()
    keysRequested = Signal()
    setupToolRequested = Signal()
    requestsRequested = Signal()
    keyringRequested = Signal()

    def __init__(
        self,
        bridge: Bridge,
        *,
        quit_on_close: bool = False,
        requests_available: bool = False,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        # Without a tray this window is the only way back in, so closing it must quit;
        # with a tray, closing only hides it (R-UI-5: a window never stops the proxy).
        self.quit_on_close = quit_on_close
        self.cards: dict[int, AccountCard] = {}
        self.confirm_box: QMessageBox | None = None
        self.close_box: QMessageBox | None = None
        self.setWindowTitle("SubLane — Accounts")
        self.setWindowIcon(app_icon())

        self.endpoint = QLineEdit(bridge.endpoint_url())
        self.endpoint.setReadOnly(True)
        self.copy_button = QPushButton("Copy")
        copy_button(self.copy_button, self._bridge.endpoint_url)
        endpoint_row = QHBoxLayout()
        endpoint_label = QLabel("&Endpoint:")
        endpoint_label.setBuddy(self.endpoint)
        endpoint_row.addWidget(endpoint_label)
        endpoint_row.addWidget(self.endpoint, 1)
        endpoint_row.addWidget(self.copy_button)

        self.add_button = QPushButton("Add account…")
        self.add_button.clicked.connect(self.addAccountRequested)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read every account's quota now")
        self.refresh_button.clicked.connect(self.refresh_quotas)
        self.requests_button = QPushButton("Requests")
        self.requests_button.setEnabled(requests_available)
        self.requests_button.clicked.connect(self.requestsRequested)
        self.keys_button = QPushButton("Client keys…")
        self.keys_button.clicked.connect(self.keysRequested)
        self.setup_button = QPushButton("Set up a tool…")
        self.setup_button.clicked.connect(self.setupToolRequested)
        self.settings_button = QPushButton("Settings…")
        self.settings_button.clicked.connect(self.settingsRequested)
        # The welcome's four steps again (fault 11): without a tray this is the only way back.
        self.welcome_button = QPushButton("Welcome…")
        self.welcome_button.setToolTip(
            "The first steps again: import logins, create a key, set up a tool, send a test"
        )
        self.welcome_button.clicked.connect(bridge.request_welcome)
        # In the endpoint row, not the row of buttons below: that row then fits a 1280×800 screen at
        # 200 % (640 logical pixels) without scrolling sideways.
        endpoint_row.addWidget(self.welcome_button)
        buttons = QHBoxLayout()
        for button in (self.add_button, self.refresh_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        for button in (
            self.requests_button,
            self.keys_button,
            self.setup_button,
            self.settings_button,
        ):
            buttons.addWidget(button)

        # R-UI-8: no usable keyring — say so, with the way out one click away.
        self.keyring_banner = QLabel()
        self.keyring_banner.setWordWrap(True)
        self.keyring_button = QPushButton("Set up a keyring…")
        self.keyring_button.clicked.connect(self.keyringRequested)
        self.keyring_row = QWidget()
        keyring_layout = QHBoxLayout(self.keyring_row)
        keyring_layout.setContentsMargins(0, 0, 0, 0)
        keyring_layout.addWidget(self.keyring_banner, 1)
        keyring_layout.addWidget(self.keyring_button)
        self._refresh_keyring_banner()

        self.list_widget = QWidget()
        self.list_layout = QVBoxLayout(self.list_widget)
        self.list_layout.setContentsMargins(0, 0, 0, 0)
        self.list_layout.setSpacing(6)
        self.placeholder = QLabel(
            "No accounts yet. Add one, or import the login of Claude Code or Codex."
        )
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.list_layout.addWidget(self.placeholder)
        self.list_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.list_widget)
        self.list_area = scroll

        self.pool_label = QLabel()
        # Today's cache misses by cause (R-CF-3): what switching and idling cost in input.
        self.misses_label = QLabel()
        self.misses_label.setWordWrap(True)
        self.error_label = QLabel()
        # Failures in the alarm colour; a verify that worked is news, not an error (fault 9).
        self._plain_palette = QPalette(self.error_label.palette())
        error_palette = self.error_label.palette()
        error_palette.setColor(QPalette.ColorRole.WindowText, tone_colour(Tone.BAD, error_palette))
        self._error_palette = error_palette
        self.error_label.setPalette(error_palette)
        self.quit_button = QPushButton("Quit")
        self.quit_button.setToolTip("Stop the proxy (in-flight requests finish first)")
        self.quit_button.clicked.connect(bridge.request_quit)
        bottom = QHBoxLayout()
        bottom.addWidget(self.pool_label)
        bottom.addWidget(self.error_label, 1)
        bottom.addWidget(self.quit_button)

        layout = QVBoxLayout(self)
        layout.addLayout(endpoint_row)
        layout.addLayout(buttons)
        layout.addWidget(self.keyring_row)
        layout.addWidget(self.list_area, 1)
        layout.addWidget(self.misses_label)
        layout.addLayout(bottom)
        scroll_when_small(self)
        set_default_size(self, 760, 520)

        bridge.accountsChanged.connect(self.refresh)
        bridge.settingsChanged.connect(self.refresh)
        bridge.ticked.connect(self.refresh)
        bridge.leverFailed.connect(self._lever_failed)
        bridge.verified.connect(self._show_verdict)
        bridge.missesChanged.connect(self.show_misses)
        bridge.refresh_snapshot()
        self.refresh()
        self.show_misses()
        bridge.refresh_misses()

    # state ------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Bring the cards in line with the bridge's snapshot (memory only)."""
        accounts = self._bridge.snapshot()
        settings = self._bridge.settings()
        now = self._bridge.now()
        ids = [int(a["id"]) for a in accounts]
        if ids != list(self.cards):
            self._rebuild(accounts)
        for account in accounts:
            self.cards[int(account["id"])].update_from(account, settings, now)
        in_flight = sum(int(a.get("in_flight") or 0) for a in accounts)
        self.pool_label.setText(
            f"{count_of(in_flight, 'request')} running · up to {settings.get('pool.cap', '?')} at once"
        )
        self.endpoint.setText(self._bridge.endpoint_url())
        self._refresh_keyring_banner()

    def _refresh_keyring_banner(self) -> None:
        problem = self._bridge.keyring_problem()
        text = f"Accounts unavailable. {keyring_words(problem)}" if problem else ""
        if text != self.keyring_banner.text():
            self.keyring_banner.setText(text)
            self.keyring_banner.setToolTip(problem or "")  # the technical reason
        self.keyring_row.setVisible(bool(problem))

    def show_misses(self) -> None:
        summary = self._bridge.misses_today()
        self.misses_label.setText(reread_today(summary))
        self.misses_label.setToolTip(reread_today_by_account(summary))
        self.misses_label.setVisible(bool(self.misses_label.text()))

    def _rebuild(self, accounts: Sequence[Mapping[str, Any]]) -> None:
        for card in self.cards.values():
            self.list_layout.removeWidget(card)
            card.deleteLater()
        self.cards = {}
        for index, account in enumerate(accounts):
            card = AccountCard(self._bridge, account)
            card.removeRequested.connect(self.confirm_remove)
            card.disableRequested.connect(self.confirm_disable)
            self.cards[int(account["id"])] = card
            self.list_layout.insertWidget(index, card)
        self.placeholder.setVisible(not accounts)
        # One label column for every gauge of every card, as wide as the widest label, so
        # the bars line up (R-UI-12) and no family name is cut.
        bars = [bar for card in self.cards.values() for bar in card.gauges.values()]
        width = max((bar.natural_label_width() for bar in bars), default=0)
        for bar in bars:
            bar.set_label_width(width)
        QTimer.singleShot(0, self, self.grow_to_fit)  # once the new cards are laid out

    def card_named(self, name: str) -> AccountCard:
        return next(c for c in self.cards.values() if c.account.get("name") == name)

    def _show_verdict(self, verdict: Any) -> None:
        if isinstance(verdict, dict):
            good = verdict.get("result") == "ok"
            self.error_label.setPalette(self._plain_palette if good else self._error_palette)
            self.error_label.setText(
                f"{verdict.get('name')}: {verdict_words(verdict)} — {verdict.get('detail', '')}"
            )

    def _lever_failed(self, method: str, message: str) -> None:
        self.error_label.setPalette(self._error_palette)
        self.error_label.setText(f"{method.replace('_', ' ')} failed: {message}")

    # actions ----------------------------------------------------------------------------------

    def refresh_quotas(self) -> None:
        self.error_label.clear()
        self._bridge.refresh_quotas()

    def confirm_remove(self, account_id: int, name: str) -> None:
        box = ask_first(
            self,
            "Remove account",
            f"Remove {name}? Its credential leaves the keyring; its request history stays.",
            "Remove",
        )
        self._open_confirm(box, lambda: self._bridge.remove_account(account_id))

    def confirm_disable(self, account_id: int, name: str) -> None:
        """Disable asks first here as in the tray (R-UI-12; the card's menu did not ask)."""
        box = ask_to_disable(self, name)
        self._open_confirm(box, lambda: self._bridge.set_enabled(account_id, False))

    def _open_confirm(self, box: QMessageBox, then: Callable[[], Any]) -> None:
        box.finished.connect(lambda result: self._confirm_answered(box, result, then))
        self.confirm_box = box
        box.open()

    def _confirm_answered(self, box: QMessageBox, result: int, then: Callable[[], Any]) -> None:
        self.confirm_box = None
        box.deleteLater()
        if result == QMessageBox.StandardButton.Yes:
            then()

    def show_and_raise(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not event.spontaneous():  # opened by us, not un-minimized by the window manager
            self._bridge.refresh_snapshot()
            self.refresh()
            self._bridge.refresh_quotas()  # R-GAUGE-3: opening the window polls quotas
            QTimer.singleShot(0, self, self.grow_to_fit)

    def grow_to_fit(self) -> None:
        """Taller, as far as the screen allows, when the accounts need a scroll bar: five
        accounts sat behind one in a window with room to grow (issue 25, fault 13). Never
        shrinks: a size the person chose stays."""
        screen = self.screen()
        if screen is None or not self.isVisible():
            return
        missing = self.list_widget.sizeHint().height() - self.list_area.viewport().height()
        if missing <= 0:
            return
        area = screen.availableGeometry()
        frame = self.frameGeometry()
        chrome = frame.height() - self.height()  # the title bar and borders
        height = min(self.height() + missing, area.height() - chrome)
        if height <= self.height():
            return
        self.resize(self.width(), height)
        top = min(frame.top(), area.bottom() + 1 - (height + chrome))  # keep it on screen
        self.move(frame.left(), max(area.top(), top))

    def closeEvent(self, event: QCloseEvent) -> None:
        event.ignore()
        if self.quit_on_close:
            self.ask_quit_or_serve()
        else:
            self.hide()

    def ask_quit_or_serve(self) -> None:
        """No tray (R-UI-8): this window is the only way back in, so closing it asks whether
        to stop the proxy or keep serving in the background."""
        if self.close_box is not None:
            self.close_box.raise_()
            return
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Quit SubLane?",
            "There is no system tray on this desktop, so this window is "
            "SubLane's only window. Stop the proxy, or keep serving in the "
            "background? (Run SubLane again to bring this window back.)",
            QMessageBox.StandardButton.NoButton,
            self,
        )
        self.quit_choice = box.addButton("Quit", QMessageBox.ButtonRole.DestructiveRole)
        self.serve_choice = box.addButton("Keep serving", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(self.serve_choice)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.finished.connect(lambda _result: self._close_answered(box))
        self.close_box = box
        box.open()  # not exec(): a nested event loop would stall the proxy

    def _close_answered(self, box: QMessageBox) -> None:
        self.close_box = None
        clicked = box.clickedButton()
        box.deleteLater()
        if clicked is self.quit_choice:
            self._bridge.request_quit()
        elif clicked is self.serve_choice:
            self.hide()


def count_of(count: int, thing: str) -> str:
    """1 request, 0 requests."""
    return f"{count} {thing}{'' if count == 1 else 's'}"
