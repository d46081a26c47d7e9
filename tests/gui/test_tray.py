from gui_fakes import account
from PySide6.QtWidgets import QApplication, QMessageBox, QSystemTrayIcon

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.icons import health_icon
from sublane_desktop.gui.notifications import transitions
from sublane_desktop.gui.pool_status import PoolHealth
from sublane_desktop.gui.tray import Tray
from sublane_desktop.service.settings import validate_settings
from tests.fake_upstream import Reply

MessageIcon = QSystemTrayIcon.MessageIcon


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
            == [
                "Current: home",
                "Current for Fable: f",
                "Closest to its limit: home 5h 93% · resets in 10m 00s",
            ]
        ),
        timeout=1000,
    )


def test_menu_is_rebuilt_on_show(qtbot, service):
    tray = Tray(Bridge(service), requests_available=False)
    tray.menu.aboutToShow.emit()
    assert texts(tray.menu) == [
        "● work [current for Claude] — no quota data yet",
        "◔ home — Cooling — no quota data yet",
        "",
        "No quota readings yet · Refresh",
        "",
        "Open Accounts",
        "Open Requests",
        "Add account…",
        "Set up a tool…",
        "Settings…",
        "Welcome…",
        "Copy endpoint URL",
        "",
        "Quit",
    ]
    assert not action(tray.menu, "Open Requests").isEnabled()  # no Requests window installed
    # The submenu holds only levers, and only those that apply: nothing to clear here.
    work = tray.account_menu("work")
    assert texts(work) == [
        "Switch to (pin for 5 minutes)",
        "Pause",
        "Verify login",
        "",
        "Disable…",
    ]

    service.set_accounts(
        [
            account("solo", "paused")
            | {"pinned_until": service.clock.now() + 125, "failure_streak": 1}
        ]
    )
    tray.menu.aboutToShow.emit()
    assert texts(tray.menu)[0:2] == ["‖ solo — Paused — no quota data yet", ""]
    # Paused: not one to switch to, and no cooldown worth clearing (fault 9).
    assert texts(tray.account_menu("solo")) == ["Resume", "Verify login", "", "Disable…"]


def test_levers_appear_only_where_they_apply(qtbot, service):
    now = service.clock.now()
    service.set_accounts(
        [
            account("cool", "cooling", id=1) | {"cooldown_until": now + 60, "failure_streak": 2},
            account("off", "disabled", id=2) | {"failure_streak": 1},
            account("gone", "auth_failed", id=3) | {"auth_reason": "credential missing"},
        ]
    )
    tray = Tray(Bridge(service))
    tray.menu.aboutToShow.emit()
    assert texts(tray.account_menu("cool")) == [
        "Switch to (pin for 5 minutes)",
        "Clear cooldown",
        "Pause",
        "Verify login",
        "",
        "Disable…",
    ]
    assert texts(tray.account_menu("off")) == ["Verify login", "", "Enable"]
    assert texts(tray.account_menu("gone")) == [
        "Sign in again…",
        "Pause",
        "Verify login",
        "",
        "Disable…",
    ]


def test_menu_and_submenus_show_tooltips(qtbot, service):
    tray = Tray(Bridge(service))
    tray.menu.aboutToShow.emit()
    assert tray.menu.toolTipsVisible()
    work = tray.account_menu("work")
    assert work.toolTipsVisible()
    assert action(work, "Pause").toolTip() == (
        "New requests go to other accounts until you resume work"
    )


