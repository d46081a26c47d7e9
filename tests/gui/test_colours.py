"""R-UI-16 / fault 5: text reads at 4.5:1 and bar tracks show, in a light and a dark palette."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QStyleFactory

from sublane_desktop.gui import colours
from sublane_desktop.gui.gauge import GaugeBar
from sublane_desktop.gui.pool_status import Tone
from tools.screenshots import dark_palette

Role = QPalette.ColorRole


def light_palette() -> QPalette:
    style = QStyleFactory.create("Fusion")
    return style.standardPalette()


PALETTES = {"light": light_palette, "dark": dark_palette}


def test_contrast_is_the_wcag_ratio():
    assert colours.contrast(QColor("black"), QColor("white")) == pytest.approx(21.0)
    assert colours.contrast(QColor("white"), QColor("white")) == pytest.approx(1.0)
    # WebAIM's reference: #777777 on white is 4.48:1, just short of AA.
    assert colours.contrast(QColor("#777777"), QColor("white")) == pytest.approx(4.48, abs=0.01)
    # half-transparent black on white is the grey it looks like
    assert colours.over(QColor(0, 0, 0, 128), QColor("white")).red() in (127, 128)


@pytest.mark.parametrize("name", PALETTES)
def test_every_text_colour_reads_on_window_and_fields(qapp, name):
    palette = PALETTES[name]()
    grounds = [palette.color(Role.Window), palette.color(Role.Base)]
    texts = {
        **{f"tone {tone}": colours.tone_colour(tone, palette) for tone in Tone},
        "dim": colours.dim_text(palette),
        "link": colours.link_text(palette),
    }
    for what, colour in texts.items():
        for ground in grounds:
            ratio = colours.contrast(colour, ground)
            assert ratio >= colours.TEXT_CONTRAST, f"{what} {colour.name()} on {ground.name()}"


def test_a_dark_theme_with_the_default_link_colour_gets_a_light_blue(qapp):
    """Fault 5: request ids were #0000ff-ish on dark grey (about 2:1)."""
    palette = dark_palette()
    raw = palette.color(Role.Link)
    assert colours.contrast(raw, palette.color(Role.Base)) < 3  # what the desktop hands us
    link = colours.link_text(palette)
    assert colours.contrast(link, palette.color(Role.Base)) >= 4.5
    assert link.hslHue() == pytest.approx(raw.hslHue(), abs=3)  # still a blue


@pytest.mark.parametrize("name", PALETTES)
def test_fixed_table_accents_are_adjusted_to_the_cell(qapp, name):
    from sublane_desktop.gui.requests_model import FIRST_TURN_COLOR, MISS_COLOR, OUTCOME_COLORS

    palette = PALETTES[name]()
    for colour in [*OUTCOME_COLORS.values(), MISS_COLOR, FIRST_TURN_COLOR]:
        shown = colours.on_base(colour, palette)
        assert colours.contrast(shown, palette.color(Role.Base)) >= 4.5, colour.name()
        assert colours.contrast(shown, palette.color(Role.AlternateBase)) >= 4.5, colour.name()


@pytest.mark.parametrize("name", PALETTES)
def test_a_gauge_track_is_visible_and_its_fill_stands_out(qtbot, name):
    palette = PALETTES[name]()
    bar = GaugeBar("5h")
    qtbot.addWidget(bar)
    bar.setPalette(palette)
    bar.setAutoFillBackground(True)
    bar.resize(420, 20)
    bar.set_reading(
        {"utilization": 0.3, "resets_at": 3600.0, "observed_at": 0.0, "cold": False}, 0.9, 0.0
    )
    image = bar.grab().toImage()
    rect = bar.bar_rect()
    y = rect.center().y()
    window = palette.color(Role.Window)
    track = image.pixelColor(rect.left() + int(rect.width() * 0.8), y)
    fill = image.pixelColor(rect.left() + int(rect.width() * 0.1), y)
    assert colours.contrast(track, window) >= colours.TRACK_CONTRAST - 0.05, track.name()
    assert colours.contrast(fill, window) >= colours.FILL_CONTRAST - 0.05, fill.name()


@pytest.mark.parametrize("name", PALETTES)
def test_selected_rows_and_links_read_once_the_app_palette_is_made_readable(qapp, name):
    palette = PALETTES[name]()
    before = colours.contrast(palette.color(Role.HighlightedText), palette.color(Role.Highlight))
    assert before < 4.5  # Fusion's blue under white text: what the desktop hands us
    fixed = colours.readable_palette(palette)
    assert fixed is not None
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
        text, ground = fixed.color(group, Role.HighlightedText), fixed.color(group, Role.Highlight)
        assert colours.contrast(text, ground) >= 4.5
        assert colours.contrast(fixed.color(group, Role.Link), fixed.color(group, Role.Base)) >= 4.5
    for group in QPalette.ColorGroup.Active, QPalette.ColorGroup.Disabled:
        hint = fixed.color(group, Role.PlaceholderText)
        assert colours.contrast(hint, fixed.color(group, Role.Base)) >= 4.5
    disabled = QPalette.ColorGroup.Disabled
    for role in (Role.WindowText, Role.Text, Role.ButtonText):
        for ground in (Role.Window, Role.Base, Role.Button):
            grey, under = fixed.color(disabled, role), fixed.color(disabled, ground)
            assert colours.contrast(grey, under) >= 4.5, (role, ground)
    assert colours.readable_palette(fixed) is None  # nothing left to change: no loop


def _runs(image, y):
    """(colour, length) of each run of one colour along line y."""
    out, start = [], 0
    for x in range(1, image.width() + 1):
        if x == image.width() or image.pixel(x, y) != image.pixel(start, y):
            out.append((QColor.fromRgba(image.pixel(start, y)), x - start))
            start = x
    return out


@pytest.mark.parametrize("name", PALETTES)
def test_a_highlighted_tray_row_keeps_its_bars_apart_from_the_highlight(qtbot, service, name):
    """The hovered row is painted on the highlight: a highlight-blue fill vanished there and
    the dark track read as the filled part."""
    from gui_fakes import account
    from PySide6.QtCore import QPoint

    from sublane_desktop.gui.bridge import Bridge
    from sublane_desktop.gui.tray import Tray

    now = service.clock.now()
    five = {"utilization": 0.5, "resets_at": now + 3600, "observed_at": now - 20, "cold": False}
    service.set_accounts([account("work", current=True) | {"gauges": {"five_hour": five}}])
    bridge = Bridge(service)
    tray = Tray(bridge)
    tray.menu.setPalette(PALETTES[name]())
    tray.menu.aboutToShow.emit()
    tray.menu.popup(QPoint(10, 10))
    row = tray.rows["work"]
    qtbot.waitUntil(row.isVisible, timeout=2000)
    tray.menu.setActiveAction(row.action)
    qtbot.waitUntil(lambda: tray.menu.activeAction() is row.action, timeout=2000)
    image = row.grab().toImage()
    highlight = row.palette().color(Role.Highlight)
    runs = [run for y in range(image.height()) for run in _runs(image, y) if run[1] >= 15]
    ratios = [colours.contrast(colour, highlight) for colour, _ in runs]
    assert any(r >= colours.FILL_CONTRAST for r in ratios), ratios  # the fill
    assert any(colours.TRACK_CONTRAST - 0.1 <= r < colours.FILL_CONTRAST for r in ratios), ratios
    tray.menu.hide()
    bridge.close()
