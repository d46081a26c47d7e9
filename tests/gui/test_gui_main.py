"""GUI mode end to end on the fake service: start, show, quit, and the service is stopped."""

import asyncio

import pytest
from gui_fakes import FakeService
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from sublane_desktop.gui import main as gui_main
from sublane_desktop.gui.single_instance import SingleInstance, instance_name
from sublane_desktop.gui.status_window import StatusWindow
from sublane_desktop.gui.tray import Tray


class AfterStart(FakeService):
    """Runs `then` on the Qt loop once the service has started, like a user would."""

    def __init__(self, then):
        super().__init__()
        self._then = then

    async def start(self):
        await super().start()
        QTimer.singleShot(0, lambda: self._then(self))


def status_windows():
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, StatusWindow)]


def click_quit(service):
    (window,) = [w for w in status_windows() if w.isVisible()]
    assert window.account_lines() == ["work — ok"]
    window.quit_button.click()


def test_quit_button_stops_service_and_returns(qapp, tmp_path):
    services = []

    def factory():
        services.append(AfterStart(click_quit))
        return services[0]

    assert gui_main.run(factory, tmp_path) == 0
    (service,) = services
    assert service.started and service.stopped
    assert qapp.applicationName() == "SubLane"
    assert qapp.desktopFileName() == "sublane"
    assert qapp.quitOnLastWindowClosed() is False
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()  # the qasync loop is gone, not left installed


def test_app_quit_from_outside_still_stops_service(qapp, tmp_path):
    service = AfterStart(lambda s: QApplication.quit())
    assert gui_main.run(lambda: service, tmp_path) == 0
    assert service.stopped


def test_app_exit_bypassing_quit_still_stops_service(qapp, tmp_path):
    service = AfterStart(lambda s: QApplication.exit(0))
    assert gui_main.run(lambda: service, tmp_path) == 0
    assert service.stopped


def test_closing_the_only_window_quits(qapp, tmp_path):
    def close_window(service):
        (window,) = [w for w in status_windows() if w.isVisible()]
        window.close()

    service = AfterStart(close_window)
    assert gui_main.run(lambda: service, tmp_path) == 0
    assert service.stopped


def test_with_tray_quit_action_stops_service(qapp, tmp_path, monkeypatch):
    monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: True))
    trays = []
    original_init = Tray.__init__

    def remember(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        trays.append(self)

    monkeypatch.setattr(Tray, "__init__", remember)

    def quit_from_menu(service):
        assert not [w for w in status_windows() if w.isVisible()]  # tray mode: no window
        (tray,) = trays
        tray.menu.aboutToShow.emit()
        next(a for a in tray.menu.actions() if a.text() == "Quit").trigger()

    service = AfterStart(quit_from_menu)
    assert gui_main.run(lambda: service, tmp_path) == 0
    assert service.stopped


def test_second_launch_asks_first_to_show(qtbot, tmp_path, capsys):
    running = SingleInstance(instance_name(tmp_path))
    shown = []
    assert running.listen(lambda: shown.append(True))
    try:
        factory_calls = []
        assert gui_main.run(lambda: factory_calls.append(1), tmp_path) == 0
        assert factory_calls == []  # the second launch never builds a service
        assert "already running" in capsys.readouterr().out
        qtbot.waitUntil(lambda: shown == [True], timeout=2000)
    finally:
        running.close()


def test_start_failure_is_reported_not_raised(qapp, tmp_path, capsys):
    class PortTaken(FakeService):
        async def start(self):
            raise OSError("address already in use")

    service = PortTaken()
    assert gui_main.run(lambda: service, tmp_path) == 1
    assert "could not start" in capsys.readouterr().err


def poll_until(condition, then, *, attempts=200):
    """Re-check `condition` on the running Qt loop (no sleeping), then call then(bool)."""
    if condition() or attempts == 0:
        then(condition())
    else:
        QTimer.singleShot(10, lambda: poll_until(condition, then, attempts=attempts - 1))


def test_second_launch_while_running_in_tray_mode_shows_window(qapp, tmp_path, monkeypatch):
    monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: True))
    outcome = []

    def launch_again(service):
        assert not [w for w in status_windows() if w.isVisible()]
        assert SingleInstance(instance_name(tmp_path)).already_running()

        def done(shown):
            outcome.append(shown)
            # Quitting with a visible window that only hides on close must not block the quit.
            QApplication.quit()

        poll_until(lambda: any(w.isVisible() for w in status_windows()), done)

    service = AfterStart(launch_again)
    assert gui_main.run(lambda: service, tmp_path) == 0
    assert outcome == [True]
    assert service.stopped
