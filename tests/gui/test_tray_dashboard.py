"""R-UI-6 / R-UI-7: the tray menu is the dashboard — painted rows with the tightest window's
bar, percent and countdown, state glyphs and marks; submenus with every window, forecasts and
levers; the "updated … ago · Refresh" line."""

from __future__ import annotations

import pytest
from gui_fakes import account
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QEnterEvent, QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidgetAction

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.dashboard import account_row, pool_left, updated_line
from sublane_desktop.gui.pool_status import short_time
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
    assert row.text == "● work [current for Claude and Fable] — 5h 37% · 7d 97% · Fable 10%"
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
    assert row.text == "● api — API key: no subscription quota"


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
    assert texts(tray.menu)[3:5] == ["Claude pool left: 5h 50%", "Updated 20s ago · Refresh"]
    tray.menu.popup(QPoint(10, 10))
    row = tray.rows["work"]
    qtbot.waitUntil(row.isVisible, timeout=2000)
    assert row.accessibleName() == "● work [current for Claude] — 5h 50% · 7d — · Fable —"
    image = row.grab().toImage()
    highlight = row.palette().color(QPalette.ColorRole.Highlight)
    # the 5h bar's fill: a run of Highlight-coloured pixels on one of the row's lines
    filled = max(
        sum(1 for x in range(image.width()) if _close(QColor(image.pixel(x, y)), highlight))
        for y in range(image.height())
    )
    assert filled > 10

    sub = tray.account_menu("work")
    tray.menu.setActiveAction(row.action)
    qtbot.waitUntil(sub.isVisible, timeout=2000)
    assert texts(sub)[0] == "Switch to (pin for 5 minutes)"
    tray.menu.hide()


async def test_refresh_line_polls_quotas(qtbot, service):
    calls = []
    service.refresh_quotas = lambda: calls.append(1) or 2
    bridge = Bridge(service)
    tray = Tray(bridge)
    shown: list = []
    tray.icon.showMessage = lambda title, body, icon, ms: shown.append(title)
    tray.menu.aboutToShow.emit()
    tray.updated_action.trigger()
    await bridge.wait_idle()
    assert calls == [1]
    assert shown == ["Reading 2 accounts' quotas"]  # the lever answers (fault 9)


def _close(a: QColor, b: QColor) -> bool:
    return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue()) < 30


# --- R-UI-12: rows say the state in words, show every window, line up --------------------------


def test_rows_say_in_words_what_an_account_does_when_not_simply_serving():
    def said(state, **extra):
        row = account_row(account("a", state) | extra, SCHEDULER_SETTINGS, NOW)
        return None if row.status is None else row.status.words

    assert said("ok") is None and said("busy") is None
    assert said("paused") == "Paused"
    assert said("disabled") == "Disabled"
    assert said("auth_failed", auth_reason="credential missing") == "Sign in again"
    cooling = said("cooling", cooldown_until=NOW + 252)
    assert cooling == f"Cooling until {short_time(NOW + 252, NOW)} · 4m 12s"
    full = {"five_hour": gauge(1.0, 3600), "seven_day": gauge(0.5, 86400)}
    assert said("quota_exhausted", gauges=full) == (
        f"Limit reached (5h), resets {short_time(NOW + 3600, NOW)}"
    )
    gone = account_row(
        account("a", "auth_failed") | {"auth_reason": "credential missing"},
        SCHEDULER_SETTINGS,
        NOW,
    )
    assert gone.text == "✕ a — Sign in again (credential missing) — no quota data yet"


@pytest.mark.parametrize(
    "state, extra",
    [
        ("paused", {}),
        ("disabled", {}),
        ("auth_failed", {"auth_reason": "credential missing"}),
        ("cooling", {"cooldown_until": NOW + 252}),
        ("probing", {}),
        ("quota_exhausted", {"gauges": {"five_hour": gauge(1.0, 3600)}}),
    ],
)
def test_a_state_reads_the_same_in_the_accounts_badge_the_tray_row_and_the_tooltip(state, extra):
    """Casing fault of the second newcomer pass: the Accounts badge said "paused" where the
    tray row said "Paused" (and "auth failed" / "Sign in again", "quota exhausted" / "Limit
    reached"); the words now come from one place (pool_status.state_status)."""
    from sublane_desktop.gui.pool_status import badges, tooltip_text

    a = account("a", state) | extra
    row = account_row(a, SCHEDULER_SETTINGS, NOW)
    assert row.status is not None
    words = row.status.words
    badge = badges(a, NOW)[0][0]
    tip = tooltip_text("u", [a], SCHEDULER_SETTINGS, NOW).splitlines()
    assert badge == words
    if state != "disabled":  # the tooltip leaves out what the person switched off
        tip_line = next(line for line in tip if line.startswith("a: "))
        assert tip_line.removeprefix("a: ").startswith(words)
    assert words[0].isupper(), words


