"""Small pieces the dialogs share."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase, QGuiApplication, QPalette, QResizeEvent, QTextOption
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
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


def main_action(dialog: QDialog, button: QPushButton | None) -> None:
    """Enter runs `button`, the dialog's own main action, wherever the focus is (R-UI-15);
    None: Enter runs nothing (a dialog whose only way out is Close).

    Every push button in a dialog is "auto default" unless told otherwise: one that once had
    the focus stays the default after the focus moves on, so Enter in a text box ran whichever
    button the Tab key passed last ("Import Claude Code login" in Add account, issue 25).
    Call this after the dialog's last button is built."""
    for other in dialog.findChildren(QPushButton):
        if other is not button:
            other.setAutoDefault(False)
            other.setDefault(False)
    if button is not None:
        button.setAutoDefault(True)
        button.setDefault(True)


def show_error(label: QLabel, message: str) -> None:
    label.setText(message)
    label.setVisible(bool(message))


class CodeView(QPlainTextEdit):
    """Read-only lines to copy, as tall as their text: long lines wrap at the view's width
    instead of hiding behind scroll bars (R-UI-10); Copy still copies the real lines."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setReadOnly(True)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.textChanged.connect(self._fit)
        self._fit()

    def _fit(self) -> None:
        lines = max(1, int(self.document().documentLayout().documentSize().height()))
        margins = self.contentsMargins()
        height = (
            self.fontMetrics().lineSpacing() * lines
            + 2 * int(self.document().documentMargin())
            + margins.top()
            + margins.bottom()
            + 2
        )
        if height != self.height():
            self.setFixedHeight(height)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()  # a narrower view wraps into more lines


def code_view(text: str = "", parent: QWidget | None = None) -> QPlainTextEdit:
    return CodeView(text, parent)


def copy_text(text: str) -> None:
    QGuiApplication.clipboard().setText(text)


def ask_first(parent: QWidget | None, title: str, question: str, action: str) -> QMessageBox:
    """A question before a lever that is hard to undo (R-UI-12: Disable, Remove, Revoke). Its
    button says the action ("Disable", not "Yes") and Cancel is the default, so Enter never
    does it by accident. The caller connects `finished` and opens it (open(), not exec(): a
    nested event loop would stall the proxy's asyncio loop)."""
    box = QMessageBox(
        QMessageBox.Icon.Question,
        title,
        question,
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
        parent,
    )
    yes = box.button(QMessageBox.StandardButton.Yes)
    if yes is not None:
        yes.setText(action)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    if parent is not None:
        box.setWindowModality(Qt.WindowModality.WindowModal)
    return box


def ask_to_disable(parent: QWidget | None, name: str) -> QMessageBox:
    """The one Disable question, for the tray and the Accounts window alike."""
    return ask_first(
        parent,
        f"Disable {name}?",
        f"{name} will serve nothing until you enable it again. Its settings, login and "
        "history stay.",
        "Disable",
    )


COPIED = "Copied ✓"
COPIED_MS = 2000  # long enough to be seen, short enough that a second copy reads as new


def copy_button(button: QPushButton, text: Callable[[], str]) -> None:
    """A Copy button that says it copied (third newcomer pass: Copy in the welcome, Client
    keys, Set up a tool and the Accounts window showed nothing, so people copied twice or not
    at all). It is as wide as its longer label from the start, so nothing beside it moves."""
    label = button.text()
    metrics = button.fontMetrics()
    extra = button.sizeHint().width() - metrics.horizontalAdvance(label)
    button.setMinimumWidth(max(metrics.horizontalAdvance(w) for w in (label, COPIED)) + extra)

    def copy() -> None:
        copy_text(text())
        button.setText(COPIED)
        QTimer.singleShot(COPIED_MS, button, lambda: button.setText(label))

    button.clicked.connect(copy)


class SecretEdit(QLineEdit):
    """A masked line edit that knows its Show toggle (tests and screen readers find it)."""

    show_toggle: QToolButton


def secret_field(name: str, parent: QWidget | None = None) -> tuple[SecretEdit, QWidget]:
    """A masked line edit with a Show toggle (R-UI-10: secrets are masked in dialogs)."""
    row = QWidget(parent)
    edit = SecretEdit(row)
    edit.setEchoMode(QLineEdit.EchoMode.Password)
    edit.setAccessibleName(name)
    toggle = QToolButton(row)
    toggle.setText("Show")
    toggle.setCheckable(True)
    toggle.setAccessibleName(f"Show {name.lower()}")

    def reveal(shown: bool) -> None:
        edit.setEchoMode(QLineEdit.EchoMode.Normal if shown else QLineEdit.EchoMode.Password)
        toggle.setText("Hide" if shown else "Show")

    toggle.toggled.connect(reveal)
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(edit, 1)
    layout.addWidget(toggle)
    edit.show_toggle = toggle
    return edit, row
