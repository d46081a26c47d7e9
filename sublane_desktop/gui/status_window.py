"""A small window with the endpoint and the accounts: the whole UI when there is no tray."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent, QGuiApplication
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.icons import app_icon
from sublane_desktop.gui.pool_status import account_line


class StatusWindow(QWidget):
    def __init__(
        self, bridge: Bridge, *, quit_on_close: bool, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        # Without a tray this window is the only way back in, so closing it must quit;
        # with a tray, closing only hides it (R-UI-5: a window never stops the proxy).
        self.quit_on_close = quit_on_close
        self.setWindowTitle("SubLane")
        self.setWindowIcon(app_icon())

        self.endpoint = QLineEdit(bridge.endpoint_url())
        self.endpoint.setReadOnly(True)
        self.copy_button = QPushButton("Copy")
        self.copy_button.clicked.connect(self.copy_endpoint_url)
        endpoint_row = QHBoxLayout()
        endpoint_row.addWidget(QLabel("Endpoint:"))
        endpoint_row.addWidget(self.endpoint, 1)
        endpoint_row.addWidget(self.copy_button)

        self.accounts = QListWidget()
        self.accounts.setSelectionMode(QListWidget.SelectionMode.NoSelection)

        self.quit_button = QPushButton("Quit")
        self.quit_button.clicked.connect(bridge.request_quit)
        bottom_row = QHBoxLayout()
        bottom_row.addStretch(1)
        bottom_row.addWidget(self.quit_button)

        layout = QVBoxLayout(self)
        layout.addLayout(endpoint_row)
        layout.addWidget(QLabel("Accounts:"))
        layout.addWidget(self.accounts, 1)
        layout.addLayout(bottom_row)
        self.resize(420, 300)

        bridge.accountsChanged.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        self.endpoint.setText(self._bridge.endpoint_url())
        self.accounts.clear()
        accounts = self._bridge.accounts()
        if not accounts:
            placeholder = QListWidgetItem("No accounts yet")
            placeholder.setFlags(Qt.ItemFlag.NoItemFlags)
            self.accounts.addItem(placeholder)
        for account in accounts:
            item = QListWidgetItem(account_line(account))
            if account.get("current"):
                font = item.font()
                font.setBold(True)
                item.setFont(font)
            self.accounts.addItem(item)

    def account_lines(self) -> list[str]:
        return [self.accounts.item(i).text() for i in range(self.accounts.count())]

    def copy_endpoint_url(self) -> None:
        QGuiApplication.clipboard().setText(self._bridge.endpoint_url())

    def show_and_raise(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt override)
        if self.quit_on_close:
            event.accept()
            self._bridge.request_quit()
        else:
            event.ignore()
            self.hide()