def test_short_time_names_the_day_when_it_is_not_today():
    assert ":" in short_time(NOW + 600, NOW) and " " not in short_time(NOW + 600, NOW)
    assert len(short_time(NOW + 3 * 86400, NOW).split(" ")) == 2  # "Tue 14:05"


def test_current_says_for_which_provider():
    claude = account("c", current=True)
    codex = account("x", id=2, current=True) | {"provider": "codex"}
    fable = account("f", id=3) | {"fable_current": True}
    marks = [account_row(a, SCHEDULER_SETTINGS, NOW).marks for a in (claude, codex, fable)]
    assert marks == [("current for Claude",), ("current for Codex",), ("current for Fable",)]


def test_pool_line_says_how_much_each_providers_pool_has_left():
    accounts = [
        account("a") | {"gauges": {"five_hour": gauge(0.2), "seven_day": gauge(0.5)}},
        account("b", id=2) | {"gauges": {"five_hour": gauge(0.6), "seven_day": gauge(1.3)}},
        account("off", "paused", id=3) | {"gauges": {"five_hour": gauge(0.0)}},
        account("x", id=4) | {"provider": "codex", "gauges": {"five_hour": gauge(0.25)}},
        account("k", id=5) | {"kind": "api_key"},
    ]
    assert pool_left(accounts) == [
        "Claude pool left: 5h 60% · 7d 25%",  # (80 + 40) / 2; (50 + 0) / 2; paused adds nothing
        "Codex pool left: 5h 75%",
    ]


def test_every_window_is_on_the_row_and_bars_line_up_across_rows(qtbot, service):
    now = service.clock.now()
    seen = {"observed_at": now - 5, "resets_at": now + 3600}
    service.set_accounts(
        [
            account("work", current=True)
            | {"gauges": {w: gauge(0.5) | seen for w in ("five_hour", "seven_day", "fable")}},
            account("ag", id=2)
            | {
                "provider": "antigravity",
                "gauges": {w: gauge(0.3) | seen for w in ("claude", "gemini_pro", "gemini_flash")},
            },
        ]
    )
    tray = Tray(Bridge(service))
    tray.menu.popup(QPoint(10, 10))
    work, ag = tray.rows["work"], tray.rows["ag"]
    qtbot.waitUntil(lambda: work.isVisible() and ag.isVisible(), timeout=2000)
    # Every window without opening anything: a line each, in the row itself.
    assert work.accessibleDescription().splitlines()[1:] == [
        "5h 50% · resets in 1h 00m",
        "7d 50% · resets in 1h 00m",
        "Fable 50% · resets in 1h 00m",
    ]
    assert len(ag.accessibleDescription().splitlines()) == 4
    # One set of columns for the whole menu, wide enough for "Gemini Flash": the bars start
    # at the same x on every row.
    assert work.columns == ag.columns
    assert work.columns.label > work.fontMetrics().horizontalAdvance("Gemini Flash")
    assert _bar_start(work) == _bar_start(ag) is not None
    tray.menu.hide()


def test_a_row_that_is_not_serving_does_not_draw_its_bars_as_if_it_were(qtbot, service):
    now = service.clock.now()
    reading = {"five_hour": gauge(0.6) | {"observed_at": now - 5, "resets_at": now + 3600}}
    service.set_accounts(
        [
            account("on", id=1) | {"gauges": reading},
            account("off", "paused", id=2) | {"gauges": reading},
        ]
    )
    tray = Tray(Bridge(service))
    tray.menu.popup(QPoint(10, 10))
    qtbot.waitUntil(lambda: tray.rows["off"].isVisible(), timeout=2000)
    assert _bar_start(tray.rows["on"]) is not None  # the serving account's bar: Highlight
    assert _bar_start(tray.rows["off"]) is None  # the paused one's: muted, not Highlight
    tray.menu.hide()


