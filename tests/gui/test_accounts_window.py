"""The Accounts window (R-UI-2): cards, gauges, badges, the limit, and live updates."""

import asyncio
from datetime import UTC, datetime

from gui_fakes import account
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QMessageBox

from sublane_desktop.gui.accounts_window import AccountsWindow
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.colours import TEXT_CONTRAST, contrast, tone_colour
from sublane_desktop.gui.gauge import GaugeLook
from sublane_desktop.gui.pool_status import Tone
from tests.fake_upstream import Reply


def make_window(qtbot, bridge, **kwargs):
    window = AccountsWindow(bridge, **kwargs)
    qtbot.addWidget(window)
    return window


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


# --- on the fake service -------------------------------------------------------------------------


def test_one_card_per_account_with_markers_badges_and_gauges(qtbot, service):
    now = service.clock.now()
    gauges = {
        "five_hour": {
            "utilization": 0.42,
            "resets_at": now + 7200,
            "observed_at": now,
            "cold": False,
            "stale": False,
        }
    }
    codex = account("cx", "quota_exhausted", id=3) | {"provider": "codex"}
    service.set_accounts(
        [
            account("work", "busy", current=True) | {"gauges": gauges, "in_flight": 2},
            account("home", "paused", id=2) | {"fable_current": True},
            codex,
        ]
    )
    window = make_window(qtbot, Bridge(service))
    assert list(window.cards) == [1, 2, 3]
    work, home, cx = (window.card_named(n) for n in ("work", "home", "cx"))
    assert not work.current_marker.isHidden() and work.fable_marker.isHidden()
    assert home.current_marker.isHidden() and not home.fable_marker.isHidden()
    assert work.badge_texts() == ["Busy"] and home.badge_texts() == ["Paused"]
    assert cx.badge_texts() == ["Limit reached"]
    assert work.in_flight_label.text() == "2 running · at most" and work.limit.value() == 2
    assert work.gauges["five_hour"].caption == "42% · resets in 2h 00m"
    assert work.gauges["seven_day"].look is GaugeLook.COLD  # never observed: unknown, not 0%
    assert work.gauges["fable"].caption == "no data yet"
    assert list(cx.gauges) == ["five_hour", "seven_day"]  # no Fable bucket outside Claude
    assert home.pause_button.text() == "Resume" and work.pause_button.text() == "Pause"
    assert window.pool_label.text() == "2 requests running · up to 8 at once"


def test_counts_read_as_words_not_jargon(qtbot, service):
    """Second newcomer pass: "0 in flight · cap 8" and "in flight 1 /" meant nothing to a
    person who never read the spec."""
    service.set_accounts([account("work", "busy") | {"in_flight": 1}])
    window = make_window(qtbot, Bridge(service))
    texts = [window.pool_label.text(), window.card_named("work").in_flight_label.text()]
    assert texts == ["1 request running · up to 8 at once", "1 running · at most"]
    assert not [t for t in texts for jargon in ("in flight", "cap ") if jargon in t]


def test_a_card_names_its_provider_and_says_current_for_what(qtbot, service):
    """Third newcomer pass: a card said "anthropic" (the provider's id) and a bare "current",
    where the tray says "current for Claude"."""
    service.set_accounts(
        [account("work", current=True) | {"fable_current": True, "provider": "anthropic"}]
    )
    card = make_window(qtbot, Bridge(service)).card_named("work")
    assert card.provider_label.text() == "Claude"
    assert (card.current_marker.text, card.fable_marker.text) == (
        "current for Claude",
        "current for Fable",
    )


def test_follows_the_service_without_reopening(qtbot, service):
    window = make_window(qtbot, Bridge(service))
    service.set_accounts([account("work", "quota_exhausted"), account("new", "ok", id=5)])
    qtbot.waitUntil(lambda: list(window.cards) == [1, 5], timeout=1000)
    assert window.card_named("work").badge_texts() == ["Limit reached"]
    service.set_accounts([])
    qtbot.waitUntil(lambda: not window.cards, timeout=1000)
    assert not window.placeholder.isHidden()


