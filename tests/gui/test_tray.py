from gui_fakes import account
from PySide6.QtWidgets import QApplication

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.pool_status import PoolHealth
from sublane_desktop.gui.tray import Tray
from tests.fake_upstream import Reply


def image_of(icon):
    return icon.pixmap(22, 22).toImage()


def texts(menu):
    return [a.text() for a in menu.actions()]


def action(menu, prefix):
    return next(a for a in menu.actions() if a.text().startswith(prefix))


# --- on the fake service -------------------------------------------------------------------------


def test_icon_follows_pool_health(qtbot, service):
    service.set_accounts([account("work", "ok", current=True), account("home", "busy", id=2)])
    tray = Tray(Bridge(service))
    assert tray.health is PoolHealth.OK
    ok_image = image_of(tray.icon.icon())
    assert not ok_image.isNull()

    service.set_accounts([account("work", "ok", current=True), account("home", "cooling", id=2)])
    qtbot.waitUntil(lambda: tray.health is PoolHealth.WARN, timeout=1000)
    warn_image = image_of(tray.icon.icon())
    assert warn_image != ok_image

    service.set_accounts([account("work", "quota_exhausted"), account("home", "cooling", id=2)])
    qtbot.waitUntil(lambda: tray.health is PoolHealth.DOWN, timeout=1000)
    down_image = image_of(tray.icon.icon())
    assert down_image not in (ok_image, warn_image)

    service.set_accounts([])
    qtbot.waitUntil(lambda: tray.health is PoolHealth.DOWN, timeout=1000)


def test_tooltip_names_endpoint_current_accounts_and_tightest_gauge(qtbot, service):
    service.set_accounts([account("work", "ok", id=1, current=True)])
    tray = Tray(Bridge(service))
    assert tray.icon.toolTip() == "SubLane — http://127.0.0.1:8765\nCurrent: work"
    gauges = {
        "five_hour": {
            "utilization": 0.93,
            "resets_at": service.clock.now() + 600,
            "observed_at": service.clock.now(),
            "cold": False,
            "stale": False,
        }
    }
    service.set_accounts(
        [
            account("work"),
            account("home", id=2, current=True) | {"fable_current": False, "gauges": gauges},
            account("f", id=3) | {"fable_current": True},
        ]
    )
    qtbot.waitUntil(
        lambda: (
            tray.icon.toolTip().splitlines()[1:]
            == ["Current: home", "Fable lane: f", "Tightest: home 5h 93% · resets in 10m 00s"]
        ),
        timeout=1000,
    )


def test_menu_is_rebuilt_on_show(qtbot, service):
    tray = Tray(Bridge(service), requests_available=False)
    tray.menu.aboutToShow.emit()
    assert texts(tray.menu) == [
        "● work [current] — no quota data yet",
        "◔ home — cooling · no quota data yet",
        "",
        "No quota readings yet · Refresh",
        "",
        "Open Accounts",
        "Open Requests",
        "Settings…",
        "Set up a tool…",
        "Copy endpoint URL",
        "",
        "Quit",
    ]
    assert not action(tray.menu, "Open Requests").isEnabled()  # no Requests window installed
    work = tray.account_menu("work")
    assert texts(work) == [
        "work: ok",
        "5h —",
        "7d —",
        "Fable —",
        "",
        "Switch to (pin for 5 minutes)",
        "Pause",
        "Clear cooldown",
        "Disable",
        "Verify login",
    ]
    assert not action(work, "Clear cooldown").isEnabled()  # nothing to clear

    service.set_accounts(
        [
            account("solo", "paused")
            | {"pinned_until": service.clock.now() + 125, "failure_streak": 1}
        ]
    )
    tray.menu.aboutToShow.emit()
    assert texts(tray.menu)[0:2] == ["‖ solo — paused by you · no quota data yet", ""]
    solo = tray.account_menu("solo")
    assert texts(solo)[-5:] == [
        "Pinned — 2m 05s left (switch again to renew)",
        "Resume",
        "Clear cooldown",
        "Disable",
        "Verify login",
    ]
    assert action(solo, "Clear cooldown").isEnabled()


def test_menu_items_emit_their_requests(qtbot, service):
    tray = Tray(Bridge(service), requests_available=True)
    tray.menu.aboutToShow.emit()
    assert action(tray.menu, "Open Requests").isEnabled()
    for text, signal in [
        ("Open Accounts", tray.openRequested),
        ("Open Requests", tray.requestsRequested),
        ("Settings…", tray.settingsRequested),
        ("Set up a tool…", tray.setupToolRequested),
    ]:
        with qtbot.waitSignal(signal, timeout=1000):
            action(tray.menu, text).trigger()

    QApplication.clipboard().clear()
    action(tray.menu, "Copy endpoint URL").trigger()
    assert QApplication.clipboard().text() == "http://127.0.0.1:8765"