def test_updated_line_and_countdowns_tick_while_the_menu_is_open(qtbot, service):
    now = service.clock.now()
    reading = {"five_hour": gauge(0.6) | {"observed_at": now - 20, "resets_at": now + 3600}}
    service.set_accounts([account("work") | {"gauges": reading}])
    bridge = Bridge(service, tick_ms=20)
    tray = Tray(bridge)
    tray.menu.popup(QPoint(10, 10))
    qtbot.waitUntil(tray.rows["work"].isVisible, timeout=2000)
    assert tray.updated_action.text() == "Updated 20s ago · Refresh"
    service.clock.advance(100)
    qtbot.waitUntil(lambda: tray.updated_action.text() == "Updated 2m 00s ago · Refresh")
    assert "resets in 58m 20s" in tray.rows["work"].accessibleDescription()
    tray.menu.hide()


def _bar_start(row) -> int | None:
    """The leftmost x of a Highlight-coloured bar fill on the row's first window line."""
    image = row.grab().toImage()
    highlight = row.palette().color(QPalette.ColorRole.Highlight)
    xs = [
        x
        for y in range(image.height())
        for x in range(image.width())
        if _close(QColor(image.pixel(x, y)), highlight)
    ]
    return min(xs) if len(xs) > 10 else None


# --- fault 2 and fault 17: hovering is QMenu's, with its sloppy submenus ------------------------


def _enter(widget) -> None:
    """The pointer enters a widget (what X sends as a menu appears under it or is crossed)."""
    centre = QPointF(widget.width() / 2, widget.height() / 2)
    QApplication.sendEvent(widget, QEnterEvent(centre, centre, widget.mapToGlobal(centre)))


def test_submenu_stays_open_on_the_way_to_its_levers(qtbot, service):
    service.set_accounts(
        [account("work", current=True), account("home", id=2), account("third", id=3)]
    )
    tray = Tray(Bridge(service))
    tray.menu.popup(QPoint(10, 10))
    work, home = tray.rows["work"], tray.rows["home"]
    qtbot.waitUntil(work.isVisible, timeout=2000)
    # The menu appears under the pointer: no submenu opens by itself (fault 17).
    _enter(work)
    assert not any(tray.account_menu(n).isVisible() for n in tray.rows)
    # Hovering work opens its levers; heading for them across home's row keeps them open,
    # and home's submenu does not open in their place (fault 2).
    tray.menu.setActiveAction(work.action)
    qtbot.waitUntil(tray.account_menu("work").isVisible, timeout=2000)
    _enter(home)
    assert tray.account_menu("work").isVisible()
    assert not tray.account_menu("home").isVisible()
    tray.menu.hide()


def test_the_click_that_opened_the_menu_opens_no_submenu(qtbot, service):
    """Found by hand on a real X server with a tray host: the tray icon pops the menu up on the
    press of a click, so the release lands on the row under the pointer. A row that opened its
    levers on any release opened the first submenu by itself (fault 17), and that submenu,
    made active from outside QMenu's hover logic, closed as the pointer headed into it
    (fault 2). tests/gui/hover_probe.py walks the same path with a real pointer."""
    tray = Tray(Bridge(service))
    tray.menu.popup(QPoint(10, 10))
    qtbot.waitUntil(lambda: "work" in tray.rows and tray.rows["work"].isVisible(), timeout=2000)
    work = tray.rows["work"]
    QTest.mouseRelease(work, Qt.MouseButton.RightButton, pos=QPoint(20, 5))
    assert tray.menu.activeAction() is None
    assert not tray.account_menu("work").isVisible()
    tray.menu.hide()


def test_a_click_on_a_row_opens_its_levers(qtbot, service):
    tray = Tray(Bridge(service))
    tray.menu.popup(QPoint(10, 10))
    qtbot.waitUntil(lambda: "work" in tray.rows and tray.rows["work"].isVisible(), timeout=2000)
    QTest.mouseClick(tray.rows["work"], Qt.MouseButton.LeftButton, pos=QPoint(20, 5))
    qtbot.waitUntil(tray.account_menu("work").isVisible, timeout=2000)
    assert tray.menu.activeAction() is tray.rows["work"].action
    tray.menu.hide()


def test_submenu_holds_only_levers_so_the_keyboard_stops_on_each(qtbot, service):
    tray = Tray(Bridge(service))
    tray.menu.aboutToShow.emit()
    for name in tray.rows:
        sub = tray.account_menu(name)
        levers = [a for a in sub.actions() if not a.isSeparator()]
        assert levers and all(a.isEnabled() and not a.menu() for a in levers)
        assert not any(isinstance(a, QWidgetAction) for a in levers)


