"""R-UI-6 / R-UI-7: the tray menu is the dashboard — painted rows with the tightest window's
bar, percent and countdown, state glyphs and marks; submenus with every window, forecasts and
levers; the "updated … ago · Refresh" line."""

from __future__ import annotations

from gui_fakes import account
from PySide6.QtCore import QPoint
from PySide6.QtGui import QColor, QPalette

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.dashboard import account_row, updated_line
from sublane_desktop.gui.tray import Tray
from sublane_desktop.service import SCHEDULER_SETTINGS

NOW = 1_800_000_000.0


def gauge(utilization, resets_in=None, *, observed_ago=10, cold=False, stale=False):
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
        "resets_at": None if resets_in is None else NOW + resets_in,
        "observed_at": NOW - observed_ago,
        "cold": False,
        "stale": stale,
    }


def texts(menu):
    return [a.text() for a in menu.actions()]


def test_row_shows_the_tightest_window_with_percent_and_countdown():
    work = account("work", current=True) | {
        "fable_current": True,
        "gauges": {
            "five_hour": gauge(0.37, 2 * 3600 + 14 * 60),
            "seven_day": gauge(0.97, 86400 * 2),
            "fable": gauge(0.1, 3600),
        },
    }
    row = account_row(work, SCHEDULER_SETTINGS, NOW)
    # 7d: 0.99 - 0.97 = 0.02 headroom is less than 5h's 0.90 - 0.37
    assert (row.tightest.label, row.tightest.percent, row.tightest.fraction) == ("7d", "97%", 0.97)
    assert row.text == "● work [current, Fable current] — 7d 97% · resets in 2d 0h"
    assert [w.text for w in row.windows] == [
        "5h 37% · resets in 2h 14m",
        "7d 97% · resets in 2d 0h",
        "Fable 10% · resets in 1h 00m",
    ]
    assert row.tightest.tone.value == "ok"  # below its 99% ceiling
    at_ceiling = account_row(
        work | {"gauges": {"five_hour": gauge(0.92, 60)}}, SCHEDULER_SETTINGS, NOW
    )
    assert at_ceiling.tightest.tone.value == "warn"  # past the 90% 5h ceiling
    full = account_row(work | {"gauges": {"five_hour": gauge(1.0, 60)}}, SCHEDULER_SETTINGS, NOW)
    assert full.tightest.tone.value == "bad"


def test_api_key_rows_say_there_is_no_quota_instead_of_empty_gauges():
    row = account_row(account("api") | {"kind": "api_key"}, SCHEDULER_SETTINGS, NOW)
    assert row.windows == () and row.tightest is None
    assert row.text == "● api — no quota data (API key)"


def test_antigravity_gauges_are_rendered_as_they_come():
    ag = account("ag") | {
        "provider": "antigravity",
        "gauges": {
            "claude": gauge(0.5, 600),
            "gemini_pro": gauge(0.2),
            "gemini_flash": gauge(0, cold=True),
        },
    }
    row = account_row(ag, SCHEDULER_SETTINGS, NOW)
    assert [w.label for w in row.windows] == ["Claude", "Gemini Pro", "Gemini Flash"]
    assert row.tightest.label == "Claude"


def test_forecast_text_only_where_the_service_forecast_one():
    work = account("work") | {
        "gauges": {"five_hour": gauge(0.88, 2 * 3600 + 40 * 60)},
        "forecast": {
            "five_hour": {
                "runs_out_at": NOW + 70 * 60,
                "resets_at": NOW + 160 * 60,
                "rate_per_hour": 0.1,
            }
        },
    }
    row = account_row(work, SCHEDULER_SETTINGS, NOW)
    assert row.windows[0].text == (
        "5h 88% · resets in 2h 40m — runs out in ~1h 10m, resets in 2h 40m"
    )
    assert row.windows[1].forecast is None


def test_updated_line():
    assert updated_line([account("a")], NOW) == "No quota readings yet · Refresh"
    a = account("a") | {
        "gauges": {
            "five_hour": gauge(0.1, observed_ago=20),
            "seven_day": gauge(0.1, observed_ago=90),
        }
    }
    assert updated_line([a], NOW) == "Updated 20s ago · Refresh"


# --- the painted menu -----------------------------------------------------------------------------


def test_rows_are_painted_with_a_bar_and_hovering_opens_the_submenu(qtbot, service):
    now = service.clock.now()
    gauges = {"five_hour": gauge(0.5, 3600) | {"resets_at": now + 3600, "observed_at": now - 20}}
    service.set_accounts(
        [account("work", current=True) | {"gauges": gauges}, account("home", "cooling", id=2)]
    )
    bridge = Bridge(service)
    tray = Tray(bridge)
    tray.menu.aboutToShow.emit()
    assert texts(tray.menu)[3] == "Updated 20s ago · Refresh"
    tray.menu.popup(QPoint(10, 10))
    row = tray.rows["work"]
    qtbot.waitUntil(row.isVisible, timeout=2000)
    assert row.accessibleName() == "● work [current] — 5h 50% · resets in 1h 00m"
    image = row.grab().toImage()
    highlight = row.palette().color(QPalette.ColorRole.Highlight)
    # the bar's fill: Highlight-coloured pixels on the row's middle line
    y = image.height() // 2
    filled = sum(1 for x in range(image.width()) if _close(QColor(image.pixel(x, y)), highlight))
    assert filled > 10

    sub = tray.account_menu("work")
    tray.menu.setActiveAction(row.action)
    qtbot.waitUntil(sub.isVisible, timeout=2000)
    assert texts(sub)[:2] == ["work: ok", "5h 50% · resets in 1h 00m"]
    tray.menu.hide()


async def test_refresh_line_polls_quotas(qtbot, service):
    calls = []
    service.refresh_quotas = lambda: calls.append(1) or 0
    bridge = Bridge(service)
    tray = Tray(bridge)
    tray.menu.aboutToShow.emit()
    tray.updated_action.trigger()
    await bridge.wait_idle()
    assert calls == [1]


def _close(a: QColor, b: QColor) -> bool:
    return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue()) < 30
