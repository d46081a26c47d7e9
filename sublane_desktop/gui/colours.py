"""Palette-aware colours: calm accents that read on light and dark themes alike."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette

from sublane_desktop.gui.pool_status import Tone

# Muted accents; the neutral tones come from the palette so the look follows the theme.
_ACCENTS = {
    Tone.OK: QColor(46, 139, 87),
    Tone.WARN: QColor(201, 138, 27),
    Tone.BAD: QColor(196, 70, 61),
}


def tone_colour(tone: Tone, palette: QPalette) -> QColor:
    if tone in _ACCENTS:
        return QColor(_ACCENTS[tone])
    if tone is Tone.INFO:
        return palette.color(QPalette.ColorRole.Highlight)
    return palette.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText)


def dim_text(palette: QPalette) -> QColor:
    return palette.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText)


def with_alpha(colour: QColor, alpha: int) -> QColor:
    out = QColor(colour)
    out.setAlpha(alpha)
    return out
