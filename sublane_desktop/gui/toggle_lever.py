"""A lever that stays on (the Accounts card's History): checked, it wears the selection colours.

A checkable QPushButton shows its checked state as the style's "sunken" face. In Fusion that is
the button grey a shade darker, which next to a disabled "Clear cooldown" read as greyed out,
not as "on" (third newcomer pass). So while checked the button takes the palette's highlight as
its face and the highlighted text as its words: the colours a desktop uses for "this one is
chosen", in light and dark, kept readable (R-UI-16). The style still draws the button, so it
keeps its frame and shape in every theme.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QTimer
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QPushButton, QWidget

from sublane_desktop.gui.colours import readable

Role = QPalette.ColorRole


def switched_on(palette: QPalette) -> QPalette:
    """`palette` with a button face in the selection colours (every colour group)."""
    out = QPalette(palette)
    face = palette.color(Role.Highlight)
    ink = readable(palette.color(Role.HighlightedText), face)
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
        out.setColor(group, Role.Button, face)
        out.setColor(group, Role.ButtonText, ink)
    return out


class ToggleLever(QPushButton):
    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setCheckable(True)
        self.toggled.connect(lambda _: self._wear())

    def _inherited(self) -> QPalette:
        parent = self.parentWidget()
        return parent.palette() if parent is not None else QApplication.palette(self)

    def _wear(self) -> None:
        if not self.isChecked():
            self.setPalette(QPalette())  # resolves nothing: it follows its parent's again
            return
        wanted = switched_on(self._inherited())
        mine = self.palette()
        if all(mine.color(r) == wanted.color(r) for r in (Role.Button, Role.ButtonText)):
            return  # already worn: the PaletteChange of our own setPalette ends here
        self.setPalette(wanted)

    def changeEvent(self, event: QEvent) -> None:
        # The desktop switched light/dark (the new palette reaches a widget as a PaletteChange):
        # the "on" colours are taken again from the new palette, once the event is done.
        changed = event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ParentChange)
        if changed and self.isChecked():
            QTimer.singleShot(0, self, self._wear)
        super().changeEvent(event)