def test_buttons_ask_for_the_other_windows(qtbot, service):
    window = make_window(qtbot, Bridge(service), requests_available=True)
    for button, signal in [
        (window.add_button, window.addAccountRequested),
        (window.settings_button, window.settingsRequested),
        (window.keys_button, window.keysRequested),
        (window.setup_button, window.setupToolRequested),
        (window.requests_button, window.requestsRequested),
    ]:
        with qtbot.waitSignal(signal, timeout=1000):
            button.click()
    QApplication.clipboard().clear()
    window.copy_button.click()
    assert QApplication.clipboard().text() == "http://127.0.0.1:8765"


def test_close_hides_with_a_tray_and_quits_without_one(qtbot, service):
    bridge = Bridge(service)
    hiding = make_window(qtbot, bridge, quit_on_close=False)
    hiding.show()
    qtbot.waitExposed(hiding)
    with qtbot.assertNotEmitted(bridge.quitRequested):
        hiding.close()
    assert not hiding.isVisible()
    # Without a tray the window is the app: closing it asks (R-UI-8).
    main = make_window(qtbot, bridge, quit_on_close=True)
    main.show()
    qtbot.waitExposed(main)
    with qtbot.assertNotEmitted(bridge.quitRequested):
        main.close()
        assert main.close_box is not None and "no system tray" in main.close_box.text()
        main.close_box.button(main.close_box.StandardButton.Cancel).click()
    assert main.isVisible() and main.close_box is None
    with qtbot.assertNotEmitted(bridge.quitRequested):
        main.close()
        main.serve_choice.click()  # keep serving: the window goes, the proxy stays
    assert not main.isVisible()
    main.show()
    with qtbot.waitSignal(bridge.quitRequested, timeout=1000):
        main.close()
        main.quit_choice.click()


# --- on a real service -----------------------------------------------------------------------------


async def test_editing_the_limit_calls_the_method_the_api_calls(qtbot, live, monkeypatch):
    acc = await live.add_account("a", "tok-a")
    calls = []
    real = live.service.set_limit

    async def spy(ref, limit):
        calls.append((ref, limit))
        return await real(ref, limit)

    monkeypatch.setattr(live.service, "set_limit", spy)
    window = make_window(qtbot, live.bridge)
    card = window.card_named("a")
    card.limit.setValue(5)
    await live.bridge.wait_idle()
    assert calls == [(acc, 5)]
    assert (await live.runtime("a"))["max_concurrency"] == 5

    # The management API lands in the same method, and the window follows it live.
    status, _ = await live.api("PATCH", f"/api/accounts/{acc}/limits", {"max_concurrency": 3})
    assert status == 200 and calls == [(acc, 5), (acc, 3)]
    qtbot.waitUntil(lambda: card.limit.value() == 3, timeout=1000)
    assert card.limit.minimum() == 1 and card.limit.maximum() == 8


async def test_cooling_counts_down_and_returns_to_ok(qtbot, live):
    await live.add_account("a", "tok-a")
    key = await live.create_key()
    live.upstream.script("tok-a", Reply(status=529, error_type="overloaded_error"))
    assert await live.message(key) == 529
    window = make_window(qtbot, live.bridge)
    card = window.card_named("a")
    (badge,) = card.badge_texts()
    # the evidence that holds it (R-OBS-3): a 529 is an upstream error, on the ladder
    assert badge.startswith("Cooling until ") and badge.endswith(" · 15s")
    assert card.reason_label.text() == "the provider returned errors"
    assert card.clear_button.isEnabled()

    live.clock.advance(5)  # the 1 s tick redraws the countdown; no event, no database
    qtbot.waitUntil(lambda: card.badge_texts()[0].endswith(" · 10s"), timeout=2000)
    live.clock.advance(11)  # past the cooldown: one recovery probe may go
    qtbot.waitUntil(lambda: card.badge_texts() == ["Testing with the next request"], timeout=2000)
    assert await live.message(key) == 200  # the probe succeeds
    qtbot.waitUntil(lambda: card.badge_texts() == ["Ready"], timeout=1000)
    assert not card.clear_button.isEnabled()


