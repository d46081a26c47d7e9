"""Usage history (R-UI-11): an account's window utilization over the last 7 days, painted.

QtCharts ships only in PySide6-Addons, which the app does not depend on, so the chart is a
plain QPainter widget: a 0–100 % axis, one line per window (5h / 7d / Fable, or whatever gauges
the account has), day ticks, and a legend. A drop in a line is a window reset.

The time axis starts at the oldest reading of the last 7 days, not always 7 days back: a new
account's first hours used to be one dot at the right edge (issue 25, fault 13).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from PySide6.QtCore import QPointF, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from sublane_desktop.gui.colours import dim_text, with_alpha
from sublane_desktop.gui.pool_status import window_label

DAYS = 7
SPAN_S = DAYS * 86400.0
# The shortest time axis: a few readings 5 minutes apart still spread across the chart.
MIN_SPAN_S = 3 * 3600.0
# Distinct hues that read on light and dark backgrounds.
LINE_COLOURS = [
    QColor(52, 120, 246),
    QColor(201, 138, 27),
    QColor(170, 80, 200),
    QColor(46, 139, 87),
    QColor(196, 70, 61),
]

Series = Mapping[str, Sequence[tuple[float, float]]]


class UsageChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.series: dict[str, list[tuple[float, float]]] = {}
        self.windows: tuple[str, ...] = ()
        self.now = time.time()
        self.loaded = False
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Usage over the last 7 days")

    def set_history(self, series: Series, windows: Sequence[str], now: float) -> None:
        self.series = {w: sorted(series.get(w, ())) for w in windows}
        self.windows = tuple(windows)
        self.now = now
        self.loaded = True
        points = sum(len(v) for v in self.series.values())
        self.setAccessibleDescription(
            f"{points} readings over 7 days for " + ", ".join(window_label(w) for w in windows)
        )
        self.update()

    def sizeHint(self) -> QSize:
        em = self.fontMetrics().height()
        return QSize(24 * em, 12 * em)

    def minimumSizeHint(self) -> QSize:
        em = self.fontMetrics().height()
        return QSize(12 * em, 12 * em)  # a plot 9 lines of text tall: lines apart, readable

    def span(self) -> float:
        """Seconds the time axis covers: back to the oldest reading, within MIN_SPAN_S..7 days."""
        times = [t for points in self.series.values() for t, _ in points]
        times = [t for t in times if t >= self.now - SPAN_S]
        if not times:
            return SPAN_S
        return max(MIN_SPAN_S, min(SPAN_S, self.now - min(times)))

    def span_words(self) -> str:
        span = self.span()
        if span >= SPAN_S:
            return "7 days ago → now"
        start = time.localtime(self.now - span)
        if span < 86400:
            return time.strftime("since %H:%M → now", start)
        return time.strftime("since %a %H:%M → now", start)

    def plot_rect(self) -> QRect:
        fm = self.fontMetrics()
        em = fm.height()
        left = fm.horizontalAdvance("100%") + em // 2
        return QRect(
            left,
            em // 2,
            max(10, self.width() - left - em // 2),
            max(10, self.height() - 2 * em - em // 2 - em // 2),
        )

    def point_at(self, t: float, u: float) -> QPointF:
        plot = QRectF(self.plot_rect())
        span = self.span()
        x = plot.left() + plot.width() * (t - (self.now - span)) / span
        y = plot.bottom() - plot.height() * max(0.0, min(1.0, u))
        return QPointF(x, y)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        text = palette.color(QPalette.ColorRole.WindowText)
        dim = dim_text(palette)
        fm = self.fontMetrics()
        em = fm.height()
        plot = self.plot_rect()

        painter.setPen(QPen(with_alpha(dim, 90), 1))
        for frac in (0.0, 0.5, 1.0):
            y = int(plot.bottom() - plot.height() * frac)
            painter.drawLine(plot.left(), y, plot.right(), y)
            painter.setPen(dim)
            painter.drawText(
                QRect(0, y - em // 2, plot.left() - 4, em),
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                f"{round(frac * 100)}%",
            )
            painter.setPen(QPen(with_alpha(dim, 90), 1))
        span = self.span()
        step = 86400.0 if span > 86400 else 3600.0  # day ticks, or hour ticks within a day
        tick = self.now
        while tick >= self.now - span:
            x = int(self.point_at(tick, 0).x())
            painter.drawLine(x, plot.bottom(), x, plot.bottom() + 3)
            tick -= step

        any_points = False
        for index, window in enumerate(self.windows):
            points = self.series.get(window) or []
            points = [(t, u) for t, u in points if t >= self.now - SPAN_S]
            if not points:
                continue
            any_points = True
            colour = LINE_COLOURS[index % len(LINE_COLOURS)]
            path = QPainterPath(self.point_at(*points[0]))
            for t, u in points[1:]:
                path.lineTo(self.point_at(t, u))
            painter.setPen(QPen(colour, 1.5))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawPath(path)
            if len(points) == 1:
                painter.setBrush(colour)
                painter.drawEllipse(self.point_at(*points[0]), 2.0, 2.0)

        if not any_points:
            painter.setPen(dim)
            painter.drawText(
                plot,
                Qt.AlignmentFlag.AlignCenter,
                "loading…" if not self.loaded else "no readings in the last 7 days",
            )

        # legend and time axis caption on the bottom line
        y = plot.bottom() + 4
        x = plot.left()
        for index, window in enumerate(self.windows):
            colour = LINE_COLOURS[index % len(LINE_COLOURS)]
            painter.setPen(QPen(colour, 2))
            painter.drawLine(x, y + em // 2 + 2, x + em, y + em // 2 + 2)
            x += em + 4
            label = window_label(window)
            painter.setPen(text)
            painter.drawText(
                QRect(x, y, fm.horizontalAdvance(label) + 2, em + 4),
                Qt.AlignmentFlag.AlignVCenter,
                label,
            )
            x += fm.horizontalAdvance(label) + em
        painter.setPen(dim)
        painter.drawText(
            QRect(x, y, plot.right() - x, em + 4),
            Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
            self.span_words(),
        )
        painter.end()
