"""Set up a tool…: the exact lines for Claude Code, Codex CLI and the SDKs, with copy buttons.

A client key is created for the tool on demand (service.create_key(name=<tool>)) and appears in
the lines; like every key it is shown only while this dialog is open.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.dialogs.common import (
    code_view,
    copy_button,
    error_label,
    main_action,
    show_error,
)
from sublane_desktop.gui.sizing import (
    keep_wrapped_text_whole,
    scroll_when_small,
    set_default_size,
)
from sublane_desktop.gui.tool_setup import TOOLS, Tool, snippets


class ToolPage(QWidget):
    keyCreated = Signal(str)  # a key made here, for the welcome window's test (fault 11)

    def __init__(self, bridge: Bridge, tool: Tool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.tool = tool
        self.key: str | None = None
        self.create_button = QPushButton(f"Create a key for {tool.title}")
        self.create_button.clicked.connect(self.create_key)
        self.key_note = QLabel("The lines below show a placeholder until you create a key.")
        self.key_note.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(self.create_button)
        top.addWidget(self.key_note, 1)
        self.error = error_label()

        self.views: list[QPlainTextEdit] = []
        self.copy_buttons: list[QPushButton] = []
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.error)
        for snippet in snippets(tool.id, bridge.endpoint_url(), None):
            view = code_view(snippet.text)
            view.setAccessibleName(snippet.title)
            copy = QPushButton("Copy")
            copy.setAccessibleName(f"Copy: {snippet.title}")
            copy_button(copy, view.toPlainText)
            header = QHBoxLayout()
            header.addWidget(QLabel(snippet.title), 1)
            header.addWidget(copy)
            layout.addLayout(header)
            layout.addWidget(view)
            self.views.append(view)
            self.copy_buttons.append(copy)
        layout.addStretch(1)

    def texts(self) -> list[str]:
        return [v.toPlainText() for v in self.views]

    def show_snippets(self) -> None:
        for view, snippet in zip(
            self.views, snippets(self.tool.id, self._bridge.endpoint_url(), self.key), strict=False
        ):
            view.setPlainText(snippet.text)

    def create_key(self) -> None:
        show_error(self.error, "")
        reply = self._bridge.create_key(self.tool.id)
        if reply is None:
            return
        self.create_button.setEnabled(False)
        reply.done.connect(self._created)
        reply.failed.connect(self._failed)

    def _created(self, result: Any) -> None:
        info, key = result
        self.create_button.setEnabled(True)
        self.use_key(
            key,
            f"Key {info.get('prefix', '')}… named {info.get('name')!r} "
            "is in the lines below. Copy them now: it is shown only once.",
        )
        self.keyCreated.emit(key)

    def use_key(self, key: str, note: str) -> None:
        self.key = key
        self.create_button.setText("Create another key")
        self.key_note.setText(note)
        self.show_snippets()

    def _failed(self, message: str) -> None:
        self.create_button.setEnabled(True)
        show_error(self.error, message)

    def forget_key(self) -> None:
        self.key = None
        self.create_button.setText(f"Create a key for {self.tool.title}")
        self.key_note.setText("The lines below show a placeholder until you create a key.")
        self.show_snippets()


class SetupToolDialog(QDialog):
    keyCreated = Signal(str)

    def __init__(self, bridge: Bridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Set up a tool")
        self.tabs = QTabWidget()
        self.pages: dict[str, ToolPage] = {}
        for tool in TOOLS:
            page = ToolPage(bridge, tool)
            page.keyCreated.connect(self.keyCreated)
            self.pages[tool.id] = page
            self.tabs.addTab(page, tool.title)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(buttons)
        main_action(self, None)  # nothing to submit: Enter must not press a Copy or Create
        scroll_when_small(self)
        keep_wrapped_text_whole(self)
        set_default_size(self, 640, 600)  # the Codex CLI tab: a config file and a variable

    def use_key(self, key: str) -> None:
        """The welcome window's key, already made: every tool's lines use it (fault 11)."""
        for page in self.pages.values():
            page.use_key(
                key,
                "The key you created in the welcome window is in the lines below. Copy them "
                "now: it is shown only while this window is open.",
            )

    def showEvent(self, event: Any) -> None:
        for page in self.pages.values():
            page.show_snippets()  # the endpoint may have changed since the dialog was built
        super().showEvent(event)

    def hideEvent(self, event: Any) -> None:
        for page in self.pages.values():
            page.forget_key()
        super().hideEvent(event)
