from gui_fakes import account
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.status_window import StatusWindow


def make_window(qtbot, service, *, quit_on_close=False):
    bridge = Bridge(service)
    window = StatusWindow(bridge, quit_on_close=quit_on_close)
    qtbot.addWidget(window)
    return bridge, window


def test_lists_accounts_and_follows_bus_events(qtbot, service):
    _, window = make_window(qtbot, service)
    assert window.endpoint.text() == "http://127.0.0.1:8765"
    assert window.account_lines() == ["work — ok", "home — cooling"]

    service.set_accounts([account("work", "quota_exhausted"), account("home", "ok", id=2)])
    qtbot.waitUntil(
        lambda: window.account_lines() == ["work — quota exhausted", "home — ok"], timeout=1000
    )


def test_copy_button_puts_endpoint_on_clipboard(qtbot, service):
    _, window = make_window(qtbot, service)
    QApplication.clipboard().clear()
    qtbot.mouseClick(window.copy_button, Qt.MouseButton.LeftButton)
    assert QApplication.clipboard().text() == "http://127.0.0.1:8765"


def test_quit_button_requests_quit(qtbot, service):
    bridge, window = make_window(qtbot, service)
    with qtbot.waitSignal(bridge.quitRequested, timeout=1000):
        qtbot.mouseClick(window.quit_button, Qt.MouseButton.LeftButton)


def test_close_hides_when_a_tray_exists(qtbot, service):
    bridge, window = make_window(qtbot, service, quit_on_close=False)
    window.show()
    qtbot.waitExposed(window)
    with qtbot.assertNotEmitted(bridge.quitRequested):
        window.close()
    assert not window.isVisible()


def test_close_quits_when_it_is_the_only_way_back(qtbot, service):
    bridge, window = make_window(qtbot, service, quit_on_close=True)
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitSignal(bridge.quitRequested, timeout=1000):
        window.close()
