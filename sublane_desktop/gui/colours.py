"""Palette-aware colours that stay readable on light and dark themes alike (R-UI-16).

Every colour the widgets draw text or a bar track with comes from here, measured against the
background it lands on with the WCAG 2 contrast ratio. A desktop palette can hand us anything
(a dark theme that keeps the default dark-blue link colour, a grey "disabled" text that is
barely there), so the accents are nudged lighter or darker until they reach the ratio, keeping
their hue: amber stays amber, only light enough to read on dark grey.
"""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtGui import QColor, QGuiApplication, QPalette

from sublane_desktop.gui.pool_status import Tone

# WCAG 2.1 1.4.3: body text against its background.
TEXT_CONTRAST = 4.5
# A bar's empty track against the window: clearly there, yet quieter than the fill. (WCAG asks
# 3:1 of the part that carries the information, which is the fill; see FILL_CONTRAST.)
TRACK_CONTRAST = 1.6
# WCAG 2.1 1.4.11: the fill of a bar is what says how full it is.
FILL_CONTRAST = 3.0

# Muted accents; the neutral tones come from the palette so the look follows the theme.
_ACCENTS = {
    Tone.OK: QColor(46, 139, 87),
    Tone.WARN: QColor(201, 138, 27),
    Tone.BAD: QColor(196, 70, 61),
}

Role = QPalette.ColorRole


# --- measuring --------------------------------------------------------------------------------


def luminance(colour: QColor) -> float:
    """WCAG 2 relative luminance of an opaque sRGB colour, 0 (black) … 1 (white)."""

    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4

    return (
        0.2126 * channel(colour.redF())
        + 0.7152 * channel(colour.greenF())
        + 0.0722 * channel(colour.blueF())
    )


def contrast(foreground: QColor, background: QColor) -> float:
    """WCAG 2 contrast ratio, 1 … 21; a translucent foreground is first laid on the background."""
    a = luminance(over(foreground, background))
    b = luminance(over(background, QColor(255, 255, 255)))
    light, dark = max(a, b), min(a, b)
    return (light + 0.05) / (dark + 0.05)


def over(colour: QColor, background: QColor) -> QColor:
    """`colour` painted on an opaque `background` (source-over), as the eye sees it."""
    alpha = colour.alphaF()
    if alpha >= 1.0:
        return QColor(colour.red(), colour.green(), colour.blue())
    return QColor.fromRgbF(
        colour.redF() * alpha + background.redF() * (1 - alpha),
        colour.greenF() * alpha + background.greenF() * (1 - alpha),
        colour.blueF() * alpha + background.blueF() * (1 - alpha),
    )


def readable(colour: QColor, *backgrounds: QColor, minimum: float = TEXT_CONTRAST) -> QColor:
    """`colour`, made lighter or darker (same hue) until it reaches `minimum` against every
    background. The direction is away from the backgrounds: lighter on dark, darker on light."""
    if not backgrounds:
        return QColor(colour)
    # Table cells ask on every repaint: the answer for the same colours is remembered.
    rgba = _readable(colour.rgba(), tuple(b.rgba() for b in backgrounds), minimum)
    return QColor.fromRgba(rgba)


@lru_cache(maxsize=256)
def _readable(colour_rgba: int, background_rgbas: tuple[int, ...], minimum: float) -> int:
    colour = QColor.fromRgba(colour_rgba)
    backgrounds = [QColor.fromRgba(b) for b in background_rgbas]
    base = over(colour, backgrounds[0])
    if all(contrast(base, b) >= minimum for b in backgrounds):
        return base.rgba()
    dark_ground = max(luminance(b) for b in backgrounds) < 0.18
    hue, saturation, lightness = base.hslHueF(), base.hslSaturationF(), base.lightnessF()
    best = base
    for step in range(1, 41):
        # lightness walks to 1 (white) or 0 (black) in 40 steps; the first that reads wins
        target = (
            lightness + (1 - lightness) * step / 40 if dark_ground else lightness * (1 - step / 40)
        )
        best = QColor.fromHslF(max(hue, 0.0), saturation, min(1.0, max(0.0, target)))
        if all(contrast(best, b) >= minimum for b in backgrounds):
            return best.rgba()
    return best.rgba()


# --- what the widgets draw with ---------------------------------------------------------------


def _grounds(palette: QPalette) -> tuple[QColor, QColor, QColor]:
    """Text lands on the window (labels, rows) or on the base (fields, tables, every other
    table row on the alternate base)."""
    return palette.color(Role.Window), palette.color(Role.Base), palette.color(Role.AlternateBase)


