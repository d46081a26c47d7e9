"""A window's default size, remembered on the window (R-UI-10).

The layout audit (tools/layout_audit.py, a developer tool outside the package) reads it back to
check that the content fits the size the window really opens at.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, QTimer
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QLabel,
    QLayoutItem,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

DEFAULT_SIZE = "sublane_default_size"


def set_default_size(window: QWidget, width: int, height: int) -> None:
    """Size a window as it first opens, and remember that size so the audit can check the
    content fits it (Qt would otherwise silently grow a window to its layout's minimum)."""
    window.setProperty(DEFAULT_SIZE, QSize(width, height))
    if height <= 0:  # as tall as its content (its minimum may be less: scroll_when_small)
        height = window.sizeHint().height()
    window.resize(width, height)


class _WrappedTextFit(QObject):
    """Gives every word-wrapped label the height its text needs at the width it got.

    Qt sizes a window from its layout's minimum, which for a wrapped label in a QFormLayout
    (or below a row that grows) is one line: the sentence was cut at its second line at 200 %
    (Settings' port note, a request's cache-miss explanation, the keyring dialog)."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self._window = window

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if watched is self._window:
            if kind in (QEvent.Type.Show, QEvent.Type.Resize, QEvent.Type.LayoutRequest):
                for label in self._window.findChildren(QLabel):
                    self._fit(label)
        elif isinstance(watched, QLabel) and kind == QEvent.Type.Resize:
            _fit(watched)
        return False

    def _fit(self, label: QLabel) -> None:
        if label.wordWrap() and not label.property(_WATCHED):
            label.setProperty(_WATCHED, True)
            label.installEventFilter(self)  # its own width changes too
        _fit(label)


_WATCHED = "sublane_wrapped_fit"


def _fit(label: QLabel) -> None:
    if not label.wordWrap() or label.isHidden() or label.width() <= 0:
        return
    need = label.heightForWidth(label.width())
    if need > 0 and label.minimumHeight() != need:
        label.setMinimumHeight(need)


def keep_wrapped_text_whole(window: QWidget) -> None:
    """Call once a window is built: its wrapped labels then never show half a sentence."""
    window.installEventFilter(_WrappedTextFit(window))


class _Body(QScrollArea):
    """The scroll area a window's content lives in. Where the screen has room the window grows
    to show all of its content, as Qt grows a window to its layout's minimum; only where the
    screen is too small does the content scroll."""

    def sizeHint(self) -> QSize:
        # QScrollArea caps its hint at 36×24 lines: Settings would open with a scroll bar.
        content = self.widget()
        if content is None:
            return super().sizeHint()
        frame = 2 * self.frameWidth()
        return content.sizeHint().expandedTo(content.minimumSizeHint()) + QSize(frame, frame)

    def watch(self, window: QWidget) -> None:
        self._window = window
        window.installEventFilter(self)
        content = self.widget()
        if content is not None:
            content.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show and watched is self._window:
            content = self.widget()
            rows = content.layout() if content is not None else None
            if rows is not None:
                rows.activate()
            self.grow_window()  # opens whole, as a window without a scroll area would
            # Its scroll bars were judged at the size it was built at, before its default
            # size: judged again now, so it never opens with a stray scroll bar.
            QApplication.sendEvent(self, QEvent(QEvent.Type.LayoutRequest))
        if event.type() in (QEvent.Type.Show, QEvent.Type.LayoutRequest):
            QTimer.singleShot(0, self, self.grow_window)  # once the layout has settled
        return False

    def grow_window(self) -> None:
        """Make the window big enough for its content, as far as its screen allows, and keep
        it on that screen."""
        window, content = self._window, self.widget()
        if content is None or not window.isVisible():
            return
        need = content.minimumSizeHint()
        view = self.maximumViewportSize()  # as if no scroll bar took room
        if content.hasHeightForWidth():  # wrapped text: taller at this width than at ease
            need.setHeight(max(need.height(), content.heightForWidth(view.width())))
        size = window.size() + QSize(
            max(0, need.width() - view.width()), max(0, need.height() - view.height())
        )
        screen = window.screen()
        if screen is None:
            window.resize(size)
            return
        area = screen.availableGeometry()
        chrome = window.frameGeometry().size() - window.size()  # title bar, borders
        most = area.size() - chrome
        if size.height() > most.height():  # it will scroll down: room for the scroll bar
            size.setWidth(size.width() + self.verticalScrollBar().sizeHint().width())
        size = size.boundedTo(most)
        if size != window.size():
            window.resize(size)
        frame = window.frameGeometry()
        if not area.contains(frame):  # its frame only became known once it was shown
            x = max(area.left(), min(frame.left(), area.right() + 1 - frame.width()))
            y = max(area.top(), min(frame.top(), area.bottom() + 1 - frame.height()))
            window.move(x, y)


BODY = "window_body"


def scroll_when_small(window: QWidget) -> None:
    """Let a window shrink below its content on a small screen: the content scrolls instead.

    A window's minimum size is its layout's, and Qt will not make a window smaller than that:
    on a 1280×800 screen at 200 % (640×400 logical pixels) the Accounts window, the Requests
    window and Settings could not fit, their edges and buttons off-screen. Call once the
    window's layout is built: its content moves into a frameless scroll area (unchanged where
    there is room), and its last row (the dialog's buttons, the status line) stays below it,
    always in view."""
    inner = window.layout()
    if inner is None or window.findChild(QScrollArea, BODY) is not None:
        return
    content = QWidget()
    content.setLayout(inner)  # takes the layout and its widgets from the window
    footer: QLayoutItem | None = None
    if inner.count() > 1:
        last = inner.itemAt(inner.count() - 1)
        if last is not None and (last.layout() is not None or last.widget() is not None):
            footer = inner.takeAt(inner.count() - 1)
    body = _Body()
    body.setObjectName(BODY)
    body.setWidgetResizable(True)
    body.setFrameShape(QFrame.Shape.NoFrame)
    body.setWidget(content)
    body.watch(window)
    outer = QVBoxLayout(window)
    outer.setContentsMargins(0, 0, 0, 0)
    outer.setSpacing(0)
    outer.addWidget(body, 1)
    if footer is not None:
        margins = inner.contentsMargins()
        left, right, bottom = margins.left(), margins.right(), margins.bottom()
        row = QVBoxLayout()
        row.setContentsMargins(left, 0, right, bottom)
        moved = footer.widget()
        if moved is not None:
            row.addWidget(moved)  # addWidget, not addItem: the widget comes out to the window
        elif (rows := footer.layout()) is not None:
            row.addLayout(rows)
        outer.addLayout(row)
        inner.setContentsMargins(left, inner.contentsMargins().top(), right, inner.spacing())