async def test_opening_and_refresh_poll_quotas(qtbot, live, monkeypatch):
    await live.add_account("a", "tok-a")
    now = live.clock.now()
    live.upstream.usage_for["tok-a"] = {
        "five_hour": {"utilization": 97.0, "resets_at": iso(now + 3600)},
        "seven_day": {"utilization": 40.0, "resets_at": iso(now + 3 * 86400)},
    }
    started = []
    want = live.service.refresher.want
    monkeypatch.setattr(
        live.service.refresher, "want", lambda *a, **k: started.extend(want(*a, **k)) or started
    )
    window = make_window(qtbot, live.bridge)
    window.show()  # opening the window polls (R-GAUGE-3)
    await live.bridge.wait_idle()
    await asyncio.gather(*started)
    assert live.upstream.usage_reads == ["tok-a"]
    card = window.card_named("a")
    qtbot.waitUntil(lambda: card.gauges["five_hour"].look is GaugeLook.WARN, timeout=1000)
    assert card.gauges["five_hour"].caption == "97% · resets in 1h 00m"
    assert card.gauges["seven_day"].caption == "40% · resets in 3d 0h"
    assert card.gauges["fable"].look is GaugeLook.COLD

    window.refresh_button.click()  # a person asked: the 5-minute floor does not apply
    await live.bridge.wait_idle()
    await asyncio.gather(*started)
    assert live.upstream.usage_reads == ["tok-a", "tok-a"]


async def test_disable_in_the_accounts_window_asks_first_as_the_tray_does(qtbot, live):
    """Third newcomer pass: the card's Disable acted at once (R-UI-12: Disable asks first);
    the question's button says "Disable" and Cancel is the default."""
    await live.add_account("a", "tok-a")
    window = make_window(qtbot, live.bridge)
    window.show()
    card = window.card_named("a")
    assert card.enable_action.text() == "Disable…"
    card.enable_action.trigger()
    box = window.confirm_box
    assert box is not None and box.text().startswith("a will serve nothing")
    assert box.button(QMessageBox.StandardButton.Yes).text() == "Disable"
    assert box.defaultButton() is box.button(QMessageBox.StandardButton.Cancel)
    box.button(QMessageBox.StandardButton.Cancel).click()
    await live.bridge.wait_idle()
    assert live.service.account_view(1)["state"] != "disabled"

    card.enable_action.trigger()
    window.confirm_box.button(QMessageBox.StandardButton.Yes).click()
    await live.bridge.wait_idle()
    assert live.service.account_view(1)["state"] == "disabled"
    qtbot.waitUntil(lambda: card.enable_action.text() == "Enable", timeout=2000)
    card.enable_action.trigger()  # enabling needs no question
    await live.bridge.wait_idle()
    assert live.service.account_view(1)["state"] != "disabled"


async def test_remove_asks_first(qtbot, live):
    await live.add_account("a", "tok-a")
    await live.add_account("b", "tok-b")
    window = make_window(qtbot, live.bridge)
    window.show()
    card = window.card_named("a")
    card.remove_action.trigger()
    window.confirm_box.button(QMessageBox.StandardButton.Cancel).click()
    await live.bridge.wait_idle()
    assert [a["name"] for a in live.service.accounts_runtime()["accounts"]] == ["a", "b"]

    card.remove_action.trigger()
    assert "Remove a?" in window.confirm_box.text()
    window.confirm_box.button(QMessageBox.StandardButton.Yes).click()
    await live.bridge.wait_idle()
    _, body = await live.api("GET", "/api/accounts/runtime")
    assert [a["name"] for a in body["accounts"] if a["state"] != "disabled"] == ["b"]
    qtbot.waitUntil(
        lambda: (
            [c.account["name"] for c in window.cards.values() if c.account["state"] != "disabled"]
            == ["b"]
        ),
        timeout=1000,
    )


async def test_a_failed_lever_is_shown(qtbot, live):
    await live.add_account("a", "tok-a")
    window = make_window(qtbot, live.bridge)
    await live.bridge.remove_account("a")
    live.bridge.switch("no-such-account")
    await live.bridge.wait_idle()
    assert window.error_label.text().startswith("switch failed: ")


