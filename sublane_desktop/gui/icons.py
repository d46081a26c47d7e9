"""QIcons for the app and for each pool health, loaded once; the tray icon with the tightest
percent on it (R-UI-12, setting `tray.icon_percent`).

The percent is painted as a small badge across the lower part of the health icon, so the shape
and colour still say the pool's health (R-UI-1) and the number says how close the tightest
window in use is to full, the way menu-bar usage meters show it.
"""

from __future__ import annotations

from functools import cache

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPixmap

from sublane_desktop.gui.pool_status import PoolHealth
from sublane_desktop.gui.resources import resource_path

# The sizes tray hosts ask for (16 px panels up to 64 px at 200 %).
ICON_SIZES = (16, 22, 24, 32, 48, 64)


@cache
def app_icon() -> QIcon:
    return QIcon(str(resource_path("sublane.svg")))


@cache
def health_icon(health: PoolHealth) -> QIcon:
    return QIcon(str(resource_path(health.icon_name)))


@cache
def percent_icon(health: PoolHealth, percent: int) -> QIcon:
    """The health icon with `percent` (0–100) on a dark badge with white digits: readable on
    light and dark panels alike, whatever the health colour under it."""
    base = health_icon(health)
    icon = QIcon()
    text = str(max(0, min(100, percent)))
    for size in ICON_SIZES:
        pixmap = base.pixmap(size, size)
        if pixmap.isNull():
            pixmap = QPixmap(size, size)
            pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        height = size * 0.5
        badge = QRectF(0, size - height, size, height)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(20, 20, 20, 225))
        painter.drawRoundedRect(badge, height * 0.3, height * 0.3)
        font = QFont()
        font.setBold(True)
        font.setPixelSize(max(6, int(height * (0.8 if len(text) < 3 else 0.68))))
        painter.setFont(font)
        painter.setPen(QColor(255, 255, 255))
        painter.drawText(badge, Qt.AlignmentFlag.AlignCenter, text)
        painter.end()
        icon.addPixmap(pixmap)
    return icon
