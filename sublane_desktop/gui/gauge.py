"""One quota gauge drawn as a bar: label, fill, ceiling tick and a caption with the countdown.

Looks (R-UI-2): a cold gauge is unknown, not empty — a hatched track with a dashed outline and
"no data yet"; a stale reading is dimmed; at or above its ceiling the fill turns to the warning
colour, at 100% to the alarm colour. All the words come from pool_status.gauge_caption.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from PySide6.QtCore import QRect, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from sublane_desktop.gui.colours import (
    dim_text,
    fill_colour,
    tone_colour,
    track_colour,
    with_alpha,
)
from sublane_desktop.gui.pool_status import Tone, gauge_caption

BAR_HEIGHT = 8
STALE_ALPHA = 90
CAPTION_SAMPLE = "100% · resets in 23h 59m · stale"


class GaugeLook(StrEnum):
    COLD = "cold"
    NORMAL = "normal"
    WARN = "warn"  # at or above the ceiling
    FULL = "full"  # 100% or more


def gauge_look(gauge: Mapping[str, Any] | None, ceiling: float) -> GaugeLook:
    if not gauge or gauge.get("cold") or gauge.get("utilization") is None:
        return GaugeLook.COLD
    value = float(gauge["utilization"])
    if value >= 1.0:
        return GaugeLook.FULL
    if value >= ceiling:
        return GaugeLook.WARN
    return GaugeLook.NORMAL


class GaugeBar(QWidget):
    def __init__(self, label: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = label
        self.gauge: Mapping[str, Any] | None = None
        self.ceiling = 1.0
        self.now = 0.0
        self.look = GaugeLook.COLD
        self.stale = False
        self.caption = gauge_caption(None, 0.0)
        self.label_width = 0  # set by the window so bars line up across rows and cards
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_reading(self, gauge: Mapping[str, Any] | None, ceiling: float, now: float) -> None:
        caption = gauge_caption(gauge, now)
        look = gauge_look(gauge, ceiling)
        stale = bool(gauge and gauge.get("stale") and look is not GaugeLook.COLD)
        if (gauge, ceiling, caption, look, stale) == (
            self.gauge,
            self.ceiling,
            self.caption,
            self.look,
            self.stale,
        ):
            return
        self.gauge, self.ceiling, self.now = gauge, ceiling, now
        self.caption, self.look, self.stale = caption, look, stale
        self.setToolTip(
            f"{self.label}: {caption} (from {round(ceiling * 100)}% new conversations go to"
            " another account: Settings, Move on at)"
        )
        self.update()

    @property
    def fraction(self) -> float:
        if self.look is GaugeLook.COLD or self.gauge is None:
            return 0.0
        return max(0.0, min(1.0, float(self.gauge["utilization"])))

    # geometry -------------------------------------------------------------------------------

    def natural_label_width(self) -> int:
        """Room for this gauge's own label: "Gemini Flash" was cut to "Gemir" in a column
        sized for "Fable" (issue 25, fault 6)."""
        fm = self.fontMetrics()
        return max(fm.horizontalAdvance("Fable"), fm.horizontalAdvance(self.label)) + 10

    def set_label_width(self, width: int) -> None:
        """Align this bar with others (the widest label of them all)."""
        if width != self.label_width:
            self.label_width = width
            self.updateGeometry()
            self.update()

    def _label_width(self) -> int:
        return max(self.label_width, self.natural_label_width())

    def _caption_width(self) -> int:
        return self.fontMetrics().horizontalAdvance(CAPTION_SAMPLE) + 10

    def bar_rect(self) -> QRect:
        left = self._label_width()
        width = max(20, self.width() - left - self._caption_width())
        height = min(BAR_HEIGHT, self.height() - 2)
        return QRect(left, (self.height() - height) // 2, width, height)

    def sizeHint(self) -> QSize:
        fm = self.fontMetrics()
        return QSize(self._label_width() + 160 + self._caption_width(), fm.height() + 4)

    def minimumSizeHint(self) -> QSize:
        return QSize(
            self._label_width() + 60 + self._caption_width(), self.fontMetrics().height() + 2
        )

    # painting -------------------------------------------------------------------------------

    def paintEvent(self, event: QPaintEvent) -> None:
        palette = self.palette()
        text = palette.color(QPalette.ColorRole.WindowText)
        dim = dim_text(palette)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        bar = self.bar_rect()
        barf = QRectF(bar).adjusted(0.5, 0.5, -0.5, -0.5)
        radius = bar.height() / 2

        painter.setPen(text)
        painter.drawText(
            QRect(0, 0, bar.left() - 4, self.height()),
            Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
            self.label,
        )

        if self.look is GaugeLook.COLD:
            # The track colour, not the palette's Mid: in a dark GTK theme Mid is about the
            # window's own grey and the hatching vanished (third newcomer pass, Adwaita-dark).
            track = track_colour(palette)
            painter.setPen(QPen(track, 1, Qt.PenStyle.DashLine))
            painter.setBrush(QBrush(track, Qt.BrushStyle.BDiagPattern))
            painter.drawRoundedRect(barf, radius, radius)
        else:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(track_colour(palette))
            painter.drawRoundedRect(barf, radius, radius)
            fill = {
                GaugeLook.NORMAL: fill_colour(palette.color(QPalette.ColorRole.Highlight), palette),
                GaugeLook.WARN: tone_colour(Tone.WARN, palette),
                GaugeLook.FULL: tone_colour(Tone.BAD, palette),
            }[self.look]
            if self.stale:
                fill = with_alpha(fill, STALE_ALPHA)
            width = barf.width() * self.fraction
            if width > 0:
                painter.setBrush(fill)
                painter.drawRoundedRect(
                    QRectF(barf.left(), barf.top(), max(width, radius * 2), barf.height()),
                    radius,
                    radius,
                )
            if 0 < self.ceiling < 1:  # where preemptive exclusion starts
                x = barf.left() + barf.width() * self.ceiling
                painter.setPen(QPen(with_alpha(text, 140), 1))
                painter.drawLine(int(x), bar.top() - 2, int(x), bar.bottom() + 2)

        caption_rect = QRect(bar.right() + 8, 0, self.width() - bar.right() - 8, self.height())
        painter.setPen(dim if self.look is GaugeLook.COLD or self.stale else text)
        caption = self.fontMetrics().elidedText(
            self.caption, Qt.TextElideMode.ElideRight, caption_rect.width()
        )
        painter.drawText(
            caption_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, caption
        )
        painter.end()