def test_api_key_cards_say_no_quota_and_forecasts_show_under_the_gauges(qtbot, service):
    now = service.clock.now()
    gauges = {
        "five_hour": {
            "utilization": 0.88,
            "resets_at": now + 9600,
            "observed_at": now,
            "cold": False,
            "stale": False,
        }
    }
    forecast = {
        "five_hour": {"runs_out_at": now + 4200, "resets_at": now + 9600, "rate_per_hour": 0.1}
    }
    service.set_accounts(
        [
            account("work", current=True) | {"gauges": gauges, "forecast": forecast},
            account("api", id=2) | {"kind": "api_key"},
        ]
    )
    window = make_window(qtbot, Bridge(service))
    work, api = window.card_named("work"), window.card_named("api")
    assert api.gauges == {} and not api.quota_note.isHidden()
    assert api.quota_note.text() == "API key: no subscription quota"
    assert work.quota_note.isHidden()
    assert work.forecast_label.text() == "5h: runs out in ~1h 10m, resets in 2h 40m"
    assert not work.forecast_label.isHidden()
    service.set_accounts([account("work", current=True) | {"gauges": gauges}])
    qtbot.waitUntil(lambda: window.card_named("work").forecast_label.isHidden(), timeout=2000)


async def test_history_button_charts_the_stored_readings_of_7_days(qtbot, live):
    """R-UI-11: readings from real quota polls are stored and drawn per window."""
    await live.add_account("a", "tok-a")
    window = make_window(qtbot, live.bridge)
    for util in (10.0, 30.0, 55.0):
        now = live.clock.now()
        live.upstream.usage_for["tok-a"] = {
            "five_hour": {"utilization": util, "resets_at": iso(now + 3600)},
            "seven_day": {"utilization": util / 2, "resets_at": iso(now + 3 * 86400)},
        }
        live.service.refresh_quotas()
        await asyncio.gather(*live.service.refresher._running.values())
        live.clock.advance(3600)
    card = window.card_named("a")
    assert card.chart.isHidden()
    card.history_button.click()
    assert not card.chart.isHidden()
    await card.history_task
    qtbot.waitUntil(lambda: card.chart.loaded, timeout=1000)
    assert [u for _, u in card.chart.series["five_hour"]] == [0.10, 0.30, 0.55]
    assert [u for _, u in card.chart.series["seven_day"]] == [0.05, 0.15, 0.275]
    assert card.chart.series["fable"] == []
    assert card.chart.accessibleDescription() == "6 readings over 7 days for 5h, 7d, Fable"
    # the newest reading is drawn at its place: an hour before the right edge, 55 % high
    point = card.chart.point_at(*card.chart.series["five_hour"][-1])
    plot = card.chart.plot_rect()
    assert plot.left() < point.x() < plot.right()
    assert abs((plot.bottom() - point.y()) / plot.height() - 0.55) < 0.01
    # Fault 13: three hours of readings fill the chart instead of sitting at its right edge,
    # and the plot is tall enough to tell the lines apart.
    first = card.chart.point_at(*card.chart.series["five_hour"][0])
    assert first.x() - plot.left() < 0.05 * plot.width()
    assert card.chart.span_words().startswith("since ")
    assert plot.height() >= 8 * card.chart.fontMetrics().height()
    card.history_button.click()
    assert card.chart.isHidden()