def tone_colour(tone: Tone, palette: QPalette) -> QColor:
    """A tone's colour, readable as text on the window and on fields; also the fill of bars."""
    if tone in _ACCENTS:
        return readable(_ACCENTS[tone], *_grounds(palette))
    if tone is Tone.INFO:
        return readable(palette.color(Role.Highlight), *_grounds(palette))
    return dim_text(palette)


def dim_text(palette: QPalette) -> QColor:
    """Secondary words (provider, captions, hints): quieter than the text, still 4.5:1."""
    return readable(
        palette.color(QPalette.ColorGroup.Disabled, Role.WindowText), *_grounds(palette)
    )


def link_text(palette: QPalette) -> QColor:
    """Something to click or copy, such as a request id: the palette's link colour, made
    readable (a dark theme often keeps the default dark blue, #0000ff on dark grey is 2:1)."""
    return readable(palette.color(Role.Link), *_grounds(palette))


def on_base(colour: QColor, palette: QPalette | None = None) -> QColor:
    """A fixed accent (an outcome, a cache miss) as text in a table cell of this palette."""
    palette = palette if palette is not None else QGuiApplication.palette()
    return readable(colour, palette.color(Role.Base), palette.color(Role.AlternateBase))


def readable_palette(palette: QPalette) -> QPalette | None:
    """The desktop's palette with its selection, link, placeholder and greyed-out text colours
    made readable, or None when they already are.

    A selected row is white on the highlight in most themes, and Fusion's default blue gives
    3.7:1: the highlight is deepened (or lightened) until it reads. Greyed-out text is a reading
    here, not only a dead control (the tray's pool lines are disabled items so the keyboard
    skips them, R-UI-12), and placeholders are hints a person must read: both reach 4.5:1,
    still well apart from the full-strength text."""
    out = QPalette(palette)
    changed = False
    disabled = QPalette.ColorGroup.Disabled
    grounds = [palette.color(disabled, r) for r in (Role.Window, Role.Base, Role.Button)]
    for role in (Role.WindowText, Role.Text, Role.ButtonText):
        colour = palette.color(disabled, role)
        if any(contrast(colour, g) < TEXT_CONTRAST for g in grounds):
            out.setColor(disabled, role, readable(colour, *grounds))
            changed = True
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive, disabled):
        hint, base = palette.color(group, Role.PlaceholderText), palette.color(group, Role.Base)
        if contrast(hint, base) < TEXT_CONTRAST:
            out.setColor(group, Role.PlaceholderText, readable(hint, base))
            changed = True
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
        text = palette.color(group, Role.HighlightedText)
        highlight = palette.color(group, Role.Highlight)
        if contrast(text, highlight) < TEXT_CONTRAST:
            out.setColor(group, Role.Highlight, readable(highlight, text))
            changed = True
        for role in (Role.Link, Role.LinkVisited):
            colour = palette.color(group, role)
            grounds = [palette.color(group, Role.Base), palette.color(group, Role.Window)]
            if any(contrast(colour, g) < TEXT_CONTRAST for g in grounds):
                out.setColor(group, role, readable(colour, *grounds))
                changed = True
    return out if changed else None


def on_highlight(palette: QPalette) -> QPalette:
    """The palette as seen on a highlighted (hovered, selected) row: the highlight is the
    ground and the highlighted text the ink, so a bar drawn there keeps its track and fill
    apart from the ground (a highlight-blue fill on the highlight vanishes)."""
    out = QPalette(palette)
    ground, ink = palette.color(Role.Highlight), palette.color(Role.HighlightedText)
    for role in (Role.Window, Role.Base, Role.AlternateBase):
        out.setColor(role, ground)
    for role in (Role.WindowText, Role.Text, Role.Highlight):
        out.setColor(role, ink)
    out.setColor(QPalette.ColorGroup.Disabled, Role.WindowText, ink)
    return out


def track_colour(palette: QPalette) -> QColor:
    """The empty part of a bar: window text mixed into the window until it shows."""
    window, text = palette.color(Role.Window), palette.color(Role.WindowText)
    for step in range(1, 21):
        mixed = with_alpha(text, round(255 * step / 20))
        if contrast(mixed, window) >= TRACK_CONTRAST:
            return over(mixed, window)
    return QColor(text)


def fill_colour(colour: QColor, palette: QPalette) -> QColor:
    """A bar's fill (the highlight, or a tone), made to stand out from the window."""
    return readable(colour, palette.color(Role.Window), minimum=FILL_CONTRAST)


def with_alpha(colour: QColor, alpha: int) -> QColor:
    out = QColor(colour)
    out.setAlpha(alpha)
    return out
