"""Does a window fit its content at its size, and can its words be read? (R-UI-10, R-UI-16) —
the checks the screenshots run and the layout tests assert, at 100 % and 200 % scale, in the
light and the dark palette.

A window fits when:
- no scroll area shows a horizontal scroll bar (content wider than the window);
- its layout's minimum size fits inside it (else Qt squeezes widgets below their minimum and
  they overlap or clip);
- every visible widget lies inside its parent;
- every control a person can operate has a name for screen readers (its text, its accessible
  name, or the label its form row gives it);
- no text is elided or cut (tools/text_audit.py: labels, buttons, tab titles, table cells and
  header sections, and the text widgets paint themselves, menu rows among them);
- every text reaches 4.5:1 against what it is drawn on (tools/text_audit.py).
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QTabBar,
    QTabWidget,
    QTextEdit,
    QWidget,
)

from sublane_desktop.gui.sizing import BODY, DEFAULT_SIZE, set_default_size

__all__ = ["content_needs", "problems", "set_default_size", "smallest"]

SLACK = 1  # px: rounding at fractional scales


def problems(window: QWidget, *, text: bool = True) -> list[str]:
    """What does not fit, has no name, is cut or cannot be read, as short sentences (empty
    when all is well). Every page of every tab widget is looked at, not only the one on top.
    `text=False` leaves out the text checks (elision, contrast)."""
    found = _all(window, text)
    for tabs in window.findChildren(QTabWidget):
        if not tabs.isVisibleTo(window):
            continue
        shown = tabs.currentIndex()
        for index in range(tabs.count()):
            if index == shown:
                continue
            tabs.setCurrentIndex(index)
            QApplication.processEvents()
            found += [f"tab {tabs.tabText(index)!r}: {p}" for p in _all(window, text)]
        tabs.setCurrentIndex(shown)
        QApplication.processEvents()
    return sorted(set(found), key=found.index)


def _all(window: QWidget, text: bool) -> list[str]:
    found = _problems(window)
    if text:
        from tools.text_audit import text_problems

        found += text_problems(window)
    return found


def smallest(window: QWidget) -> QSize:
    """The least size Qt lets the window take: a window is never shrunk below its layout's
    minimum, so that minimum must fit the smallest screen it may open on (R-UI-15)."""
    return window.minimumSizeHint().expandedTo(window.minimumSize())


def content_needs(window: QWidget) -> QSize | None:
    """The least size a window's content takes before it scrolls (sizing.scroll_when_small),
    or None for a window without that scroll area."""
    body = window.findChild(QScrollArea, BODY)
    content = body.widget() if isinstance(body, QScrollArea) else None
    return content.minimumSizeHint() if content is not None else None


def _problems(window: QWidget) -> list[str]:
    found: list[str] = []
    layout = window.layout()
    body = window.findChild(QScrollArea, BODY)
    content = body.widget() if isinstance(body, QScrollArea) else None
    if isinstance(body, QScrollArea) and content is not None:
        # scroll_when_small: the content may scroll on a small screen, never at the default
        # size on a screen with room.
        need = content.minimumSizeHint()
        room = body.maximumViewportSize()
        if content.hasHeightForWidth():
            need.setHeight(max(need.height(), content.heightForWidth(room.width())))
        # Scrolling is right where the screen is smaller than the content; it is a fault
        # only where the window could have grown.
        screen = window.screen()
        most = screen.availableGeometry().size() if screen is not None else QSize(1 << 20, 1 << 20)
        frame = window.frameGeometry().size()
        could_widen = frame.width() < most.width() - SLACK
        could_heighten = frame.height() < most.height() - SLACK
        if (need.width() > room.width() + SLACK and could_widen) or (
            need.height() > room.height() + SLACK and could_heighten
        ):
            found.append(
                f"needs at least {need.width()}×{need.height()} for its content but has "
                f"{room.width()}×{room.height()} (it scrolls)"
            )
    elif layout is not None:
        need = layout.totalMinimumSize()
        size = window.property(DEFAULT_SIZE)
        if not isinstance(size, QSize) or size.height() <= 0:  # 0: as tall as its content
            size = QSize(
                size.width() if isinstance(size, QSize) else window.width(), window.height()
            )
        if need.width() > size.width() + SLACK or need.height() > size.height() + SLACK:
            found.append(
                f"needs at least {need.width()}×{need.height()} but opens at "
                f"{size.width()}×{size.height()}"
            )
    for area in window.findChildren(QAbstractScrollArea):
        if (
            _shown(area, window)
            and area.horizontalScrollBar().isVisible()
            and not isinstance(area, (QPlainTextEdit, QTextEdit))
            and not _table_like(area)
            and not _screen_bound(area, window)
        ):
            found.append(f"{_name(area)} scrolls sideways")
        if (
            _shown(area, window)
            and isinstance(area, (QPlainTextEdit, QTextEdit))
            and (area.horizontalScrollBar().isVisible())
        ):
            found.append(f"{_name(area)} (text) scrolls sideways")
    for child in window.findChildren(QWidget):
        if not _shown(child, window) or child.isWindow():
            continue
        parent = child.parentWidget()
        if parent is None or _is_scroll_content(child) or _in_viewport(child):
            continue
        inside = parent.rect().adjusted(-SLACK, -SLACK, SLACK, SLACK)
        if not inside.contains(child.geometry()):
            found.append(
                f"{_name(child)} sticks out of {_name(parent)}: "
                f"{_rect(child.geometry())} in {_rect(parent.rect())}"
            )
    labelled = _form_labelled(window)
    for control in window.findChildren(QWidget):
        if not _shown(control, window) or not _operable(control):
            continue
        if _has_name(control) or control in labelled:
            continue
        found.append(f"{_name(control)} has no accessible name")
    return found


def _screen_bound(area: QAbstractScrollArea, window: QWidget) -> bool:
    """The window's own body on a screen too small for the window: scrolling is the answer."""
    screen = window.screen()
    if area.objectName() != BODY or screen is None:
        return False
    room = screen.availableGeometry().size()
    frame = window.frameGeometry().size()
    return frame.width() >= room.width() - SLACK or frame.height() >= room.height() - SLACK


