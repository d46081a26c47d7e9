from gui_fakes import account
from PySide6.QtWidgets import QApplication

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.pool_status import PoolHealth
from sublane_desktop.gui.tray import Tray


def image_of(icon):
    return icon.pixmap(22, 22).toImage()


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


def test_tooltip_names_endpoint_and_current_account(qtbot, service):
    tray = Tray(Bridge(service))
    assert tray.icon.toolTip() == "SubLane — http://127.0.0.1:8765\nCurrent: work"
    service.set_accounts([account("work"), account("home", id=2, current=True)])
    qtbot.waitUntil(lambda: tray.icon.toolTip().endswith("Current: home"), timeout=1000)


def test_menu_is_rebuilt_on_show_and_copies_endpoint(qtbot, service):
    tray = Tray(Bridge(service))
    tray.menu.aboutToShow.emit()
    texts = [a.text() for a in tray.menu.actions()]
    assert texts == ["work — ok", "home — cooling", "", "Copy endpoint URL", "Quit"]
    assert not tray.menu.actions()[0].isEnabled()

    service.set_accounts([account("solo", "paused")])
    tray.menu.aboutToShow.emit()
    assert [a.text() for a in tray.menu.actions()][0:2] == ["solo — paused", ""]

    QApplication.clipboard().clear()
    copy = next(a for a in tray.menu.actions() if a.text() == "Copy endpoint URL")
    copy.trigger()
    assert QApplication.clipboard().text() == "http://127.0.0.1:8765"


def test_quit_action_asks_bridge_to_quit(qtbot, service):
    bridge = Bridge(service)
    tray = Tray(bridge)
    tray.menu.aboutToShow.emit()
    quit_action = next(a for a in tray.menu.actions() if a.text() == "Quit")
    with qtbot.waitSignal(bridge.quitRequested, timeout=1000):
        quit_action.trigger()


def test_tray_keeps_app_alive_without_windows(qtbot, service, qapp):
    qapp.setQuitOnLastWindowClosed(True)
    Tray(Bridge(service))
    assert qapp.quitOnLastWindowClosed() is False
