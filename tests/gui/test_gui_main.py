"""GUI mode end to end on the fake service: start, show, quit, and the service is stopped."""

import asyncio

import pytest
from gui_fakes import FakeService
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox, QSystemTrayIcon

from sublane_desktop.gui import main as gui_main
from sublane_desktop.gui.accounts_window import AccountsWindow
from sublane_desktop.gui.single_instance import (
    PreviousInstanceWait,
    SingleInstance,
    instance_name,
)
from sublane_desktop.gui.tray import Tray


class AfterStart(FakeService):
    """Runs `then` on the Qt loop once the service has started, like a user would."""

    def __init__(self, then):
        super().__init__()
        self._then = then

    async def start(self):
        await super().start()
        QTimer.singleShot(0, lambda: self._then(self))


def accounts_windows():
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, AccountsWindow)]


def click_quit(service):
    (window,) = [w for w in accounts_windows() if w.isVisible()]
    assert window.card_named("work").badge_texts() == ["Ready"]
    window.quit_button.click()


def test_quit_button_stops_service_and_returns(qapp, tmp_path):
    services = []

    def factory():
        services.append(AfterStart(click_quit))
        return services[0]

    assert gui_main.run(factory, tmp_path) == 0
    (service,) = services
    assert service.started and service.stopped
    assert service.drain_timeout == 10  # Quit drains in-flight streams, bounded (R-UI-5)
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


def test_closing_the_only_window_asks_then_quits(qapp, tmp_path):
    def close_window(service):
        (window,) = [w for w in accounts_windows() if w.isVisible()]
        window.close()
        assert window.close_box is not None and window.isVisible()  # asked, not gone
        window.quit_choice.click()

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
        assert not [w for w in accounts_windows() if w.isVisible()]  # tray mode: no window
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


def test_launch_while_the_last_one_quits_waits_then_opens_the_window(
    qapp, tmp_path, monkeypatch, capsys
):
    """Started again while the last run drains after Quit (fault 4, R-UI-15): a window says
    why nothing opens yet; once the old one has gone this one starts and opens its window,
    even in tray mode, where a plain start shows none."""
    monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: True))
    quitting = SingleInstance(instance_name(tmp_path))
    assert quitting.listen(lambda: None, quitting=lambda: True)
    seen = []

    def waiting_windows():
        return [
            w
            for w in QApplication.topLevelWidgets()
            if isinstance(w, PreviousInstanceWait) and w.isVisible()
        ]

    def old_one_goes(_found):
        (window,) = waiting_windows()
        seen.append(window.message.text())
        quitting.close()  # its service has stopped: it stops listening

    def opened(shown):
        seen.append(shown)
        QApplication.quit()

    QTimer.singleShot(0, lambda: poll_until(lambda: bool(waiting_windows()), old_one_goes))
    service = AfterStart(
        lambda _s: poll_until(lambda: any(w.isVisible() for w in accounts_windows()), opened)
    )
    try:
        assert gui_main.run(lambda: service, tmp_path) == 0
    finally:
        quitting.close()
    assert service.started and service.stopped
    assert "still finishing the requests of the copy you quit" in seen[0]
    assert seen[1] is True
    assert "already running" not in capsys.readouterr().out


def test_start_failure_is_reported_not_raised(qapp, tmp_path, capsys):
    class PortTaken(FakeService):
        async def start(self):
            raise OSError("address already in use")

    shown = []

    def close_box():
        (box,) = [
            w
            for w in QApplication.topLevelWidgets()
            if isinstance(w, QMessageBox) and w.isVisible()
        ]
        shown.append(box.text())
        box.button(QMessageBox.StandardButton.Close).click()

    service = PortTaken()
    QTimer.singleShot(
        0,
        lambda: poll_until(
            lambda: any(
                isinstance(w, QMessageBox) and w.isVisible() for w in QApplication.topLevelWidgets()
            ),
            lambda _found: close_box(),
        ),
    )
    assert gui_main.run(lambda: service, tmp_path) == 1
    assert "could not start" in capsys.readouterr().err
    assert shown == ["Could not start: OSError: address already in use."]


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
        assert not [w for w in accounts_windows() if w.isVisible()]
        assert SingleInstance(instance_name(tmp_path)).already_running()

        def done(shown):
            outcome.append(shown)
            # Quitting with a visible window that only hides on close must not block the quit.
            QApplication.quit()

        poll_until(lambda: any(w.isVisible() for w in accounts_windows()), done)

    service = AfterStart(launch_again)
    assert gui_main.run(lambda: service, tmp_path) == 0
    assert outcome == [True]
    assert service.stopped


# --- Quit drains in-flight streams (R-UI-5), on the real service under qasync ---------------------

import aiohttp

from sublane_desktop.accounts.secrets import SecretStore
from sublane_desktop.core.tasks import spawn
from sublane_desktop.service import Service
from tests.conftest import file_keyring
from tests.fake_upstream import CLAUDE_CODE_HEADERS, FakeAnthropic, Reply