def _shown(widget: QWidget, root: QWidget) -> bool:
    return widget.isVisibleTo(root) and widget.width() > 0


def _operable(widget: QWidget) -> bool:
    if isinstance(widget, QLineEdit) and isinstance(
        widget.parentWidget(), (QAbstractSpinBox, QComboBox)
    ):
        return False  # the inner editor of a spin box or combo box: the outer one is named
    return (
        isinstance(
            widget,
            (QAbstractButton, QLineEdit, QAbstractSpinBox, QComboBox, QPlainTextEdit, QTextEdit),
        )
        and widget.isEnabled()
    )


def _has_name(widget: QWidget) -> bool:
    if widget.accessibleName():
        return True
    return isinstance(widget, QAbstractButton) and bool(widget.text().strip() or widget.toolTip())


def _form_labelled(window: QWidget) -> set[QWidget]:
    """Fields a QFormLayout row or a label buddy names."""
    out: set[QWidget] = set()
    for text in window.findChildren(QLabel):
        buddy = text.buddy()
        if buddy is not None:
            out.add(buddy)
    for form in window.findChildren(QFormLayout):
        for row in range(form.rowCount()):
            label = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
            field = form.itemAt(row, QFormLayout.ItemRole.FieldRole)
            if label is None or field is None or label.widget() is None:
                continue
            widget, layout = field.widget(), field.layout()
            if widget is not None:
                out.add(widget)
                out.update(widget.findChildren(QWidget))
            elif layout is not None:
                for i in range(layout.count()):
                    item = layout.itemAt(i)
                    w = item.widget() if item is not None else None
                    if w is not None:
                        out.add(w)
    return out


def _table_like(area: QAbstractScrollArea) -> bool:
    """Tables may scroll sideways by design when columns are widened by hand."""
    from PySide6.QtWidgets import QAbstractItemView

    return isinstance(area, QAbstractItemView)


def _is_scroll_content(widget: QWidget) -> bool:
    parent = widget.parentWidget()
    area = parent.parentWidget() if parent is not None else None
    return isinstance(area, QAbstractScrollArea) and parent is area.viewport()


def _in_viewport(widget: QWidget) -> bool:
    """Widgets inside a scroll area's content are clipped by design (that is scrolling)."""
    w = widget.parentWidget()
    while w is not None:
        if isinstance(w, QAbstractScrollArea) and w.objectName() != BODY:
            return True
        if isinstance(w, QTabBar):
            return True
        w = w.parentWidget()
    return False


def _name(widget: QWidget) -> str:
    text = ""
    if isinstance(widget, (QAbstractButton, QLabel)):
        text = widget.text()[:30]
    return f"{type(widget).__name__}{'(' + repr(text) + ')' if text else ''}" + (
        f"#{widget.objectName()}" if widget.objectName() else ""
    )


def _rect(r: QRect) -> str:
    return f"{r.x()},{r.y()} {r.width()}×{r.height()}"