def _face(button) -> QColor:
    """The colour of a button's face, as painted: a pixel inside its frame, beside the text."""
    image = button.grab().toImage()
    return QColor(image.pixel(4 * round(image.devicePixelRatio()), image.height() // 2))


def _distance(a: QColor, b: QColor) -> int:
    return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue())


async def test_the_history_button_looks_on_while_its_history_is_shown(qtbot, live):
    """Third newcomer pass: checked, History was the button grey a shade darker, which read as
    greyed out beside a disabled Clear cooldown. On, it wears the selection colours."""
    await live.add_account("a", "tok-a")
    window = make_window(qtbot, live.bridge)
    window.show()
    qtbot.waitExposed(window)
    card = window.card_named("a")
    button = card.history_button
    palette = button.palette()
    highlight, grey = (
        palette.color(QPalette.ColorRole.Highlight),
        palette.color(QPalette.ColorRole.Button),
    )
    assert button.isCheckable() and not button.isChecked()
    off = _face(button)
    assert _distance(off, grey) < _distance(off, highlight)

    button.click()
    await card.history_task
    assert button.isChecked() and card.chart.isVisible()
    on = _face(button)
    assert _distance(on, highlight) < _distance(on, grey)  # the selection colour, not grey
    words = button.palette().color(QPalette.ColorRole.ButtonText)
    assert contrast(words, button.palette().color(QPalette.ColorRole.Button)) >= TEXT_CONTRAST

    # The desktop switches theme while it is on: it takes the new selection colour (as the
    # app makes it readable: compare with what the card has, not with the colour set).
    app = QApplication.instance()
    before = app.palette()
    switched = QPalette(before)
    switched.setColor(QPalette.ColorRole.Highlight, QColor("#a0309a"))

    def wears_the_cards_highlight() -> bool:
        chosen = card.palette().color(QPalette.ColorRole.Highlight)
        return button.palette().color(QPalette.ColorRole.Button) == chosen

    try:
        app.setPalette(switched)
        qtbot.waitUntil(
            lambda: card.palette().color(QPalette.ColorRole.Highlight) != highlight, timeout=2000
        )
        qtbot.waitUntil(wears_the_cards_highlight, timeout=2000)
    finally:
        app.setPalette(before)
    qtbot.waitUntil(wears_the_cards_highlight, timeout=2000)

    button.click()
    assert not button.isChecked() and card.chart.isHidden()
    assert _distance(_face(button), grey) < _distance(_face(button), highlight)


async def test_antigravity_family_gauges_from_fetch_available_models(
    qtbot, live, antigravity_upstream
):
    """R-AG-4 in the window: opening it reads the account's quota from the (fake) upstream,
    and the card draws whatever gauges the account has — here its three model families."""
    live.service.env["SUBLANE_ANTIGRAVITY_BASE_URL"] = antigravity_upstream.url
    await live.add_antigravity_account("google")
    now = live.clock.now()
    antigravity_upstream.quota = {
        "gemini-3-pro-high": {
            "quotaInfo": {"remainingFraction": 0.6, "resetTime": iso(now + 2 * 3600)}
        },
        "claude-sonnet-4-5": {
            "quotaInfo": {"remainingFraction": 0.0, "resetTime": iso(now + 3600)}
        },
    }
    window = make_window(qtbot, live.bridge)
    card = window.card_named("google")
    assert list(card.gauges) == ["claude", "gemini_pro", "gemini_flash"]
    window.show()  # opening the window polls (R-GAUGE-3)
    await live.bridge.wait_idle()
    await asyncio.gather(*live.service.refresher._running.values())
    qtbot.waitUntil(lambda: card.gauges["gemini_pro"].caption.startswith("40%"), timeout=3000)
    assert card.gauges["gemini_pro"].caption == "40% · resets in 2h 00m"
    assert card.gauges["claude"].caption == "100% · resets in 1h 00m"
    assert card.gauges["gemini_flash"].look is GaugeLook.COLD  # not listed: unknown, not 0%
    assert antigravity_upstream.quota_reads == [("ya29.google", "proj-fake-1")]


async def test_disable_enable_and_verify_from_the_more_menu(qtbot, live):
    acc = await live.add_account("a", "tok-a")
    window = make_window(qtbot, live.bridge)
    card = window.cards[acc]
    assert card.enable_action.text() == "Disable…"
    card.enable_action.trigger()
    window.confirm_box.button(QMessageBox.StandardButton.Yes).click()  # it asks first
    await live.bridge.wait_idle()
    assert (await live.runtime("a"))["state"] == "disabled"
    qtbot.waitUntil(lambda: card.enable_action.text() == "Enable", timeout=1000)
    card.enable_action.trigger()
    await live.bridge.wait_idle()
    assert (await live.runtime("a"))["state"] == "ok"
    card.verify_action.trigger()
    await live.bridge.wait_idle()
    qtbot.waitUntil(lambda: window.error_label.text().startswith("a: login works"), timeout=1000)
    # a login that works is not said in the alarm colour (fault 9: it was red)
    said = window.error_label.palette().color(QPalette.ColorRole.WindowText)
    assert said == window.palette().color(QPalette.ColorRole.WindowText)
    live.upstream.expired.add("tok-a")
    live.upstream.refresh_grants.clear()
    card.verify_action.trigger()
    await live.bridge.wait_idle()
    qtbot.waitUntil(lambda: window.error_label.text().startswith("a: login refused"), timeout=1000)
    said = window.error_label.palette().color(QPalette.ColorRole.WindowText)
    assert said == tone_colour(Tone.BAD, window.palette())


def test_the_window_grows_to_show_five_accounts_where_the_screen_allows(qtbot, service):
    """Fault 13: five accounts sat behind a scroll bar in a window with room to grow."""
    window = make_window(qtbot, Bridge(service))
    window.show()
    qtbot.waitExposed(window)
    opened = window.height()
    service.set_accounts([account(f"acct-{i}", id=i) for i in range(1, 6)])
    qtbot.waitUntil(lambda: len(window.cards) == 5, timeout=2000)
    area = window.screen().availableGeometry()
    needed = window.list_widget.sizeHint().height()
    qtbot.waitUntil(lambda: window.height() > opened, timeout=2000)
    assert window.frameGeometry().bottom() <= area.bottom()
    if needed + (window.height() - window.list_area.viewport().height()) <= area.height():
        qtbot.waitUntil(lambda: not window.list_area.verticalScrollBar().isVisible(), timeout=2000)
    else:  # a small screen: as tall as it allows, and the rest scrolls
        assert window.frameGeometry().height() >= area.height() - 2


def test_family_names_are_whole_and_bars_line_up_across_cards(qtbot, service):
    """Fault 6: Antigravity's "Gemini Pro" / "Gemini Flash" were cut to "Gemir" in a label
    column sized for "Fable"; every card's bars start at one x, so they line up."""
    claude = account("work", id=1) | {
        "gauges": {w: {"utilization": 0.4} for w in ("five_hour", "seven_day", "fable")}
    }
    google = account("google", id=2) | {
        "provider": "antigravity",
        "gauges": {w: {"utilization": 0.2} for w in ("claude", "gemini_pro", "gemini_flash")},
    }
    service.set_accounts([claude, google])
    window = make_window(qtbot, Bridge(service))
    window.show()
    qtbot.waitExposed(window)
    bars = [bar for card in window.cards.values() for bar in card.gauges.values()]
    assert {bar.label for bar in bars} >= {"Gemini Pro", "Gemini Flash", "Fable"}
    for bar in bars:
        room = bar.bar_rect().left() - 4  # the label is drawn left of the bar
        assert bar.fontMetrics().horizontalAdvance(bar.label) <= room, bar.label
    assert len({bar.mapTo(window, bar.bar_rect().topLeft()).x() for bar in bars}) == 1


def test_only_the_levers_that_apply_show_on_a_card(qtbot, service):
    """R-UI-12, as in the tray: no Switch to or Clear cooldown on an account that cannot serve."""
    window = make_window(qtbot, Bridge(service))
    service.set_accounts(
        [
            account("serving", "ok", id=1),
            account("resting", "paused", id=2),
            account("off", "disabled", id=3),
            account("signed-out", "auth_failed", id=4),
        ]
    )
    qtbot.waitUntil(lambda: len(window.cards) == 4, timeout=1000)
    shown = {
        name: (
            window.card_named(name).switch_button.isVisibleTo(window),
            window.card_named(name).clear_button.isVisibleTo(window),
        )
        for name in ("serving", "resting", "off", "signed-out")
    }
    assert shown == {
        "serving": (True, True),
        "resting": (False, False),
        "off": (False, False),
        "signed-out": (False, False),
    }
