"""The tray app could not start its proxy: say why in a dialog (R-UI-8).

The app may have been started from a menu or at login, with no terminal to read, so every
startup failure is shown. A port in use offers another port right away; the other failures
(another SubLane on this data dir, a locked database, an unusable data dir) say what to do next
and end the app.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QMessageBox,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.gui.dialogs.common import main_action
from sublane_desktop.gui.sizing import keep_wrapped_text_whole, scroll_when_small
from sublane_desktop.startup import MAX_PORT, StartupError

# Ports below this need privileges on most systems; nobody should be offered one.
FIRST_USER_PORT = 1024
# The offer is the next free port above the taken one: close to what tools were set up with.
_NEARBY = 50

NEXT_STEPS = {
    StartupError.ALREADY_SERVING: "Use the SubLane that is already running (its tray icon or "
    "`sublane status`), or quit it first.",
    StartupError.DATABASE_LOCKED: "Close the other program that has the database open, then "
    "start SubLane again.",
    StartupError.DATA_DIR: "Start SubLane with a data directory you can write to "
    "(--data-dir or SUBLANE_DATA_DIR).",
    StartupError.BAD_PORT: "Choose a port from 1024 to 65535 in Settings or with --port.",
}


@dataclass(frozen=True)
class PortChoice:
    port: int
    remember: bool  # save it as the `server.port` setting once the proxy listens on it


def free_port_near(host: str, taken: int | None) -> int:
    """The first free port above `taken` (or any free one): the one the dialog suggests."""
    start = max(FIRST_USER_PORT, (taken or 8765) + 1)
    for port in range(start, min(start + _NEARBY, MAX_PORT + 1)):
        if _can_bind(host, port):
            return port
    with socket.socket(_family(host)) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _can_bind(host: str, port: int) -> bool:
    with socket.socket(_family(host)) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the proxy binds
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


class PortInUseDialog(QDialog):
    """Port N is taken: start on another one (suggested), or quit."""

    def __init__(self, error: StartupError, host: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("SubLane: port in use")
        self.setAccessibleName("Port in use")
        taken = error.port
        explanation = QLabel(
            f"Port {taken} on {host} is already used by another program, so SubLane cannot "
            "start its proxy there.\nStart it on another port instead, or quit and free the "
            "port first."
        )
        explanation.setWordWrap(True)
        explanation.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.port_box = QSpinBox()
        self.port_box.setRange(FIRST_USER_PORT, MAX_PORT)
        self.port_box.setValue(free_port_near(host, taken))
        self.port_box.setAccessibleName("Port to start on")
        self.remember_box = QCheckBox("Use this port from now on")
        # One-off unless asked (fault 14): a conflict that passes must not move the proxy
        # for good and break every tool set up for the usual port.
        self.remember_box.setChecked(False)
        self.remember_box.setAccessibleName("Use this port from now on")
        note = QLabel(
            f"Tools set up for port {taken} need the new address: “Set up a tool” shows it."
        )
        note.setWordWrap(True)

        form = QFormLayout()
        form.addRow("Start on port:", self.port_box)
        form.addRow("", self.remember_box)

        buttons = QDialogButtonBox()
        self.start_button = buttons.addButton(
            "Start on this port", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.quit_button = buttons.addButton("Quit", QDialogButtonBox.ButtonRole.RejectRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(explanation)
        layout.addLayout(form)
        layout.addWidget(note)
        layout.addWidget(buttons)
        main_action(self, self.start_button)
        scroll_when_small(self)
        keep_wrapped_text_whole(self)

    def choice(self) -> PortChoice:
        return PortChoice(self.port_box.value(), self.remember_box.isChecked())


def failure_box(error: BaseException, parent: QWidget | None = None) -> QMessageBox:
    """Any other startup failure: what happened and what to do next; the app then ends."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Critical)
    box.setWindowTitle("SubLane could not start")
    box.setAccessibleName("SubLane could not start")
    kind = error.kind if isinstance(error, StartupError) else StartupError.OTHER
    text = (
        str(error)
        if isinstance(error, StartupError)
        else (f"could not start: {type(error).__name__}: {error}")
    )
    box.setText(text[:1].upper() + text[1:] + ".")
    box.setInformativeText(
        NEXT_STEPS.get(
            kind, "Start SubLane from a terminal (`sublane`) to see more, or report this problem."
        )
    )
    box.setStandardButtons(QMessageBox.StandardButton.Close)
    return box


async def ask(error: BaseException, host: str) -> PortChoice | None:
    """Show the right dialog and wait for the person (without blocking the loop).

    A port choice for a port in use; None when the app should end.
    """
    if isinstance(error, StartupError) and error.kind == StartupError.PORT_IN_USE:
        dialog: QDialog = PortInUseDialog(error, host)
    else:
        dialog = failure_box(error)
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def finished(result: int) -> None:
        if not done.done():
            done.set_result(result)

    dialog.finished.connect(finished)
    dialog.open()
    dialog.raise_()
    dialog.activateWindow()
    try:
        result = await done
    finally:
        dialog.hide()
        dialog.deleteLater()
    if isinstance(dialog, PortInUseDialog) and result == QDialog.DialogCode.Accepted.value:
        return dialog.choice()
    return None
