"""Small pieces the dialogs share."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication, QPalette
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QWidget

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