def test_left_click_opens_accounts(qtbot, service):
    tray = Tray(Bridge(service))
    with qtbot.waitSignal(tray.openRequested, timeout=1000):
        tray.icon.activated.emit(tray.icon.ActivationReason.Trigger)


def test_quit_action_asks_bridge_to_quit(qtbot, service):
    bridge = Bridge(service)
    tray = Tray(bridge)
    tray.menu.aboutToShow.emit()
    with qtbot.waitSignal(bridge.quitRequested, timeout=1000):
        action(tray.menu, "Quit").trigger()


def test_tray_keeps_app_alive_without_windows(qtbot, service, qapp):
    qapp.setQuitOnLastWindowClosed(True)
    Tray(Bridge(service))
    assert qapp.quitOnLastWindowClosed() is False


# --- on a real service: the menu's levers are the API's levers ------------------------------------


async def test_switch_pause_and_clear_cooldown_from_the_menu(qtbot, live):
    a = await live.add_account("a", "tok-a")
    await live.add_account("b", "tok-b")
    key = await live.create_key()
    tray = Tray(live.bridge)

    # Switch to b: pinned for 5 minutes on both lanes, as GET /api/accounts/runtime says.
    tray.menu.aboutToShow.emit()
    action(tray.account_menu("b"), "Switch to").trigger()
    await live.bridge.wait_idle()
    b = await live.runtime("b")
    assert b["pinned_until"] == live.clock.now() + 300 and b["current"] and b["fable_current"]
    qtbot.waitUntil(lambda: "Current: b" in tray.icon.toolTip(), timeout=1000)
    live.clock.advance(60)
    tray.menu.aboutToShow.emit()
    assert "Pinned — 4m 00s left (switch again to renew)" in texts(tray.account_menu("b"))

    # Pause b, then resume it.
    action(tray.account_menu("b"), "Pause").trigger()
    await live.bridge.wait_idle()
    assert (await live.runtime("b"))["state"] == "paused"
    qtbot.waitUntil(lambda: "b: paused by you" in tray.icon.toolTip(), timeout=1000)
    assert tray.health is PoolHealth.OK  # a pause the person chose is not a warning
    tray.menu.aboutToShow.emit()
    action(tray.account_menu("b"), "Resume").trigger()
    await live.bridge.wait_idle()
    assert (await live.runtime("b"))["paused"] is False

    # a fails upstream and cools; Clear cooldown from the menu puts it back at once.
    live.upstream.script("tok-a", Reply(status=529, error_type="overloaded_error"))
    await live.api("POST", "/llmux/pause-account", {"account": "b", "paused": True})
    assert await live.message(key) == 529
    assert (await live.runtime("a"))["state"] == "cooling"
    qtbot.waitUntil(lambda: tray.health is PoolHealth.DOWN, timeout=1000)
    tray.menu.aboutToShow.emit()
    clear = action(tray.account_menu("a"), "Clear cooldown")
    assert clear.isEnabled()
    clear.trigger()
    await live.bridge.wait_idle()
    view = await live.runtime("a")
    assert view["state"] == "ok" and view["cooldown_until"] is None
    assert view["failure_streak"] == 0
    assert live.service.account_view(a)["state"] == "ok"
    qtbot.waitUntil(lambda: tray.health is PoolHealth.OK, timeout=1000)  # b paused: not a warning


async def test_disable_enable_and_verify_from_the_menu(qtbot, live):
    await live.add_account("a", "tok-a")
    await live.add_account("b", "tok-b")
    tray = Tray(live.bridge)
    tray.menu.aboutToShow.emit()
    action(tray.account_menu("b"), "Disable").trigger()
    await live.bridge.wait_idle()
    assert (await live.runtime("b"))["state"] == "disabled"
    tray.menu.aboutToShow.emit()
    action(tray.account_menu("b"), "Enable").trigger()  # the lever says what it will do
    await live.bridge.wait_idle()
    assert (await live.runtime("b"))["state"] == "ok"

    verdicts: list = []
    live.bridge.verified.connect(verdicts.append)
    tray.menu.aboutToShow.emit()
    action(tray.account_menu("a"), "Verify login").trigger()
    await live.bridge.wait_idle()
    assert [(v["name"], v["result"]) for v in verdicts] == [("a", "ok")]
    live.upstream.expired.add("tok-a")
    live.upstream.refresh_grants.clear()
    action(tray.account_menu("a"), "Verify login").trigger()
    await live.bridge.wait_idle()
    assert verdicts[-1]["result"] == "auth_failed"
