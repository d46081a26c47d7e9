"""Settings (R-UI-4): port, scheduler mode, the three ceilings, the global cap, the quota poll
floor and start at login — saved through service.update_settings, which validates them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.core.pool import MAX_CAP
from sublane_desktop.core.scheduler import MODES
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.colours import dim_text
from sublane_desktop.gui.dialogs.common import error_label, main_action, show_error
from sublane_desktop.gui.sizing import keep_wrapped_text_whole, scroll_when_small
from sublane_desktop.service.settings import NOTIFY_SETTINGS

# Labels a person reads without the spec (third newcomer pass: "ceiling", "Global cap" and
# "Quota poll floor" were words of the design, with nothing to say what they do).
CEILINGS = (
    ("scheduler.five_hour_max", "Move on at (5 hours)"),
    ("scheduler.seven_day_max", "Move on at (7 days)"),
    ("scheduler.fable_weekly_max", "Move on at (Fable week)"),
)
# Each scheduling mode in words, with what it does (R-UI-16: no raw setting values).
MODE_LABELS = {
    "score": ("Spend what resets soonest", "Uses first the quota that resets soonest"),
    "round_robin": ("Take turns", "Gives each new conversation to the next account in turn"),
    "cost_aware": (
        "Keep conversations' caches",
        "Like 'Spend what resets soonest', but moves a conversation to another account only "
        "when the move is worth the cached input it reads again",
    ),
}
CEILING_HELP = (
    "Once an account has used this much of a window, new conversations go to another account"
    " that has more left; a switch you make by hand still wins."
)
CAP_HELP = "At most this many requests go to the providers at once, across all accounts."
POLL_HELP = "Each account's quota is read at most this often (Refresh reads it at once)."


def mode_words(mode: str) -> tuple[str, str]:
    """A mode's label and its explanation; an unknown one is still said in words."""
    return MODE_LABELS.get(mode, (mode.replace("_", " ").capitalize(), ""))


def _note(text: str) -> QLabel:
    """A line under a field that says what it means, in the dimmer text colour."""
    label = QLabel(text)
    label.setWordWrap(True)
    palette = label.palette()
    palette.setColor(QPalette.ColorRole.WindowText, dim_text(palette))
    label.setPalette(palette)
    return label


class SettingsDialog(QDialog):
    saved = Signal(object)  # the settings after saving

    def __init__(self, bridge: Bridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._loaded: dict[str, Any] = {}
        self.setWindowTitle("Settings")

        self.port = QSpinBox()
        self.port.setRange(0, 65535)
        self.port.setToolTip("0 picks a free port at each start")
        # Always says that a new port waits for a restart; wraps within a width fixed up front
        # so typing a port never makes the dialog grow (issue 14).
        self.port_note = QLabel()
        self.port_note.setWordWrap(True)
        self.port_note.setMinimumWidth(self.port_note.fontMetrics().horizontalAdvance("M") * 34)
        self.port.valueChanged.connect(self._port_changed)
        self.mode = QComboBox()
        for index, mode in enumerate(MODES):
            label, explanation = mode_words(mode)
            self.mode.addItem(label, mode)
            self.mode.setItemData(index, explanation, Qt.ItemDataRole.ToolTipRole)
        self.mode_note = _note("")
        self.mode.currentIndexChanged.connect(self._mode_changed)
        self.ceilings: dict[str, QDoubleSpinBox] = {}
        for key, _ in CEILINGS:
            box = QDoubleSpinBox()
            box.setRange(1.0, 100.0)
            box.setDecimals(1)
            box.setSuffix(" %")
            self.ceilings[key] = box
        self.cap = QSpinBox()
        self.cap.setRange(1, MAX_CAP)
        self.cap.setToolTip(CAP_HELP)
        self.cap_note = _note(CAP_HELP)
        self.poll_floor = QSpinBox()
        self.poll_floor.setRange(0, 86400)
        self.poll_floor.setSuffix(" s")
        self.poll_floor.setToolTip(POLL_HELP)
        self.poll_note = _note(POLL_HELP)
        self.start_at_login = QCheckBox("Start SubLane when I log in")
        self.icon_percent = QCheckBox("Show the tightest window's percent on the tray icon")

        form = QFormLayout()
        form.addRow("Port", self.port)
        form.addRow("", self.port_note)
        form.addRow("Scheduler", self.mode)
        form.addRow("", self.mode_note)
        for key, label in CEILINGS:
            form.addRow(label, self.ceilings[key])
        self.ceiling_note = _note(CEILING_HELP)
        form.addRow("", self.ceiling_note)
        form.addRow("Requests at once", self.cap)
        form.addRow("", self.cap_note)
        form.addRow("Read quotas every", self.poll_floor)
        form.addRow("", self.poll_note)
        form.addRow("", self.start_at_login)
        form.addRow("", self.icon_percent)

        self.error = error_label()
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        self.notify = NotifySettings()
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.notify)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)
        main_action(self, self.buttons.button(QDialogButtonBox.StandardButton.Save))
        scroll_when_small(self)
        keep_wrapped_text_whole(self)
        self.load()

    def load(self, settings: Mapping[str, Any] | None = None) -> None:
        s = dict(settings if settings is not None else self._bridge.settings())
        self._loaded = s
        self.port.setValue(int(s.get("server.port", 8765)))
        self.mode.setCurrentIndex(max(0, self.mode.findData(s.get("scheduler.mode", "score"))))
        for key, box in self.ceilings.items():
            box.setValue(round(float(s.get(key, 1.0)) * 100, 1))
        self.cap.setValue(int(s.get("pool.cap", 8)))
        self.poll_floor.setValue(int(s.get("quota.poll_floor_seconds", 300)))
        self.start_at_login.setChecked(bool(s.get("app.start_at_login", False)))
        self.icon_percent.setChecked(bool(s.get("tray.icon_percent", True)))
        self.notify.load(s)
        show_error(self.error, "")
        self._port_changed(self.port.value())
        self._mode_changed(self.mode.currentIndex())

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "server.port": self.port.value(),
            "scheduler.mode": self.mode.currentData(),
            "pool.cap": self.cap.value(),
            "quota.poll_floor_seconds": self.poll_floor.value(),
            "app.start_at_login": self.start_at_login.isChecked(),
            "tray.icon_percent": self.icon_percent.isChecked(),
        }
        for key, box in self.ceilings.items():
            out[key] = round(box.value() / 100, 4)
        out.update(self.notify.values())
        return out

    def changes(self) -> dict[str, Any]:
        """Only what the person changed, so a save never rewrites untouched settings."""
        return {k: v for k, v in self.values().items() if self._loaded.get(k) != v}

    def _mode_changed(self, _index: int) -> None:
        self.mode_note.setText(mode_words(str(self.mode.currentData()))[1])

    def _port_changed(self, value: int) -> None:
        endpoint = self._bridge.endpoint_url()
        if value != int(self._loaded.get("server.port", value)):
            where = "a free port" if value == 0 else f"port {value}"
            self.port_note.setText(
                f"Serving on {endpoint} until SubLane restarts; then on {where}."
            )
        else:
            self.port_note.setText(
                f"Serving on {endpoint}. A new port applies after SubLane restarts."
            )

    def save(self) -> None:
        changes = self.changes()
        if not changes:
            self.accept()
            return
        reply = self._bridge.update_settings(changes)
        if reply is None:
            show_error(self.error, "this build cannot change settings")
            return
        self.buttons.setEnabled(False)
        reply.done.connect(self._saved)
        reply.failed.connect(self._failed)

    def _saved(self, settings: Any) -> None:
        self.buttons.setEnabled(True)
        self.saved.emit(settings)
        self.accept()

    def _failed(self, message: str) -> None:
        self.buttons.setEnabled(True)
        show_error(self.error, message)


