"""The gauge bar paints cold, stale, normal and over-ceiling readings distinctly — checked on the
pixels of widget.grab(), not only on properties."""

from PySide6.QtGui import QColor, QPalette

from sublane_desktop.gui.colours import tone_colour
from sublane_desktop.gui.gauge import GaugeBar, GaugeLook
from sublane_desktop.gui.pool_status import Tone

NOW = 1_800_000_000.0
CEILING = 0.90


def reading(utilization, *, stale=False, cold=False):
    if cold:
        return {
            "utilization": None,
            "resets_at": None,
            "observed_at": None,
            "cold": True,
            "stale": True,
        }
    return {
        "utilization": utilization,
        "resets_at": NOW + 3600,
        "observed_at": NOW - 5,
        "cold": False,
        "stale": stale,
    }


def paint(qtbot, gauge):
    bar = GaugeBar("5h")
    qtbot.addWidget(bar)
    bar.resize(420, 20)
    bar.set_reading(gauge, CEILING, NOW)
    return bar, bar.grab().toImage()


def fill_pixel(bar, image, fraction=0.3):
    rect = bar.bar_rect()
    return image.pixelColor(rect.left() + int(rect.width() * fraction), rect.center().y())


def bar_row(bar, image):
    rect = bar.bar_rect()
    y = rect.center().y()
    return {image.pixelColor(x, y).rgb() for x in range(rect.left() + 4, rect.right() - 4)}


def same(a: QColor, b: QColor, tolerance=3) -> bool:
    return all(
        abs(x - y) <= tolerance for x, y in zip(a.getRgb()[:3], b.getRgb()[:3], strict=False)
    )


def test_normal_97_percent_stale_and_cold_look_different(qtbot):
    normal_bar, normal = paint(qtbot, reading(0.40))
    warn_bar, warn = paint(qtbot, reading(0.97))
    stale_bar, stale = paint(qtbot, reading(0.40, stale=True))
    cold_bar, cold = paint(qtbot, reading(None, cold=True))
    assert (normal_bar.look, warn_bar.look, stale_bar.look, cold_bar.look) == (
        GaugeLook.NORMAL,
        GaugeLook.WARN,
        GaugeLook.NORMAL,
        GaugeLook.COLD,
    )
    palette = normal_bar.palette()
    highlight = palette.color(QPalette.ColorRole.Highlight)

    # A fresh 40% is filled with the palette's highlight; 97% (over the 90% ceiling) is not.
    assert same(fill_pixel(normal_bar, normal), highlight)
    assert same(fill_pixel(warn_bar, warn), tone_colour(Tone.WARN, palette))
    assert not same(fill_pixel(warn_bar, warn), highlight)

    # Stale: the same fill, dimmed — lighter than fresh but not the empty track.
    dimmed = fill_pixel(stale_bar, stale)
    empty_track = fill_pixel(normal_bar, normal, fraction=0.7)
    assert not same(dimmed, highlight) and not same(dimmed, empty_track)

    # Cold: no fill at all, a hatched track (more than one colour along the bar) instead.
    row = bar_row(cold_bar, cold)
    assert len(row) >= 2
    assert not any(same(QColor.fromRgb(c), highlight, 20) for c in row)
    assert cold_bar.caption == "no data yet"

    images = [normal, warn, stale, cold]
    assert len({bytes(i.constBits()) for i in images}) == 4


def test_full_window_uses_the_alarm_colour(qtbot):
    bar, image = paint(qtbot, reading(1.0))
    assert bar.look is GaugeLook.FULL
    assert same(fill_pixel(bar, image), tone_colour(Tone.BAD, bar.palette()))


def test_countdown_caption_follows_time(qtbot):
    bar = GaugeBar("7d")
    qtbot.addWidget(bar)
    bar.set_reading(reading(0.4), CEILING, NOW)
    assert bar.caption == "40% · resets in 1h 00m"
    bar.set_reading(reading(0.4), CEILING, NOW + 3590)
    assert bar.caption == "40% · resets in 10s"


def test_a_cold_bar_shows_in_a_dark_theme_whose_mid_is_the_window_grey(qtbot):
    """Third newcomer pass, Adwaita-dark under X: the hatched "no data yet" track was drawn in
    the palette's Mid, which that theme sets to about the window's grey: it vanished."""
    from sublane_desktop.gui.colours import TRACK_CONTRAST, contrast

    bar = GaugeBar("Fable")
    qtbot.addWidget(bar)
    palette = bar.palette()
    window = QColor(53, 53, 53)
    for role, colour in [
        (QPalette.ColorRole.Window, window),
        (QPalette.ColorRole.WindowText, QColor(238, 238, 236)),
        (QPalette.ColorRole.Mid, QColor(56, 56, 56)),
    ]:
        palette.setColor(role, colour)
    bar.setPalette(palette)
    bar.setAutoFillBackground(True)
    bar.resize(420, 20)
    bar.set_reading(reading(None, cold=True), CEILING, NOW)
    image = bar.grab().toImage()
    rect = bar.bar_rect()
    best = max(
        contrast(image.pixelColor(x, y), window)
        for x in range(rect.left(), rect.right())
        for y in range(rect.top(), rect.bottom())
    )
    assert best >= TRACK_CONTRAST - 0.05, best
