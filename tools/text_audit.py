"""Is every word of a window whole and readable? (R-UI-16) — the text half of the layout audit.

Two findings, as short sentences:

- **cut**: a label, button or tab title wider than the room it has (Qt clips or elides it), a
  word-wrapped label taller than its box, a table cell or header section wider than its column,
  or text a widget paints itself (the tray rows, gauges, delegates) that it had to elide with
  QFontMetrics.elidedText or that overflows the box it is drawn in;
- **faint**: text under 4.5:1 against what it is drawn on (WCAG 2 AA). The foreground is the
  colour the text is drawn with (the pen, for painted text; the palette role, the model's
  ForegroundRole or a rich-text colour otherwise), the background is read from the pixels of
  the rendered window: the commonest colour in the text's box, so a card, a selection or a
  custom fill counts as it looks. Disabled controls are exempt, as WCAG exempts them.

Painted text is seen by wrapping QPainter.drawText and QFontMetrics.elidedText while the window
repaints (Python-level callers only: all of this app's custom painting is Python).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QModelIndex, QPoint, QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetrics, QImage, QPainter, QPalette
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QCheckBox,
    QHeaderView,
    QLabel,
    QMenu,
    QRadioButton,
    QStyledItemDelegate,
    QTabBar,
    QTableView,
    QWidget,
    QWidgetAction,
)

from sublane_desktop.gui.colours import TEXT_CONTRAST, contrast, over

SLACK = 1  # px: rounding at fractional scales
ROWS = 60  # item-view rows looked at: the ones a person sees first
ELLIPSIS = "…"
_COLOUR = re.compile(r"color\s*[:=]\s*[\"']?(#[0-9a-fA-F]{3,8}|[a-zA-Z]+)")


@dataclass
class Painted:
    widget: QWidget
    rect: QRect  # in the widget's coordinates
    text: str
    colour: QColor
    room: int | None  # the width of the box it was drawn into (None: drawn at a point)
    clipped: bool  # Qt clips to the box (no TextDontClip), so overflow is lost
    need: int  # the text's width in the painter's font


def text_problems(window: QWidget) -> list[str]:
    with _watching() as (painted, elided):
        image = window.grab().toImage()  # paints every visible widget, watched
    found: list[str] = []
    found += _cut_widgets(window, elided)
    found += _cut_cells(window)
    found += _faint_widgets(window, image)
    if isinstance(window, QMenu):
        found += _faint_menu_items(window, image)
        need = window.sizeHint().width()
        if need > window.width() + SLACK:  # a small screen clamps a menu: its items are cut
            found.append(f"menu is cut: its widest item needs {need} px, has {window.width()}")
    found += _painted(window, image, painted, elided)
    return sorted(set(found), key=found.index)


# --- painted text -----------------------------------------------------------------------------


@contextmanager
def _watching() -> Iterator[tuple[list[Painted], dict[str, str]]]:
    painted: list[Painted] = []
    elided: dict[str, str] = {}  # what was drawn -> what it stood for
    draw, elide = QPainter.drawText, QFontMetrics.elidedText

    def elided_text(self: QFontMetrics, text: str, mode: Any, width: int, flags: int = 0) -> str:
        out = elide(self, text, mode, width, flags)
        if out != text:
            elided[out] = text
        return out

    def draw_text(self: QPainter, *args: Any) -> Any:
        try:
            _record(self, args, painted)
        except Exception:  # an audit must never break the painting it watches
            pass
        return draw(self, *args)

    setattr(QPainter, "drawText", draw_text)  # noqa: B010 (mypy: a method swapped for a while)
    setattr(QFontMetrics, "elidedText", elided_text)  # noqa: B010
    try:
        yield painted, elided
    finally:
        setattr(QPainter, "drawText", draw)  # noqa: B010
        setattr(QFontMetrics, "elidedText", elide)  # noqa: B010


def _record(painter: QPainter, args: tuple[Any, ...], out: list[Painted]) -> None:
    device = painter.device()
    if not isinstance(device, QWidget):
        return
    fm = painter.fontMetrics()
    text = next((a for a in args if isinstance(a, str)), None)
    if not text or not text.strip():
        return
    first = args[0]
    room: int | None = None
    clipped = False
    if isinstance(first, (QRect, QRectF)):
        box = first.toRect() if isinstance(first, QRectF) else QRect(first)
        flags = args[1] if len(args) > 2 and not isinstance(args[1], str) else 0
        flags = int(flags) if not hasattr(flags, "value") else int(flags.value)
        room = box.width()
        clipped = not flags & int(Qt.TextFlag.TextDontClip.value)
        if flags & int(Qt.TextFlag.TextWordWrap.value):
            room = None  # wrapped text is judged by height, as a label's is
    elif len(args) >= 6 and all(isinstance(a, int) for a in args[:4]):
        box = QRect(*args[:4])
        room = box.width()
        clipped = True
    else:  # at a point: the baseline's start
        if isinstance(first, QPoint):
            point = QPoint(first)
        elif isinstance(first, QPointF):
            point = first.toPoint()
        else:
            point = QPoint(int(args[0]), int(args[1]))
        bounds = fm.boundingRect(text)
        box = bounds.translated(point)
    colour = QColor(painter.pen().color())
    colour.setAlphaF(colour.alphaF() * painter.opacity())
    rect = painter.transform().mapRect(box)
    need = max(fm.horizontalAdvance(line) for line in text.split("\n"))
    out.append(Painted(device, rect, text, colour, room, clipped, need))


def _painted(
    window: QWidget, image: QImage, painted: list[Painted], elided: dict[str, str]
) -> list[str]:
    found: list[str] = []
    for item in painted:
        if not _belongs(item.widget, window):
            continue
        where = _name(item.widget)
        if item.text in elided:
            found.append(f"{where} cuts {elided[item.text]!r} to {item.text!r}")
        elif item.room is not None and item.clipped and item.need > item.room + SLACK:
            found.append(f"{where} cuts {item.text!r} (needs {item.need} px, has {item.room})")
        origin = item.widget.mapTo(window, QPoint(0, 0))
        box = QRect(item.rect)
        if item.room is not None:
            # the box the text was given is wider than the glyphs: look where they are
            box.setWidth(min(box.width(), item.need + 2))
        # Only the part a person sees: a table row half below the bottom edge is drawn, but
        # what lies under its hidden half is the window, not the table.
        box = box.intersected(item.widget.visibleRegion().boundingRect())
        if box.isEmpty():
            continue
        ground = _ground(image, box.translated(origin))
        if ground is None:
            continue
        ratio = contrast(item.colour, ground)
        if ratio < TEXT_CONTRAST:
            found.append(_faint(where, item.text, item.colour, ground, ratio))
    return found


# --- cut: labels, buttons, tabs ---------------------------------------------------------------


def _cut_widgets(window: QWidget, elided: dict[str, str]) -> list[str]:
    found: list[str] = []
    for widget in window.findChildren(QWidget):
        if not _shown(widget, window):
            continue
        if isinstance(widget, QLabel) and widget.text().strip() and widget.pixmap().isNull():
            text = widget.text()
            if text in elided:
                found.append(f"{_name(widget)} is cut from {elided[text]!r}")
            elif widget.wordWrap():
                need = widget.heightForWidth(widget.width())
                if need > widget.height() + SLACK:
                    found.append(
                        f"{_name(widget)} is cut: needs {need} px of height, has {widget.height()}"
                    )
            else:
                need = widget.sizeHint().width()
                if need > widget.width() + SLACK:
                    found.append(
                        f"{_name(widget)} is cut: needs {need} px of width, has {widget.width()}"
                    )
        elif isinstance(widget, QAbstractButton) and widget.text().strip():
            need = widget.sizeHint().width()
            if need > widget.width() + SLACK:
                found.append(
                    f"{_name(widget)} is cut: needs {need} px of width, has {widget.width()}"
                )
        elif isinstance(widget, QTabBar) and widget.elideMode() is not Qt.TextElideMode.ElideNone:
            for i in range(widget.count()):
                if widget.tabSizeHint(i).width() > widget.tabRect(i).width() + SLACK:
                    found.append(f"tab {widget.tabText(i)!r} is cut")
    return found


def _cut_cells(window: QWidget) -> list[str]:
    found: list[str] = []
    for view in window.findChildren(QAbstractItemView):
        model = view.model()
        if not _shown(view, window) or model is None:
            continue
        cut: dict[int, list[str]] = {}
        for index in _visible_cells(view):
            if type(view.itemDelegateForIndex(index)) is not QStyledItemDelegate:
                continue  # a Python delegate paints through drawText: seen there
            room = view.visualRect(index).width()
            if view.sizeHintForIndex(index).width() > room + SLACK:
                text = str(index.data() or "")
                cut.setdefault(index.column(), []).append(text)
        for column, texts in cut.items():
            title = model.headerData(column, Qt.Orientation.Horizontal)
            found.append(
                f"{_name(view)} column {title or column!r} cuts {len(texts)} cell(s), "
                f"e.g. {texts[0]!r}"
            )
        if isinstance(view, QTableView):
            found += _cut_header(view.horizontalHeader(), window)
    return found


def _cut_header(header: QHeaderView, window: QWidget) -> list[str]:
    found: list[str] = []
    model = header.model()
    if model is None or not _shown(header, window):
        return found
    for logical in range(header.count()):
        if header.isSectionHidden(logical) or header.sectionSize(logical) <= 0:
            continue
        need = header.sectionSizeFromContents(logical).width()
        if need > header.sectionSize(logical) + SLACK:
            title = model.headerData(logical, Qt.Orientation.Horizontal)
            found.append(
                f"header {title!r} is cut: needs {need} px, has {header.sectionSize(logical)}"
            )
    return found


def _visible_cells(view: QAbstractItemView) -> Iterator[QModelIndex]:
    model = view.model()
    area = view.viewport().rect()
    columns = model.columnCount()
    for row in range(min(model.rowCount(), ROWS)):
        for column in range(columns):
            index = model.index(row, column)
            rect = view.visualRect(index)
            if rect.width() > 0 and rect.intersects(area):
                yield index


# --- faint: widgets drawn by the style ----------------------------------------------------------


def _faint_widgets(window: QWidget, image: QImage) -> list[str]:
    found: list[str] = []
    for widget in window.findChildren(QWidget):
        if not _shown(widget, window) or not widget.isEnabled():
            continue
        colours: list[QColor] = []
        text = ""
        palette = widget.palette()
        if isinstance(widget, QLabel) and widget.text().strip():
            text = widget.text()
            colours = [palette.color(widget.foregroundRole())]
            if widget.textFormat() is not Qt.TextFormat.PlainText:
                colours += [QColor(c) for c in _COLOUR.findall(text) if QColor(c).isValid()]
        elif isinstance(widget, (QCheckBox, QRadioButton)) and widget.text().strip():
            text = widget.text()
            colours = [palette.color(QPalette.ColorRole.WindowText)]
        if colours:
            ground = _ground(image, _glyph_box(widget, window))
            for colour in colours:
                ratio = contrast(colour, ground) if ground is not None else 99.0
                if ratio < TEXT_CONTRAST and ground is not None:
                    found.append(_faint(_name(widget), _plain(text), colour, ground, ratio))
        if isinstance(widget, QAbstractItemView) and widget.model() is not None:
            found += _faint_cells(widget, window, image)
    return found


def _faint_cells(view: QAbstractItemView, window: QWidget, image: QImage) -> list[str]:
    found: list[str] = []
    seen: set[tuple[int, str]] = set()
    palette = view.palette()
    selection = view.selectionModel()
    for index in _visible_cells(view):
        if type(view.itemDelegateForIndex(index)) is not QStyledItemDelegate:
            continue
        text = str(index.data() or "")
        if not text.strip():
            continue
        selected = selection is not None and selection.isSelected(index)
        brush = index.data(Qt.ItemDataRole.ForegroundRole)
        if selected:
            colour = palette.color(QPalette.ColorRole.HighlightedText)
        elif isinstance(brush, QColor):
            colour = brush
        elif brush is not None and hasattr(brush, "color"):
            colour = brush.color()
        else:
            colour = palette.color(QPalette.ColorRole.Text)
        origin = view.viewport().mapTo(window, QPoint(0, 0))
        # the part of the cell in view: a cell cut by the edge is scrolled to, not faint
        shown = view.visualRect(index).intersected(view.viewport().rect())
        ground = _ground(image, shown.translated(origin))
        if ground is None:
            continue
        ratio = contrast(colour, ground)
        key = (index.column(), colour.name())
        if ratio < TEXT_CONTRAST and key not in seen:
            seen.add(key)
            found.append(_faint(f"{_name(view)} cell", text, colour, ground, ratio))
    return found


def _faint_menu_items(menu: QMenu, image: QImage) -> list[str]:
    """A menu's plain items, drawn by the style. Disabled ones count too: a menu that shows a
    reading as a greyed-out item asks the person to read it, and this app offers no lever that
    does not apply (R-UI-12), so a grey item is information. The text colour is read from the
    picture (the pixel that stands out most from the item's ground), whatever role drew it."""
    found: list[str] = []
    for action in menu.actions():
        if action.isSeparator() or not action.isVisible() or not action.text().strip():
            continue
        if isinstance(action, QWidgetAction) and action.defaultWidget() is not None:
            continue  # a widget row: its painted text is watched
        box = menu.actionGeometry(action)
        ground = _ground(image, box)
        ink = _ink(image, box, ground) if ground is not None else None
        if ground is None or ink is None:
            continue
        ratio = contrast(ink, ground)
        if ratio < TEXT_CONTRAST:
            text = action.text().replace("&", "")
            found.append(_faint("menu item", text, ink, ground, ratio))
    return found


def _ink(image: QImage, box: QRect, ground: QColor) -> QColor | None:
    """The colour in `box` farthest from the ground: the core of the glyphs' strokes."""
    ratio = image.devicePixelRatio() or 1.0
    box = QRect(
        int(box.x() * ratio),
        int(box.y() * ratio),
        int(box.width() * ratio),
        int(box.height() * ratio),
    ).intersected(image.rect())
    best, best_ratio = None, 1.0
    for y in range(box.top(), box.bottom() + 1):
        for x in range(box.left(), box.right() + 1):
            colour = QColor.fromRgba(image.pixel(x, y))
            r = contrast(colour, ground)
            if r > best_ratio:
                best, best_ratio = colour, r
    return best


# --- helpers ----------------------------------------------------------------------------------


def _ground(image: QImage, box: QRect) -> QColor | None:
    """The commonest colour under `box` (window coordinates) in the grabbed picture."""
    ratio = image.devicePixelRatio() or 1.0
    box = QRect(
        int(box.x() * ratio),
        int(box.y() * ratio),
        int(box.width() * ratio),
        int(box.height() * ratio),
    ).intersected(image.rect())
    if box.width() <= 0 or box.height() <= 0:
        return None
    counts: Counter[int] = Counter()
    step = max(1, int(max(box.width(), box.height()) / 80))  # enough samples, not every pixel
    for y in range(box.top(), box.bottom() + 1, step):
        for x in range(box.left(), box.right() + 1, step):
            counts[image.pixel(x, y)] += 1
    if not counts:
        return None
    ground = QColor.fromRgba(counts.most_common(1)[0][0])
    return over(ground, QColor(255, 255, 255)) if ground.alpha() < 255 else ground


def _glyph_box(widget: QWidget, window: QWidget) -> QRect:
    """Where a label's or a check box's words are: its contents, as wide as the words."""
    box = widget.contentsRect()
    if isinstance(widget, QLabel) and not widget.wordWrap():
        width = widget.sizeHint().width()
        align = widget.alignment()
        if align & Qt.AlignmentFlag.AlignRight:
            box.setLeft(max(box.left(), box.right() - width))
        elif align & Qt.AlignmentFlag.AlignHCenter:
            box.adjust(max(0, (box.width() - width) // 2), 0, 0, 0)
            box.setWidth(min(box.width(), width))
        else:
            box.setWidth(min(box.width(), width))
    return box.translated(widget.mapTo(window, QPoint(0, 0)))


def _belongs(widget: QWidget, window: QWidget) -> bool:
    return widget is window or (window.isAncestorOf(widget) and _shown(widget, window))


def _shown(widget: QWidget, root: QWidget) -> bool:
    return widget.isVisibleTo(root) and widget.width() > 0 and widget.height() > 0


def _faint(where: str, text: str, colour: QColor, ground: QColor, ratio: float) -> str:
    return (
        f"{where}: {text[:30]!r} is faint, {ratio:.1f}:1 "
        f"({colour.name()} on {ground.name()}; needs {TEXT_CONTRAST}:1)"
    )


def _plain(text: str) -> str:
    return re.sub(r"<[^>]+>", "", text)


def _name(widget: QWidget) -> str:
    text = ""
    if isinstance(widget, (QAbstractButton, QLabel)):
        text = _plain(widget.text())[:30]
    return f"{type(widget).__name__}{'(' + repr(text) + ')' if text else ''}" + (
        f"#{widget.objectName()}" if widget.objectName() else ""
    )