def test_menu_items_emit_their_requests(qtbot, service):
    tray = Tray(Bridge(service), requests_available=True)
    tray.menu.aboutToShow.emit()
    assert action(tray.menu, "Open Requests").isEnabled()
    for text, signal in [
        ("Open Accounts", tray.openRequested),
        ("Open Requests", tray.requestsRequested),
        ("Settings…", tray.settingsRequested),
        ("Set up a tool…", tray.setupToolRequested),
        ("Add account…", tray.addAccountRequested),
        ("Welcome…", tray.welcomeRequested),
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
    tray.message_ms = 10  # each lever's answer has its turn quickly
    shown = shown_messages(tray)

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
    qtbot.waitUntil(lambda: "b: Paused" in tray.icon.toolTip(), timeout=1000)
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
    qtbot.waitUntil(lambda: bool(shown) and shown[-1][0] == "a recovered", timeout=2000)
    view = await live.runtime("a")
    assert view["state"] == "ok" and view["cooldown_until"] is None
    assert view["failure_streak"] == 0
    assert live.service.account_view(a)["state"] == "ok"
    qtbot.waitUntil(lambda: tray.health is PoolHealth.OK, timeout=1000)  # b paused: not a warning


def shown_messages(tray) -> list:
    """What the tray actually put on screen, in order (title, body, icon)."""
    shown: list = []
    tray.icon.showMessage = lambda title, body, icon, ms: shown.append((title, body, icon))
    return shown


async def test_disable_asks_first_and_every_lever_answers(qtbot, live):
    await live.add_account("a", "tok-a")
    await live.add_account("b", "tok-b")
    tray = Tray(live.bridge)
    tray.message_ms = 10  # the queue's pace, not the test's subject here
    shown = shown_messages(tray)
    tray.menu.aboutToShow.emit()

    # Disable asks; Cancel changes nothing.
    action(tray.account_menu("b"), "Disable…").trigger()
    box = tray.confirm_box
    assert box is not None and box.isVisible() and box.windowTitle() == "Disable b?"
    box.button(QMessageBox.StandardButton.Cancel).click()
    await live.bridge.wait_idle()
    assert (await live.runtime("b"))["state"] == "ok" and shown == []
    # Yes disables, and says so.
    action(tray.account_menu("b"), "Disable…").trigger()
    tray.confirm_box.button(QMessageBox.StandardButton.Yes).click()
    await live.bridge.wait_idle()
    assert (await live.runtime("b"))["state"] == "disabled"
    qtbot.waitUntil(lambda: [m[0] for m in shown] == ["Disabled b"], timeout=1000)

    tray.menu.aboutToShow.emit()
    action(tray.account_menu("b"), "Enable").trigger()  # the lever says what it will do
    await live.bridge.wait_idle()
    assert (await live.runtime("b"))["state"] == "ok"
    tray.menu.aboutToShow.emit()
    action(tray.account_menu("a"), "Pause").trigger()
    await live.bridge.wait_idle()
    tray.menu.aboutToShow.emit()
    action(tray.account_menu("a"), "Resume").trigger()
    await live.bridge.wait_idle()
    tray.menu.aboutToShow.emit()
    action(tray.account_menu("b"), "Switch to").trigger()
    await live.bridge.wait_idle()
    QApplication.clipboard().clear()
    action(tray.menu, "Copy endpoint URL").trigger()
    qtbot.waitUntil(lambda: len(shown) == 6, timeout=2000)
    assert [m[0] for m in shown] == [
        "Disabled b",
        "Enabled b",
        "Paused a",
        "Resumed a",
        "Switched to b",
        "Endpoint URL copied",
    ]
    assert shown[-1][1] == live.service.endpoint_url == QApplication.clipboard().text()


async def test_verify_from_the_menu_says_the_verdict_in_its_colour(qtbot, live):
    await live.add_account("a", "tok-a")
    tray = Tray(live.bridge)
    tray.show()
    tray.message_ms = 10
    shown = shown_messages(tray)
    verdicts: list = []
    live.bridge.verified.connect(verdicts.append)
    tray.menu.aboutToShow.emit()
    action(tray.account_menu("a"), "Verify login").trigger()
    await live.bridge.wait_idle()
    assert [(v["name"], v["result"]) for v in verdicts] == [("a", "ok")]
    # a login that works is news, not a warning (it came with the red health icon)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=1000)
    assert shown[0] == ("a: login works", "the credential works", MessageIcon.Information)
    live.upstream.expired.add("tok-a")
    live.upstream.refresh_grants.clear()
    action(tray.account_menu("a"), "Verify login").trigger()
    await live.bridge.wait_idle()
    assert verdicts[-1]["result"] == "auth_failed"
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=1000)
    assert shown[1][0] == "a: login refused" and shown[1][2] is MessageIcon.Warning


