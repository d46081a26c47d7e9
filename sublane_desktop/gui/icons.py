"""QIcons for the app and for each pool health, loaded once."""

from __future__ import annotations

from functools import cache

from PySide6.QtGui import QIcon

from sublane_desktop.gui.pool_status import PoolHealth
from sublane_desktop.gui.resources import resource_path


@cache
def app_icon() -> QIcon:
    return QIcon(str(resource_path("sublane.svg")))


@cache
def health_icon(health: PoolHealth) -> QIcon:
    return QIcon(str(resource_path(health.icon_name)))
