"""Client keys (R-UI-4): list, create (the key is shown once, with a Copy button), revoke."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.colours import dim_text
from sublane_desktop.gui.dialogs.common import (
    ask_first,
    copy_button,
    error_label,
    main_action,
    secret_field,
    show_error,
)
from sublane_desktop.gui.sizing import (
    keep_wrapped_text_whole,
    scroll_when_small,
    set_default_size,
)

COLUMNS = ("Name", "Prefix", "User", "Group", "Created", "Status")


class ClientKeysDialog(QDialog):
    def __init__(self, bridge: Bridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.keys: list[dict[str, Any]] = []
        self.confirm_box: QMessageBox | None = None
        self.setWindowTitle("Client keys")

        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._selection_changed)

        self.name = QLineEdit()
        self.name.setPlaceholderText("name, e.g. laptop-claude-code")
        self.name.setAccessibleName("New key name")
        self.create_button = QPushButton("Create key")
        self.create_button.clicked.connect(self.create_key)
        self.revoke_button = QPushButton("Revoke…")
        self.revoke_button.setEnabled(False)
        self.revoke_button.clicked.connect(self.confirm_revoke)
        create_row = QHBoxLayout()
        create_row.addWidget(self.name, 1)
        create_row.addWidget(self.create_button)
        create_row.addSpacing(12)
        create_row.addWidget(self.revoke_button)

        self.new_key_label = QLabel("New key — copy it now, it is shown only once:")
        self.new_key, self.new_key_row = secret_field("New client key")  # masked (R-UI-10)
        self.new_key.setReadOnly(True)
        self.copy_button = QPushButton("Copy")
        copy_button(self.copy_button, self.new_key.text)
        key_row = QHBoxLayout()
        key_row.addWidget(self.new_key_row, 1)
        key_row.addWidget(self.copy_button)
        self._show_new_key("")

        self.error = error_label()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addLayout(create_row)
        layout.addWidget(self.new_key_label)
        layout.addLayout(key_row)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        main_action(self, self.create_button)  # Enter in the name box creates the key
        scroll_when_small(self)
        set_default_size(self, 640, 380)
        keep_wrapped_text_whole(self)

    def _show_new_key(self, key: str) -> None:
        self.new_key.setText(key)
        if not key:
            self.new_key.show_toggle.setChecked(False)  # the next key starts masked again
        for widget in (self.new_key_label, self.new_key_row, self.copy_button):
            widget.setVisible(bool(key))

    # list -------------------------------------------------------------------------------------

    def reload(self) -> None:
        reply = self._bridge.list_keys()
        if reply is not None:
            reply.done.connect(self._listed)
            reply.failed.connect(lambda message: show_error(self.error, message))

    def _listed(self, keys: Any) -> None:
        self.keys = list(keys or [])
        self.table.setRowCount(len(self.keys))
        for row, key in enumerate(self.keys):
            created = time.strftime("%Y-%m-%d %H:%M", time.localtime(key.get("created_at") or 0))
            cells = (
                key.get("name"),
                key.get("prefix", "") + "…",
                key.get("user"),
                key.get("group"),
                created,
                "Revoked" if key.get("revoked") else "Active",
            )
            for column, value in enumerate(cells):
                item = QTableWidgetItem(str(value or ""))
                if key.get("revoked"):
                    item.setForeground(dim_text(self.palette()))
                self.table.setItem(row, column, item)
        self._selection_changed()

    def selected_key(self) -> dict[str, Any] | None:
        rows = {i.row() for i in self.table.selectedIndexes()}
        return self.keys[rows.pop()] if len(rows) == 1 else None

    def _selection_changed(self) -> None:
        key = self.selected_key()
        self.revoke_button.setEnabled(key is not None and not key.get("revoked"))

    # create / revoke ----------------------------------------------------------------------------

    def create_key(self) -> None:
        show_error(self.error, "")
        name = self.name.text().strip()
        if not name:
            show_error(self.error, "give the key a name (the tool or machine that will use it)")
            return
        reply = self._bridge.create_key(name)
        if reply is None:
            return
        self.create_button.setEnabled(False)
        reply.done.connect(self._created)
        reply.failed.connect(self._failed)

    def _created(self, result: Any) -> None:
        self.create_button.setEnabled(True)
        _info, key = result
        self.name.clear()
        self._show_new_key(key)
        self.reload()

    def _failed(self, message: str) -> None:
        self.create_button.setEnabled(True)
        show_error(self.error, message)

    def confirm_revoke(self) -> None:
        key = self.selected_key()
        if key is None:
            return
        box = ask_first(
            self,
            "Revoke key",
            f"Revoke {key['name']} ({key['prefix']}…)? Tools using it are turned away from now"
            " on, and it cannot be used again.",
            "Revoke",
        )
        box.finished.connect(lambda result: self._revoke_answered(box, key["id"], result))
        self.confirm_box = box
        box.open()

    def _revoke_answered(self, box: QMessageBox, key_id: int, result: int) -> None:
        self.confirm_box = None
        box.deleteLater()
        if result != QMessageBox.StandardButton.Yes:
            return
        # A revoked key's secret must not stay on screen as if it were usable (issue 14).
        self._show_new_key("")
        reply = self._bridge.revoke_key(key_id)
        if reply is not None:
            reply.done.connect(lambda _: self.reload())
            reply.failed.connect(self._failed)

    # visibility -----------------------------------------------------------------------------------

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if not event.spontaneous():
            self.reload()

    def hideEvent(self, event: Any) -> None:
        self._show_new_key("")  # shown once: gone when the dialog closes
        super().hideEvent(event)