STREAM_BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "stream": True,
    "messages": [{"role": "user", "content": "hi"}],
}


class StreamingService(Service):
    """The real service plus a fake upstream and one client stream that is mid-flight when the
    person presses Quit. `finish_after`: seconds after stop() begins that the stream may end
    (None: never)."""

    def __init__(self, tmp_path, finish_after):
        super().__init__(
            tmp_path / "data",
            port=0,
            env={},
            secret_store=SecretStore(tmp_path, backend=file_keyring(tmp_path / "keyring.cfg")),
        )
        self.finish_after = finish_after
        self.events = []
        self.result = None

    async def start(self):
        self.fake = FakeAnthropic()
        await self.fake.start()
        self.env["SUBLANE_ANTHROPIC_BASE_URL"] = self.fake.url
        await super().start()
        await self.add_account("anthropic", "a", {"api_key": "tok-a"})
        _, key = await self.create_key("test")
        self.gate = asyncio.Event()
        self.fake.script(None, Reply(kind="sse", gate=self.gate))
        self.client = spawn(self._stream(key), name="test-client")
        QTimer.singleShot(0, self._quit_once_streaming)

    async def _stream(self, key):
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.post(
                    self.endpoint_url + "/v1/messages",
                    json=STREAM_BODY,
                    headers={"x-api-key": key, **CLAUDE_CODE_HEADERS},
                ) as response,
            ):
                return response.status, await response.text()
        except aiohttp.ClientError as exc:
            return None, repr(exc)

    def _quit_once_streaming(self):
        def press_quit(streaming):
            assert streaming
            self.events.append("quit pressed")
            (window,) = [w for w in accounts_windows() if w.isVisible()]
            window.quit_button.click()

        poll_until(lambda: self.pool.in_flight == 1, press_quit)

    async def stop(self, drain_timeout=10.0):
        loop = asyncio.get_running_loop()
        began = loop.time()
        self.events.append(("stop", drain_timeout, self.pool.in_flight))
        if self.finish_after is not None:
            loop.call_later(self.finish_after, self.gate.set)
        await super().stop(drain_timeout)
        self.events.append(("stopped", self.pool.in_flight))
        self.stop_took = loop.time() - began
        self.result = await self.client
        self.gate.set()
        await self.fake.stop()


def test_quit_with_a_stream_in_flight_waits_for_it_then_exits(qapp, tmp_path):
    service = StreamingService(tmp_path, finish_after=0.3)
    assert gui_main.run(lambda: service, tmp_path) == 0
    assert service.events == ["quit pressed", ("stop", 10.0, 1), ("stopped", 0)]
    assert service.stop_took >= 0.3  # it waited for the stream rather than cutting it
    status, body = service.result
    assert status == 200 and "message_stop" in body  # the client got the whole answer
    assert not (tmp_path / "data" / "server.json").exists()


def test_quit_gives_up_on_a_stream_after_the_drain_bound(qapp, tmp_path, monkeypatch):
    monkeypatch.setattr(gui_main, "DRAIN_SECONDS", 0.3)
    service = StreamingService(tmp_path, finish_after=None)  # a stream that never ends
    assert gui_main.run(lambda: service, tmp_path) == 0
    assert service.events[:2] == ["quit pressed", ("stop", 0.3, 1)]
    assert 0.3 <= service.stop_took < 5
    _, body = service.result
    assert "message_stop" not in body


# --- start at login follows the setting --------------------------------------------------------------


def test_start_at_login_follows_the_setting(qtbot, tmp_path, monkeypatch):
    from sublane_desktop.gui.bridge import Bridge

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    entry = tmp_path / "cfg" / "autostart" / "sublane.desktop"
    service = FakeService()
    bridge = Bridge(service)
    desktop = gui_main._Desktop(lambda: service, tmp_path / "data")
    service.settings["app.start_at_login"] = True
    desktop._sync_autostart(bridge)
    assert entry.is_file()
    assert f"--data-dir {(tmp_path / 'data').resolve()}" in entry.read_text()
    service.settings["app.start_at_login"] = False
    desktop._sync_autostart(bridge)
    assert not entry.exists()
    bridge.close()


def test_first_run_with_no_accounts_opens_the_welcome_window(qapp, tmp_path, monkeypatch):
    from sublane_desktop.gui.welcome import WelcomeWindow

    monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: True))
    seen = []

    def look_then_quit(service):
        seen.extend(
            w.windowTitle()
            for w in QApplication.topLevelWidgets()
            if isinstance(w, WelcomeWindow) and w.isVisible()
        )
        QApplication.quit()

    service = AfterStart(look_then_quit)
    service.set_accounts([])
    assert gui_main.run(lambda: service, tmp_path) == 0
    assert seen == ["Welcome to SubLane"]
