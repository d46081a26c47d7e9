"""Small pieces the dialogs share."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QToolButton,
    QWidget,
)

from sublane_desktop.gui.colours import tone_colour
from sublane_desktop.gui.pool_status import Tone


def error_label(parent: QWidget | None = None) -> QLabel:
    """An inline error line: hidden while empty, in the alarm colour, selectable for copying."""
    label = QLabel(parent)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    palette = label.palette()
    palette.setColor(QPalette.ColorRole.WindowText, tone_colour(Tone.BAD, palette))
    label.setPalette(palette)
    label.hide()
    return label


def show_error(label: QLabel, message: str) -> None:
    label.setText(message)
    label.setVisible(bool(message))


def code_view(text: str = "", parent: QWidget | None = None) -> QPlainTextEdit:
    view = QPlainTextEdit(text, parent)
    view.setReadOnly(True)
    view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    lines = max(1, text.count("\n") + 1)
    view.setFixedHeight(view.fontMetrics().lineSpacing() * (lines + 1) + 8)
    return view


def copy_text(text: str) -> None:
    QGuiApplication.clipboard().setText(text)


def secret_field(name: str, parent: QWidget | None = None) -> tuple[QLineEdit, QWidget]:
    """A masked line edit with a Show toggle (R-UI-10: secrets are masked in dialogs)."""
    row = QWidget(parent)
    edit = QLineEdit(row)
    edit.setEchoMode(QLineEdit.EchoMode.Password)
    edit.setAccessibleName(name)
    toggle = QToolButton(row)
    toggle.setText("Show")
    toggle.setCheckable(True)
    toggle.setAccessibleName(f"Show {name.lower()}")
    toggle.toggled.connect(lambda shown: (
        edit.setEchoMode(QLineEdit.EchoMode.Normal if shown else QLineEdit.EchoMode.Password),
        toggle.setText("Hide" if shown else "Show")))
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(edit, 1)
    layout.addWidget(toggle)
    edit.show_toggle = toggle  # type: ignore[attr-defined]  # tests and screen readers find it
    return edit, row
