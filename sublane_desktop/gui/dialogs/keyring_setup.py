"""No usable keyring (R-UI-8): say so, and offer the encrypted file keyring instead.

Creating asks for the password twice (a typo would lock the person out of their own secrets);
unlocking an existing file asks once. The service opens the file keyring and uses it at once,
so accounts, client keys and the management API work without a restart.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.dialogs.common import error_label, main_action, secret_field, show_error

MIN_PASSWORD = 8


class KeyringDialog(QDialog):
    opened = Signal(str)  # where the secrets now live

    def __init__(self, bridge: Bridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.creating = not bridge.keyring_file_exists()
        self.setWindowTitle("Set up a keyring" if self.creating else "Unlock the keyring")

        problem = bridge.keyring_problem() or "no usable keyring"
        self.problem_label = QLabel(f"SubLane cannot keep your credentials: {problem}")
        self.problem_label.setWordWrap(True)
        if self.creating:
            what = (
                "Create an encrypted keyring file instead. Choose a password; you will be "
                "asked for it each time SubLane starts."
            )
        else:
            what = "SubLane keeps your credentials in an encrypted file. Enter its password."
        self.explain = QLabel(what)
        self.explain.setWordWrap(True)

        self.password, password_row = secret_field("Password")
        self.confirm, confirm_row = secret_field("Password again")
        form = QFormLayout()
        form.addRow("Password:", password_row)
        form.addRow("Again:", confirm_row)
        form.setRowVisible(confirm_row, self.creating)  # unlocking asks once
        self.error = error_label()
        self.buttons = QDialogButtonBox()
        self.ok_button = self.buttons.addButton(
            "Create encrypted keyring" if self.creating else "Unlock",
            QDialogButtonBox.ButtonRole.AcceptRole,
        )
        self.cancel_button = self.buttons.addButton(
            "Not now", QDialogButtonBox.ButtonRole.RejectRole
        )
        self.buttons.accepted.connect(self.submit)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(self.problem_label)
        layout.addWidget(self.explain)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addStretch(1)
        layout.addWidget(self.buttons)
        main_action(self, self.ok_button)
        self.resize(self.sizeHint().expandedTo(self.minimumSizeHint()))

    def submit(self) -> None:
        password = self.password.text()
        if len(password) < MIN_PASSWORD:
            show_error(self.error, f"Choose a password of at least {MIN_PASSWORD} characters.")
            return
        if self.creating and password != self.confirm.text():
            show_error(self.error, "The two passwords differ; type them again.")
            self.confirm.clear()
            return
        show_error(self.error, "")
        reply = self._bridge.open_file_keyring(password, create=self.creating)
        if reply is None:
            show_error(self.error, "This version of SubLane cannot open a file keyring.")
            return
        self.ok_button.setEnabled(False)
        reply.done.connect(self._opened)
        reply.failed.connect(self._failed)

    def _opened(self, where: object) -> None:
        self.password.clear()
        self.confirm.clear()
        self.ok_button.setEnabled(True)
        self.opened.emit(str(where))
        self.accept()

    def _failed(self, message: str) -> None:
        self.ok_button.setEnabled(True)
        self.password.clear()
        self.confirm.clear()
        show_error(self.error, f"Could not open the keyring: {message}")