def test_messages_queue_instead_of_replacing_each_other(qtbot, service):
    tray = Tray(Bridge(service))
    tray.message_ms = 200
    shown = shown_messages(tray)
    tray.show_message("work is cooling down", "first")
    tray.show_message("home ran out of quota", "second")
    tray.show_message("home ran out of quota", "second")  # the same news once
    tray.show_message("work is cooling down", "first")  # still on screen: not again
    assert [m[1] for m in shown] == ["first"]  # the second waits for the first's time
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=2000)
    assert [m[1] for m in shown] == ["first", "second"]
    assert not tray._messages  # nothing more is waiting


def test_enabling_or_resuming_into_a_running_cooldown_is_not_announced():
    """Fault 9: Enable popped "… is cooling down — Upstream errors" (the person just acted)."""
    before = [account("b", "disabled", id=2), account("p", "paused", id=3)]
    after = [
        account("b", "cooling", id=2) | {"cooldown_until": 1e10},
        account("p", "quota_exhausted", id=3),
    ]
    assert transitions(before, after) == []
    # from serving, the same states are news
    news = transitions([account("b", id=2), account("p", id=3)], after)
    assert [n.kind for n in news] == ["cooling", "exhausted"]


async def test_an_unreachable_upstream_is_said_in_words_not_an_exception_name(qtbot, live):
    account_id = await live.add_account("a", "tok-a")
    live.service.pool.accounts[account_id].base_url = "http://127.0.0.1:1"  # nothing listens
    tray = Tray(live.bridge)
    tray.show()
    tray.message_ms = 10
    shown = shown_messages(tray)
    tray.menu.aboutToShow.emit()
    action(tray.account_menu("a"), "Verify login").trigger()
    await live.bridge.wait_idle()
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=2000)
    title, body, icon = shown[0]
    assert title == "a: could not check" and icon is MessageIcon.Warning
    assert body == "could not reach the upstream: the connection was refused or the network is down"
    assert "Error" not in body  # "(ClientConnectorError)" told a person nothing


def test_the_icon_carries_the_tightest_percent_unless_switched_off(qtbot, service):
    def reading(utilization):
        now = service.clock.now()
        gauge = {
            "utilization": utilization,
            "resets_at": now + 600,
            "observed_at": now,
            "cold": False,
            "stale": False,
        }
        return [account("work", current=True) | {"gauges": {"five_hour": gauge}}]

    service.set_accounts(reading(0.93))
    tray = Tray(Bridge(service))
    plain = image_of(health_icon(PoolHealth.OK))
    assert tray.icon_percent == 93  # on by default
    at_93 = image_of(tray.icon.icon())
    assert at_93 != plain

    service.set_accounts(reading(0.5))
    qtbot.waitUntil(lambda: tray.icon_percent == 50, timeout=1000)
    assert image_of(tray.icon.icon()) not in (plain, at_93)

    service.settings["tray.icon_percent"] = False
    service.bus.publish("accounts.settings")
    qtbot.waitUntil(lambda: tray.icon_percent is None, timeout=1000)
    assert image_of(tray.icon.icon()) == plain
    assert validate_settings({"tray.icon_percent": False}) == {"tray.icon_percent": False}


async def test_the_icon_percent_is_switched_in_settings(qtbot, live):
    from sublane_desktop.gui.dialogs.settings import SettingsDialog

    dialog = SettingsDialog(live.bridge)
    qtbot.addWidget(dialog)
    assert dialog.icon_percent.isChecked() and dialog.changes() == {}
    dialog.icon_percent.setChecked(False)
    assert dialog.changes() == {"tray.icon_percent": False}
    dialog.buttons.accepted.emit()
    await live.bridge.wait_idle()
    assert live.service.settings["tray.icon_percent"] is False
