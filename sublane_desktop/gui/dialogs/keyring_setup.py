"""No usable keyring (R-UI-8): say so, and offer the encrypted file keyring instead.

Creating asks for the password twice (a typo would lock the person out of their own secrets);
unlocking an existing file asks once. The service opens the file keyring and uses it at once,
so accounts, client keys and the management API work without a restart.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.accounts.secrets import (
    ENCRYPTED_FILE,
    FILE,
    OWN_FILE,
    PLAIN_FILE,
    SYSTEM,
    SecretHome,
)
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.dialogs.common import error_label, main_action, secret_field, show_error
from sublane_desktop.gui.sizing import keep_wrapped_text_whole, scroll_when_small

MIN_PASSWORD = 8


def keyring_words(problem: str | None) -> str:
    """What is wrong with the keyring in a person's words (R-UI-16). The service's text names
    keyring's backend classes and environment variables, which help in a terminal but not
    here: the dialog keeps it behind Details."""
    if problem and "did not answer" in problem:
        return (
            "Your system keyring did not answer: it may be locked or waiting for you to unlock it."
        )
    return (
        "This computer has no system keyring (a password store) that SubLane can use to keep "
        "your sign-ins and keys safe."
    )


# Where a secret really goes, in words (the no-keyring dialog's choice, keyring's settings or the
# desktop's store); never a backend's class name (R-UI-16).
_HOMES = {
    SYSTEM: "your system keyring",
    OWN_FILE: "SubLane's encrypted keyring file",
    ENCRYPTED_FILE: "an encrypted keyring file (chosen in your keyring settings)",
    PLAIN_FILE: "an unencrypted keyring file (chosen in your keyring settings)",
    FILE: "a keyring file (chosen in your keyring settings)",
}


def secret_home_words(home: SecretHome | None) -> str:
    """The sentence Add account shows under its fields."""
    if home is None:
        return "No keyring is open, so no secret can be kept yet: set up a keyring first."
    where = _HOMES.get(home.kind, _HOMES[FILE])
    return f"The secret goes to {where}, never to SubLane's database."


class KeyringDialog(QDialog):
    opened = Signal(str)  # where the secrets now live

    def __init__(self, bridge: Bridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.creating = not bridge.keyring_file_exists()
        self.setWindowTitle("Set up a keyring" if self.creating else "Unlock the keyring")

        problem = bridge.keyring_problem() or "no usable keyring"
        self.problem_label = QLabel(keyring_words(problem))
        self.problem_label.setWordWrap(True)
        # The technical reason, for whoever needs it (a bug report, a terminal set-up).
        self.details_button = QToolButton()
        self.details_button.setText("Details")
        self.details_button.setCheckable(True)
        self.details_button.setAccessibleName("Show the technical details")
        self.details = QLabel(problem)
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.hide()
        self.details_button.toggled.connect(self._show_details)
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
        layout.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.details)
        layout.addWidget(self.explain)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addStretch(1)
        layout.addWidget(self.buttons)
        main_action(self, self.ok_button)
        # Wrapped words need a width to be measured against: without one the dialog opened
        # at its labels' one-line width and cut the sentences off (issue 25, fault 6).
        for label in (self.problem_label, self.explain, self.details):
            label.setMinimumWidth(label.fontMetrics().averageCharWidth() * 56)
        scroll_when_small(self)
        keep_wrapped_text_whole(self)
        self.adjustSize()

    def _show_details(self, shown: bool) -> None:
        self.details.setVisible(shown)
        self.details_button.setText("Hide details" if shown else "Details")
        self.adjustSize()

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
