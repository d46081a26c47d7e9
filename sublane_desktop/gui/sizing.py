"""A window's default size, remembered on the window (R-UI-10).

The layout audit (tools/layout_audit.py, a developer tool outside the package) reads it back to
check that the content fits the size the window really opens at.
"""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QWidget

DEFAULT_SIZE = "sublane_default_size"


def set_default_size(window: QWidget, width: int, height: int) -> None:
    """Size a window as it first opens, and remember that size so the audit can check the
    content fits it (Qt would otherwise silently grow a window to its layout's minimum)."""
    window.setProperty(DEFAULT_SIZE, QSize(width, height))
    window.resize(width, height)
