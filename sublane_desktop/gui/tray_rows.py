"""Painted rows of the tray menu (R-UI-6, R-UI-12): one per account, every window inline.

    ● work  current for Claude                      Cooling until 14:05 · 4m 12s ▸
        5h     [██████░░░░░░]  37%  resets in 2h 14m
        7d     [█░░░░░░░░░░░]   9%  resets in 4d 2h
        Fable  [░░░░░░░░░░░░]   2%  resets in 4d 2h

Each row is the default widget of a QWidgetAction whose submenu holds only levers, so the
window lines are neither keyboard stops nor a strip of submenu the pointer must cross. The
columns (label, bar, percent) are shared by every row of the menu, so bars line up. The action
keeps the row's plain text too, because desktop menu bridges (the D-Bus StatusNotifier menus of
KDE/GNOME) show only text.

Hovering is left to QMenu: it opens a row's submenu after its popup delay and keeps it open
while the pointer heads for it across other rows (Qt's "sloppy" submenus). A row that made
itself the active action on `enterEvent` opened the next row's submenu the instant the pointer
crossed it, and the first row's by itself when the menu appeared under the pointer (fault 2,
fault 17). Clicks are QMenu's too (the row leaves them unhandled, so they reach the menu): a
row that opened its levers on any mouse release took the release of the very click on the tray
icon that opened the menu, which lands on the row under the pointer, so the first submenu opened
by itself and, made active from outside QMenu's hover logic, closed as soon as the pointer
headed into it (seen on a real X server with a tray host; QMenu ignores a release whose press
it did not see).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from PySide6.QtCore import QRect, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QEnterEvent,
    QFont,
    QFontMetrics,
    QPainter,
    QPaintEvent,
    QPalette,
)
from PySide6.QtWidgets import (
    QMenu,
    QSizePolicy,
    QStyle,
    QStyleOptionMenuItem,
    QWidget,
    QWidgetAction,
)

from sublane_desktop.gui.colours import (
    dim_text,
    fill_colour,
    on_highlight,
    tone_colour,
    track_colour,
    with_alpha,
)
from sublane_desktop.gui.dashboard import AccountRow, WindowLine
from sublane_desktop.gui.pool_status import Tone

BAR_EM = 6.0  # bar length in font heights
BAR_HEIGHT_EM = 0.45
PAD = 8
HEAD_EM = 1.6  # the name line's height, in font heights
LINE_EM = 1.3  # each window line's height
PERCENT_SAMPLE = "100%"


@dataclass(frozen=True)
class Columns:
    """Where every row of one menu puts its window label, bar and percent (pixels)."""

    indent: int
    label: int
    bar: int
    percent: int

    @classmethod
    def for_rows(cls, rows: Iterable[AccountRow], fm: QFontMetrics) -> Columns:
        em = fm.height()
        labels = [w.label for row in rows for w in row.windows] or ["5h"]
        return cls(
            indent=PAD + fm.horizontalAdvance("● "),
            label=max(fm.horizontalAdvance(label) for label in labels) + em // 2,
            bar=int(BAR_EM * em),
            percent=fm.horizontalAdvance(PERCENT_SAMPLE) + em,
        )


def _bar(painter: QPainter, rect: QRect, line: WindowLine, palette: QPalette, muted: bool) -> None:
    barf = QRectF(rect).adjusted(0.5, 0.5, -0.5, -0.5)
    radius = barf.height() / 2
    painter.setPen(Qt.PenStyle.NoPen)
    if line.fraction is None:  # no reading yet: the track alone, still visible (R-UI-16)
        painter.setBrush(track_colour(palette))
        painter.drawRoundedRect(barf, radius, radius)
        return
    painter.setBrush(track_colour(palette))
    painter.drawRoundedRect(barf, radius, radius)
    if muted:  # not serving: the reading is history, not what the account is doing
        fill = dim_text(palette)
    elif line.tone is Tone.OK:
        fill = fill_colour(palette.color(QPalette.ColorRole.Highlight), palette)
    else:
        fill = tone_colour(line.tone, palette)
    if line.stale:
        fill = with_alpha(fill, 110)
    width = barf.width() * line.fraction
    if width > 0:
        painter.setBrush(fill)
        painter.drawRoundedRect(
            QRectF(barf.left(), barf.top(), max(width, 2 * radius), barf.height()), radius, radius
        )


class AccountRowWidget(QWidget):
    """An account's head line (glyph, name, marks, state in words) and its window lines."""

    def __init__(self, menu: QMenu, row: AccountRow, columns: Columns | None = None) -> None:
        super().__init__()
        self._menu = menu
        self.action: QWidgetAction | None = None
        self.row = row
        self.columns = columns or Columns.for_rows([row], self.fontMetrics())
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMouseTracking(True)
        self._describe()

    def set_row(self, row: AccountRow) -> None:
        """New readings for the same account (the menu ticks while it is open)."""
        if row == self.row:
            return
        resized = len(row.windows) != len(self.row.windows)
        self.row = row
        self._describe()
        if resized:
            self.updateGeometry()
        self.update()

    def _describe(self) -> None:
        self.setAccessibleName(self.row.text)
        self.setAccessibleDescription(self.row.description)
        self.setToolTip(self.row.description)
        if self.action is not None:
            self.action.setText(self.row.text)

    # look -------------------------------------------------------------------------------------

    def _active(self) -> bool:
        return self.action is not None and self._menu.activeAction() is self.action

    def _text_colour(self, palette: QPalette) -> QColor:
        role = QPalette.ColorRole.HighlightedText if self._active() else QPalette.ColorRole.Text
        return palette.color(role)

    def _dim(self, palette: QPalette) -> QColor:
        return self._text_colour(palette) if self._active() else dim_text(palette)

    def _lines(self) -> list[WindowLine | str]:
        # why it is not serving, when the service knows ("credential missing from the keyring")
        lines: list[WindowLine | str] = []
        if self.row.status is not None and self.row.status.detail:
            lines.append(self.row.status.detail)
        if self.row.windows:
            return lines + list(self.row.windows)
        return lines + ([self.row.note] if self.row.note else [])

    def _caption(self, line: WindowLine) -> str:
        if line.fraction is None:
            return "no data yet" if line.percent == "—" else line.percent
        caption = line.reset
        if line.stale:
            caption = f"{caption} · stale" if caption else "stale"
        return caption

    def _forecast(self, line: WindowLine) -> str:
        # "runs out in ~1h 10m" only: the reset is already on the line
        return line.forecast.split(",")[0] if line.forecast else ""

    def _head_width(self, fm: QFontMetrics) -> int:
        em = fm.height()
        width = self.columns.indent + fm.horizontalAdvance(self.row.name)
        if self.row.marks:
            width += fm.horizontalAdvance("  " + " · ".join(self.row.marks))
        if self.row.status is not None:
            width += em + fm.horizontalAdvance(self.row.status.words)
        return width + em + PAD  # the submenu arrow

    def _line_width(self, line: WindowLine | str, fm: QFontMetrics) -> int:
        if isinstance(line, str):
            return self.columns.indent + fm.horizontalAdvance(line) + PAD
        c = self.columns
        text = self._caption(line)
        forecast = self._forecast(line)
        if forecast:
            text += " · " + forecast
        return c.indent + c.label + c.bar + c.percent + fm.horizontalAdvance(text) + PAD

    def sizeHint(self) -> QSize:
        fm = self.fontMetrics()
        em = fm.height()
        lines = self._lines()
        width = max([self._head_width(fm)] + [self._line_width(line, fm) for line in lines])
        height = int(em * HEAD_EM) + int(em * LINE_EM) * len(lines) + em // 4
        return QSize(max(width, 20 * em), height)

    def enterEvent(self, event: QEnterEvent) -> None:
        self.update()  # the highlight follows QMenu's active action; never set it here
        super().enterEvent(event)

    def leaveEvent(self, event: object) -> None:
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        if self._active():
            painter.fillRect(self.rect(), palette.color(QPalette.ColorRole.Highlight))
        self._paint_head(painter, palette)
        fm = self.fontMetrics()
        em = fm.height()
        y = int(em * HEAD_EM)
        line_h = int(em * LINE_EM)
        for line in self._lines():
            if isinstance(line, str):
                painter.setPen(self._dim(palette))
                painter.drawText(
                    QRect(self.columns.indent, y, self.width() - self.columns.indent, line_h),
                    Qt.AlignmentFlag.AlignVCenter,
                    line,
                )
            else:
                self._paint_window(painter, palette, line, y, line_h)
            y += line_h
        painter.end()

    def _paint_head(self, painter: QPainter, palette: QPalette) -> None:
        fm = self.fontMetrics()
        em = fm.height()
        h = int(em * HEAD_EM)
        text = self._text_colour(palette)
        painter.setPen(tone_colour(self.row.glyph_tone, palette) if not self._active() else text)
        painter.drawText(
            QRect(PAD, 0, self.columns.indent, h), Qt.AlignmentFlag.AlignVCenter, self.row.glyph
        )
        right = self.width() - PAD - em
        painter.setPen(text)
        painter.drawText(QRect(right, 0, em, h), Qt.AlignmentFlag.AlignCenter, "▸")
        status = self.row.status
        if status is not None:
            status_w = fm.horizontalAdvance(status.words)
            painter.setPen(
                text
                if self._active() or status.tone is Tone.MUTED
                else tone_colour(status.tone, palette)
            )
            painter.drawText(
                QRect(right - status_w - em // 2, 0, status_w, h),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                status.words,
            )
            right -= status_w + em
        x = self.columns.indent
        font = QFont(self.font())
        font.setBold(bool(self.row.marks))
        painter.setFont(font)
        painter.setPen(text)
        name = QFontMetrics(font).elidedText(
            self.row.name, Qt.TextElideMode.ElideRight, max(0, right - x)
        )
        painter.drawText(QRect(x, 0, right - x, h), Qt.AlignmentFlag.AlignVCenter, name)
        x += painter.fontMetrics().horizontalAdvance(name)
        painter.setFont(self.font())
        if self.row.marks and x + em < right:
            marks = fm.elidedText(
                "  " + " · ".join(self.row.marks), Qt.TextElideMode.ElideRight, right - x
            )
            painter.setPen(self._dim(palette))
            painter.drawText(QRect(x, 0, right - x, h), Qt.AlignmentFlag.AlignVCenter, marks)

    def _paint_window(
        self, painter: QPainter, palette: QPalette, line: WindowLine, y: int, h: int
    ) -> None:
        c = self.columns
        fm = self.fontMetrics()
        em = fm.height()
        text = self._text_colour(palette)
        x = c.indent
        painter.setPen(text)
        painter.drawText(QRect(x, y, c.label, h), Qt.AlignmentFlag.AlignVCenter, line.label)
        x += c.label
        bar_h = max(4, int(em * BAR_HEIGHT_EM))
        muted = not self.row.serving
        ground = on_highlight(palette) if self._active() else palette
        _bar(painter, QRect(x, y + (h - bar_h) // 2, c.bar, bar_h), line, ground, muted)
        x += c.bar
        painter.setPen(text if line.fraction is not None else self._dim(palette))
        if line.fraction is not None:
            painter.drawText(
                QRect(x, y, c.percent - em // 2, h),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                line.percent,
            )
        x += c.percent
        caption = self._caption(line)
        painter.setPen(self._dim(palette) if line.fraction is None or line.stale else text)
        painter.drawText(QRect(x, y, self.width() - x, h), Qt.AlignmentFlag.AlignVCenter, caption)
        forecast = self._forecast(line)
        if forecast:
            x += fm.horizontalAdvance(caption + " · ")
            painter.setPen(text if self._active() else tone_colour(Tone.WARN, palette))
            painter.drawText(
                QRect(x, y, self.width() - x, h), Qt.AlignmentFlag.AlignVCenter, forecast
            )


def row_action(menu: QMenu, widget: AccountRowWidget) -> QWidgetAction:
    action = QWidgetAction(menu)
    action.setDefaultWidget(widget)
    action.setText(widget.row.text)  # what menu bridges and screen readers get
    action.setToolTip(widget.row.description)
    widget.action = action
    return action


class PoolLineWidget(QWidget):
    """A line of the menu that is a reading, not an item ("Claude pool left: 5h 52% · …").

    Its action is disabled, so the keyboard does not stop on it and a click does nothing; but
    painted as a disabled item it would be grey on grey (R-UI-16). So it has the style paint it
    as an enabled, unselected menu item: the text lands where the style puts every item's text
    (the "Updated … ago" line under it, Open Accounts), in the palette's active text colour.
    Placing the text itself at the rows' name indent left it some 5 px left of the items under
    it (third newcomer pass); the item's text column is the style's to choose, so ask it."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.setAccessibleName(text)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_text(self, text: str) -> None:
        if text != self.text:
            self.text = text
            self.setAccessibleName(text)
            self.updateGeometry()
            self.update()

    def _item_option(self) -> QStyleOptionMenuItem:
        """The option QMenu gives a plain enabled item of this menu (QMenu::initStyleOption)."""
        option = QStyleOptionMenuItem()
        option.initFrom(self)
        palette = QPalette(self.palette())
        palette.setCurrentColorGroup(QPalette.ColorGroup.Active)  # the action is disabled
        option.palette = palette
        option.state = QStyle.StateFlag.State_Enabled
        option.menuItemType = QStyleOptionMenuItem.MenuItemType.Normal
        option.checkType = QStyleOptionMenuItem.CheckType.NotCheckable
        option.text = self.text
        option.font = self.font()
        option.reservedShortcutWidth = 0
        menu = self.parentWidget()
        actions = menu.actions() if isinstance(menu, QMenu) else []
        option.menuHasCheckableItems = any(a.isCheckable() for a in actions)
        # QMenu reserves an icon column only when one of its items has an icon.
        if any(not a.icon().isNull() for a in actions):
            icon = self.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize, option, menu)
            option.maxIconWidth = icon + 4
        else:
            option.maxIconWidth = 0
        return option

    def sizeHint(self) -> QSize:
        option = self._item_option()
        fm = self.fontMetrics()
        text = QSize(fm.horizontalAdvance(self.text), fm.height())
        size = self.style().sizeFromContents(QStyle.ContentsType.CT_MenuItem, option, text, self)
        return QSize(size.width(), max(size.height(), int(fm.height() * 1.5)))

    def paintEvent(self, event: QPaintEvent) -> None:
        option = self._item_option()
        option.rect = self.rect()
        painter = QPainter(self)
        self.style().drawControl(QStyle.ControlElement.CE_MenuItem, option, painter, self)
        painter.end()


def reading_action(menu: QMenu, text: str) -> QWidgetAction:
    """A disabled action showing `text` readably (PoolLineWidget)."""
    action = QWidgetAction(menu)
    action.setDefaultWidget(PoolLineWidget(text))
    action.setText(text)
    action.setEnabled(False)
    return action