def test_the_pool_line_is_no_keyboard_stop_yet_reads_as_text(qtbot, service):
    now = service.clock.now()
    reading = {"five_hour": gauge(0.4) | {"observed_at": now - 5, "resets_at": now + 3600}}
    service.set_accounts([account("work") | {"gauges": reading}])
    tray = Tray(Bridge(service))
    tray.menu.popup(QPoint(10, 10))
    [line] = tray.pool_actions
    assert line.text() == "Claude pool left: 5h 60%" and not line.isEnabled()
    widget = line.defaultWidget()
    qtbot.waitUntil(widget.isVisible, timeout=2000)
    # painted in the active text colour, not the grey of a disabled item (R-UI-16)
    image = widget.grab().toImage()
    text = widget.palette().color(QPalette.ColorGroup.Active, QPalette.ColorRole.Text)
    inked = [
        QColor(image.pixel(x, y))
        for x in range(image.width())
        for y in range(image.height())
        if _close(QColor(image.pixel(x, y)), text)
    ]
    assert len(inked) > 20
    tray.menu.hide()


def _first_ink_x(image, band) -> int:
    """The leftmost column of `band` (a rect of `image`) with text in it: past the menu's
    frame, the first column holding a pixel unlike the menu's background (sampled inside)."""
    background = QColor(image.pixel(band.right() - 2, band.top() + 1))
    inside = next(
        x
        for x in range(band.left(), band.right())
        if all(
            _close(QColor(image.pixel(x, y)), background) for y in range(band.top(), band.bottom())
        )
    )
    for x in range(inside, band.right()):
        for y in range(band.top(), band.bottom()):
            if not _close(QColor(image.pixel(x, y)), background):
                return x
    raise AssertionError("no text in the band")


def test_the_pool_line_starts_where_the_items_text_starts(qtbot, service):
    """Third newcomer pass: "Claude pool left" sat about 5 px left of the "Updated … ago"
    item under it and of Open Accounts."""
    now = service.clock.now()
    reading = {"five_hour": gauge(0.4) | {"observed_at": now - 5, "resets_at": now + 3600}}
    service.set_accounts([account("work") | {"gauges": reading}])
    tray = Tray(Bridge(service))
    tray.menu.popup(QPoint(10, 10))
    [line] = tray.pool_actions
    qtbot.waitUntil(line.defaultWidget().isVisible, timeout=2000)
    image = tray.menu.grab().toImage()
    scale = image.devicePixelRatio()

    def ink(action) -> int:
        band = tray.menu.actionGeometry(action)
        band.setRect(*(round(v * scale) for v in band.getRect()))
        return _first_ink_x(image, band)

    pool_x = ink(line)
    assert pool_x > tray.menu.actionGeometry(line).left() * scale + 8  # text, not the frame
    assert abs(pool_x - ink(tray.updated_action)) <= 1
    [open_accounts] = [a for a in tray.menu.actions() if a.text() == "Open Accounts"]
    assert abs(pool_x - ink(open_accounts)) <= 1
    tray.menu.hide()


def test_the_keyboard_goes_from_a_row_straight_to_its_levers(qtbot, service):
    """Fault 2: with the keyboard the window lines were stops that showed nothing selected."""
    tray = Tray(Bridge(service))
    tray.menu.popup(QPoint(10, 10))
    qtbot.waitUntil(lambda: "work" in tray.rows and tray.rows["work"].isVisible(), timeout=2000)
    QTest.keyClick(tray.menu, Qt.Key.Key_Down)
    assert tray.menu.activeAction() is tray.rows["work"].action
    QTest.keyClick(tray.menu, Qt.Key.Key_Right)
    sub = tray.account_menu("work")
    qtbot.waitUntil(sub.isVisible, timeout=2000)
    assert sub.activeAction().text() == "Switch to (pin for 5 minutes)"
    QTest.keyClick(sub, Qt.Key.Key_Down)
    assert sub.activeAction().text() == "Pause"
    QTest.keyClick(sub, Qt.Key.Key_Left)
    qtbot.waitUntil(lambda: not sub.isVisible(), timeout=2000)
    QTest.keyClick(tray.menu, Qt.Key.Key_Down)
    assert tray.menu.activeAction() is tray.rows["home"].action
    tray.menu.hide()
