"""A window's default size, remembered on the window (R-UI-10).

The layout audit (tools/layout_audit.py, a developer tool outside the package) reads it back to
check that the content fits the size the window really opens at.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize
from PySide6.QtWidgets import QLabel, QWidget

DEFAULT_SIZE = "sublane_default_size"


def set_default_size(window: QWidget, width: int, height: int) -> None:
    """Size a window as it first opens, and remember that size so the audit can check the
    content fits it (Qt would otherwise silently grow a window to its layout's minimum)."""
    window.setProperty(DEFAULT_SIZE, QSize(width, height))
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
