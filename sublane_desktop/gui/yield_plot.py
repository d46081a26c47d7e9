"""`sublane simulate --plot FILE.png`: utilization over time, painted with QPainter offscreen.

One panel per simulated account (rows) and policy (columns); in each panel the 5h, 7d and
Fable windows as lines from 0 to 100 %, days along the bottom. Painted on a QImage, so it needs
no display and no plotting library: PySide6 is already a dependency.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from sublane_desktop.core.simulation.metrics import RunResult

WINDOW_COLORS = {"five_hour": "#1f77b4", "seven_day": "#ff7f0e", "fable": "#9467bd"}
WINDOW_LABELS = {"five_hour": "5h", "seven_day": "7d", "fable": "Fable"}
PANEL_W, PANEL_H = 560, 150
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 56, 16, 28, 26
TITLE_H = 36
DAY = 86400.0


def _app() -> object:
    """A QGuiApplication for fonts; offscreen unless the caller chose a platform."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    return QGuiApplication.instance() or QGuiApplication(["sublane-simulate"])


def render(results: Sequence[RunResult], path: Path) -> None:
    """Write the PNG; raises OSError when it cannot be written."""
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPen, QPolygonF

    app = _app()  # held until painting is done: fonts live in it
    accounts = list(results[0].samples[0].utilization) if results and results[0].samples else []
    cols, rows = max(1, len(results)), max(1, len(accounts))
    cell_w = PANEL_W + MARGIN_L + MARGIN_R
    cell_h = PANEL_H + MARGIN_T + MARGIN_B
    image = QImage(cols * cell_w, TITLE_H + rows * cell_h, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    font = QFont()
    font.setPixelSize(12)
    painter.setFont(font)
    try:
        title = (
            f"Utilization per account and window — trace {results[0].trace}, seed {results[0].seed}"
            if results
            else "no results"
        )
        painter.setPen(QColor("black"))
        painter.drawText(
            QRectF(8, 6, image.width() - 16, TITLE_H - 8),
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
            title,
        )
        x_legend = image.width() - 220
        for i, (window, color) in enumerate(WINDOW_COLORS.items()):
            painter.setPen(QPen(QColor(color), 3))
            painter.drawLine(QPointF(x_legend + i * 70, 20), QPointF(x_legend + i * 70 + 18, 20))
            painter.setPen(QColor("black"))
            painter.drawText(QPointF(x_legend + i * 70 + 22, 24), WINDOW_LABELS[window])
        for col, result in enumerate(results):
            samples = result.samples
            if not samples:
                continue
            t0, t1 = samples[0].at, max(samples[-1].at, samples[0].at + 1.0)
            for row, account in enumerate(accounts):
                left = col * cell_w + MARGIN_L
                top = TITLE_H + row * cell_h + MARGIN_T
                frame = QRectF(left, top, PANEL_W, PANEL_H)
                painter.setPen(QColor("black"))
                painter.drawText(
                    QRectF(left, top - MARGIN_T + 4, PANEL_W, MARGIN_T - 6),
                    Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                    f"{result.policy} · {account}",
                )
                painter.setPen(QPen(QColor("#dddddd"), 1))
                for pct in (0.25, 0.5, 0.75):
                    y = top + PANEL_H * (1 - pct)
                    painter.drawLine(QPointF(left, y), QPointF(left + PANEL_W, y))
                painter.setPen(QColor("#555555"))
                for pct in (0.0, 0.5, 1.0):
                    y = top + PANEL_H * (1 - pct)
                    painter.drawText(
                        QRectF(left - MARGIN_L, y - 8, MARGIN_L - 6, 16),
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                        f"{pct:.0%}",
                    )
                days = int((t1 - t0) // DAY)
                for day in range(days + 1):
                    x = left + PANEL_W * (day * DAY) / (t1 - t0)
                    painter.drawText(
                        QRectF(x - 20, top + PANEL_H + 2, 40, MARGIN_B - 6),
                        Qt.AlignmentFlag.AlignCenter,
                        f"d{day}",
                    )
                for window, color in WINDOW_COLORS.items():
                    points = [
                        QPointF(
                            left + PANEL_W * (sample.at - t0) / (t1 - t0),
                            top
                            + PANEL_H
                            * (1 - min(1.0, sample.utilization[account].get(window, 0.0))),
                        )
                        for sample in samples
                    ]
                    painter.setPen(QPen(QColor(color), 1.5))
                    painter.drawPolyline(QPolygonF(points))
                painter.setPen(QPen(QColor("black"), 1))
                painter.drawRect(frame)
    finally:
        painter.end()
    if not image.save(str(path)):  # PNG: the CLI accepts only a .png name
        raise OSError(f"cannot write {path}")
    del app