NOTIFY_KINDS = (
    ("notify.window_crossing", "A window crosses a threshold"),
    ("notify.forecast", "A window will run out before it resets"),
    ("notify.cooldown", "An account cools down or runs out, and recovers"),
    ("notify.signin", "An account needs signing in again"),
    ("notify.window_reset", "A window resets while requests were being turned away"),
)


class NotifySettings(QGroupBox):
    """Which notifications to show (R-UI-13): one switch per kind and the two thresholds."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Notifications", parent)
        self.switches = {key: QCheckBox(label) for key, label in NOTIFY_KINDS}
        self.thresholds: list[QDoubleSpinBox] = []
        for name in ("First threshold", "Second threshold"):
            box = QDoubleSpinBox()
            box.setRange(1.0, 99.0)
            box.setDecimals(0)
            box.setSuffix(" %")
            box.setAccessibleName(name)
            self.thresholds.append(box)
        self.switches["notify.window_crossing"].toggled.connect(self._crossing_toggled)
        form = QFormLayout(self)
        form.addRow(self.switches["notify.window_crossing"])
        form.addRow("Thresholds", _row(self.thresholds))
        for key, _ in NOTIFY_KINDS[1:]:
            form.addRow(self.switches[key])

    def load(self, settings: Mapping[str, Any]) -> None:
        for key, box in self.switches.items():
            box.setChecked(bool(settings.get(key, NOTIFY_SETTINGS[key])))
        values = list(settings.get("notify.thresholds") or NOTIFY_SETTINGS["notify.thresholds"])
        for spin, value in zip(self.thresholds, [*values, *values][:2], strict=True):
            spin.setValue(round(float(value) * 100))
        self._crossing_toggled(self.switches["notify.window_crossing"].isChecked())

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {key: box.isChecked() for key, box in self.switches.items()}
        # The same number twice is one threshold, not a mistake to refuse.
        out["notify.thresholds"] = sorted({round(b.value() / 100, 2) for b in self.thresholds})
        return out

    def _crossing_toggled(self, on: bool) -> None:
        for box in self.thresholds:
            box.setEnabled(on)


def _row(widgets: list[QDoubleSpinBox]) -> QWidget:
    from PySide6.QtWidgets import QHBoxLayout

    row = QWidget()
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    for widget in widgets:
        layout.addWidget(widget)
    layout.addStretch(1)
    return row
