"""Painted rows of the tray menu (R-UI-6): an account's row and the window lines of its submenu.

Each row is the default widget of a QWidgetAction. The action keeps the row's plain text too,
because desktop menu bridges (the D-Bus StatusNotifier menus of KDE/GNOME) show only text.
Hovering a row makes it the menu's active action, which opens its submenu as for any item.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QEnterEvent,
    QFont,
    QFontMetrics,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPalette,
)
from PySide6.QtWidgets import QMenu, QSizePolicy, QWidget, QWidgetAction

from sublane_desktop.gui.colours import (
    dim_text,
    fill_colour,
    tone_colour,
    track_colour,
    with_alpha,
)
from sublane_desktop.gui.dashboard import AccountRow, WindowLine
from sublane_desktop.gui.pool_status import Tone

BAR_EM = 5.0  # bar length in font heights
BAR_HEIGHT_EM = 0.45
PAD = 8


def _bar(
    painter: QPainter, rect: QRect, line: WindowLine, palette: QPalette, active: bool = False
) -> None:
    barf = QRectF(rect).adjusted(0.5, 0.5, -0.5, -0.5)
    radius = barf.height() / 2
    mid = palette.color(QPalette.ColorRole.Mid)
    painter.setPen(Qt.PenStyle.NoPen)
    if line.fraction is None:
        painter.setBrush(with_alpha(mid, 60))
        painter.drawRoundedRect(barf, radius, radius)
        return
    painter.setBrush(track_colour(palette))
    painter.drawRoundedRect(barf, radius, radius)
    fill = (
        fill_colour(palette.color(QPalette.ColorRole.Highlight), palette)
        if line.tone is Tone.OK
        else tone_colour(line.tone, palette)
    )
    if active and line.tone is Tone.OK:  # on the highlighted row the highlight would vanish
        fill = palette.color(QPalette.ColorRole.HighlightedText)
    if line.stale:
        fill = with_alpha(fill, 110)
    width = barf.width() * line.fraction
    if width > 0:
        painter.setBrush(fill)
        painter.drawRoundedRect(
            QRectF(barf.left(), barf.top(), max(width, 2 * radius), barf.height()), radius, radius
        )


class _Row(QWidget):
    """Shared look: highlight when it is the menu's active item, like a normal menu item."""

    def __init__(self, menu: QMenu) -> None:
        super().__init__()
        self._menu = menu
        self.action: QWidgetAction | None = None
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMouseTracking(True)

    def _active(self) -> bool:
        return self.action is not None and self._menu.activeAction() is self.action

    def _paint_background(self, painter: QPainter) -> QPalette:
        palette = self.palette()
        if self._active():
            painter.fillRect(self.rect(), palette.color(QPalette.ColorRole.Highlight))
        return palette

    def _text_colour(self, palette: QPalette) -> QColor:
        role = QPalette.ColorRole.HighlightedText if self._active() else QPalette.ColorRole.Text
        return palette.color(role)


class AccountRowWidget(_Row):
    """glyph · name · marks ............ [bar] 37% · 2h 14m ▸"""

    def __init__(self, menu: QMenu, row: AccountRow) -> None:
        super().__init__(menu)
        self.row = row
        self.setAccessibleName(row.text)

    def set_row(self, row: AccountRow) -> None:
        self.row = row
        self.setAccessibleName(row.text)
        self.update()

    def _tail(self) -> str:
        line = self.row.tightest
        if line is None:
            return self.row.note or ""
        tail = f"{line.label} {line.percent}"
        if line.reset:
            tail += " · " + line.reset.removeprefix("resets in ")
        return tail

    def _head(self) -> str:
        head = self.row.name
        if self.row.marks:
            head += "  " + " · ".join(self.row.marks)
        return head

    def sizeHint(self) -> QSize:
        fm = self.fontMetrics()
        em = fm.height()
        width = (
            PAD
            + fm.horizontalAdvance("● ")
            + fm.horizontalAdvance(self._head())
            + em
            + int(BAR_EM * em)
            + fm.horizontalAdvance("  " + self._tail())
            + em
            + PAD
        )
        return QSize(max(width, 18 * em), int(em * 1.7))

    def enterEvent(self, event: QEnterEvent) -> None:
        if self.action is not None:
            self._menu.setActiveAction(self.action)  # opens the submenu, as hovering any item
        self.update()
        super().enterEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self.action is not None:
            self._menu.setActiveAction(self.action)
        event.accept()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self._paint_background(painter)
        text = self._text_colour(palette)
        fm = self.fontMetrics()
        em = fm.height()
        h = self.height()
        x = PAD
        glyph_w = fm.horizontalAdvance("● ")
        painter.setPen(tone_colour(self.row.glyph_tone, palette))
        painter.drawText(QRect(x, 0, glyph_w, h), Qt.AlignmentFlag.AlignVCenter, self.row.glyph)
        x += glyph_w
        arrow_w = em
        tail = self._tail()
        tail_w = fm.horizontalAdvance("  " + tail)
        bar_w = int(BAR_EM * em) if self.row.tightest is not None else 0
        right = self.width() - PAD - arrow_w
        name_w = max(0, right - tail_w - bar_w - em // 2 - x)
        font = QFont(self.font())
        font.setBold("current" in self.row.marks)
        painter.setFont(font)
        painter.setPen(text)
        name = QFontMetrics(font).elidedText(
            self.row.name, Qt.TextElideMode.ElideRight, max(0, name_w)
        )
        painter.drawText(QRect(x, 0, name_w, h), Qt.AlignmentFlag.AlignVCenter, name)
        used = painter.fontMetrics().horizontalAdvance(name)
        painter.setFont(self.font())
        if self.row.marks and used + em < name_w:
            marks = fm.elidedText(
                "  " + " · ".join(self.row.marks), Qt.TextElideMode.ElideRight, name_w - used
            )
            painter.setPen(dim_text(palette) if not self._active() else text)
            painter.drawText(
                QRect(x + used, 0, name_w - used, h), Qt.AlignmentFlag.AlignVCenter, marks
            )
        if self.row.tightest is not None:
            bar_h = max(4, int(em * BAR_HEIGHT_EM))
            bar_x = right - tail_w - bar_w
            _bar(
                painter,
                QRect(bar_x, (h - bar_h) // 2, bar_w, bar_h),
                self.row.tightest,
                palette,
                self._active(),
            )
        painter.setPen(text if self.row.tightest is not None else dim_text(palette))
        painter.drawText(
            QRect(right - tail_w, 0, tail_w, h),
            Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
            tail,
        )
        painter.setPen(text)
        painter.drawText(QRect(right, 0, arrow_w, h), Qt.AlignmentFlag.AlignCenter, "▸")
        painter.end()


class WindowLineWidget(_Row):
    """5h [bar] 37% · resets in 2h 14m, and the forecast under it when there is one."""

    def __init__(self, menu: QMenu, line: WindowLine) -> None:
        super().__init__(menu)
        self.line = line
        self.setAccessibleName(line.text)
        self.setEnabled(True)

    def _caption(self) -> str:
        caption = self.line.percent
        if self.line.reset:
            caption += " · " + self.line.reset
        if self.line.stale and self.line.fraction is not None:
            caption += " · stale"
        if self.line.fraction is None:
            caption = "no data yet"
        return caption

    def sizeHint(self) -> QSize:
        fm = self.fontMetrics()
        em = fm.height()
        label_w = fm.horizontalAdvance("Gemini Flash") + em // 2
        width = (
            PAD + label_w + int(BAR_EM * em) + em // 2 + fm.horizontalAdvance(self._caption()) + PAD
        )
        if self.line.forecast:
            width = max(width, PAD + label_w + fm.horizontalAdvance(self.line.forecast) + PAD)
        lines = 2 if self.line.forecast else 1
        return QSize(width, int(em * (1.5 + 1.1 * (lines - 1))))

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        fm = self.fontMetrics()
        em = fm.height()
        line_h = int(em * 1.5)
        label_w = fm.horizontalAdvance("Gemini Flash") + em // 2
        x = PAD
        painter.setPen(palette.color(QPalette.ColorRole.Text))
        painter.drawText(
            QRect(x, 0, label_w, line_h), Qt.AlignmentFlag.AlignVCenter, self.line.label
        )
        x += label_w
        bar_w = int(BAR_EM * em)
        bar_h = max(4, int(em * BAR_HEIGHT_EM))
        _bar(painter, QRect(x, (line_h - bar_h) // 2, bar_w, bar_h), self.line, palette)
        x += bar_w + em // 2
        painter.setPen(
            palette.color(QPalette.ColorRole.Text)
            if self.line.fraction is not None
            else dim_text(palette)
        )
        painter.drawText(
            QRect(x, 0, self.width() - x - PAD, line_h),
            Qt.AlignmentFlag.AlignVCenter,
            self._caption(),
        )
        if self.line.forecast:
            painter.setPen(tone_colour(Tone.WARN, palette))
            painter.drawText(
                QRect(PAD + label_w, line_h - em // 5, self.width(), em),
                Qt.AlignmentFlag.AlignVCenter,
                self.line.forecast,
            )
        painter.end()


def row_action(menu: QMenu, widget: _Row, text: str) -> QWidgetAction:
    action = QWidgetAction(menu)
    action.setDefaultWidget(widget)
    action.setText(text)  # what menu bridges and screen readers get
    widget.action = action
    return action
