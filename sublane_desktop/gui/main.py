"""GUI mode: one process, one qasync loop shared by Qt and the service (R-ARCH-3).

Shutdown order: every way of quitting (the tray's Quit, the window's Quit, closing the only
window, and QApplication.quit() from elsewhere, e.g. the session manager or macOS Cmd-Q) only
sets `quit_requested`; the main coroutine then stops the service (draining streams, bounded) and
returns, and qasync's run_until_complete leaves the Qt loop with app.exit().

Why not an Event set on aboutToQuit (qasync's README pattern): aboutToQuit fires after Qt has
already left its loop, so anything awaited afterwards runs in qasync's final processEvents()
with no running asyncio loop ("no running event loop" inside service.stop()). Qt's Quit event is
intercepted instead, before the loop ends. If Qt still leaves without us (app.exit()), the loop
is run once more so the service is stopped inside a running loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QDialog, QSystemTrayIcon

from sublane_desktop import heap
from sublane_desktop.gui import autostart
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.colours import readable_palette
from sublane_desktop.gui.dialogs import startup_failure
from sublane_desktop.gui.icons import app_icon
from sublane_desktop.gui.notifications import Notifier
from sublane_desktop.gui.single_instance import (
    Answer,
    PreviousInstanceWait,
    SingleInstance,
    instance_name,
)
from sublane_desktop.gui.tray import Tray
from sublane_desktop.gui.windows import Windows
from sublane_desktop.startup import StartupError
from sublane_desktop.stop_signals import on_stop_signals

log = logging.getLogger(__name__)

# Quit lets in-flight streams finish for this long (R-UI-5); service.stop() bounds the drain.
DRAIN_SECONDS = 10.0
# This only keeps a wedged stop from hanging Quit forever.
STOP_TIMEOUT_S = 30.0
# A launch during the last run's Quit waits this long for it: its whole stop, and a margin.
PREVIOUS_QUIT_TIMEOUT_S = STOP_TIMEOUT_S + 5.0
# How long another thread may hold the GIL before the loop thread gets it back (see serve()).
SWITCH_INTERVAL_S = 0.001
# A lever already sent (a limit being saved) finishes before the service closes its store.
LEVER_GRACE_S = 2.0


def run(service_factory: Callable[..., Any], data_dir: Path) -> int:
    # qasync picks PyQt6 over PySide6 when both are importable; it reads QT_API at import time.
    os.environ["QT_API"] = "pyside6"

    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else DesktopApplication(sys.argv)
    app.setApplicationName("SubLane")
    app.setDesktopFileName("sublane")  # Wayland maps windows to sublane.desktop by this
    app.setQuitOnLastWindowClosed(False)
    app.setWindowIcon(app_icon())
    use_readable_palette(app)

    instance = SingleInstance(instance_name(data_dir))
    answer = instance.ask_to_show()
    if answer is Answer.SHOWN:
        print("SubLane is already running; asked it to show itself")
        return 0
    desktop = _Desktop(service_factory, data_dir)
    if answer is Answer.QUITTING:
        # Launched again while the last one drains after Quit (R-UI-15): say so, wait for it
        # to go (bounded), then start and open the window the person asked for.
        print("SubLane is still finishing the last run's requests; starting once it has quit")
        waiting = PreviousInstanceWait(instance, PREVIOUS_QUIT_TIMEOUT_S)
        if not waiting.wait():
            if not waiting.timed_out:
                return 0  # the person pressed Cancel
            print(
                "sublane: error: the SubLane that was quitting is still running",
                file=sys.stderr,
                flush=True,
            )
            return 1
        desktop.show_window()
    # Listen before the (possibly slow) service start so a quick second launch finds us; once
    # Quit has begun, a launch is told to wait instead of being shown a closing window.
    instance.listen(desktop.show_window, quitting=desktop.quit_requested.is_set)
    from sublane_desktop.gui.event_loop import DesktopEventLoop

    loop = DesktopEventLoop(app)
    asyncio.set_event_loop(loop)
    quit_interceptor: _QuitInterceptor | None = None
    if isinstance(app, DesktopApplication):
        app.on_quit = desktop.quit_requested.set
    else:  # someone else made the application: only a filter can see its Quit event
        quit_interceptor = _QuitInterceptor(desktop.quit_requested.set)
        app.installEventFilter(quit_interceptor)
    # Ctrl-C in the launching terminal, and SIGTERM from a session or service manager, quit
    # like the Quit item: drain, remove server.json, exit 0 (R-FT-8).
    restore_signals = on_stop_signals(loop, desktop.request_quit)
    wake = _python_wakeup_timer() if sys.platform == "win32" else None
    try:
        main = loop.create_task(desktop.serve(), name="sublane.desktop")
        try:
            return loop.run_until_complete(main)
        except RuntimeError:
            if main.done():
                raise
        # Qt left its loop without asking us (app.exit()): one more turn stops the service.
        desktop.quit_requested.set()
        return loop.run_until_complete(main)
    finally:
        restore_signals()
        if wake is not None:
            wake.stop()
        if quit_interceptor is not None:
            app.removeEventFilter(quit_interceptor)
        elif isinstance(app, DesktopApplication):
            app.on_quit = None
        instance.close()
        loop.close()
        asyncio.set_event_loop(None)


def _python_wakeup_timer() -> QTimer:
    """Windows has no signal wake-up for the loop: Python runs a signal handler only when it
    gets control, which a Qt loop waiting in C++ never gives it without a timer."""
    timer = QTimer()
    timer.timeout.connect(lambda: None)
    timer.start(200)
    return timer


class DesktopApplication(QApplication):
    """The application object, which turns Qt's own quit requests (app.quit(), a session
    ending, the Dock's Quit) into our graceful quit instead of an immediate exit.

    The Quit event is sent to the application object itself, so `event()` sees it. An event
    filter on the application would see every event of every object instead, each one
    wrapped for Python: socket wake-ups and timers of the proxy included (bench_proxy --tray).
    """

    on_quit: Callable[[], None] | None = None

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Quit and self.on_quit is not None:
            self.on_quit()
            return True
        handled = super().event(event)
        if event.type() == QEvent.Type.ApplicationPaletteChange:
            use_readable_palette(self)  # the desktop switched theme (R-UI-16)
        return handled


def use_readable_palette(app: QApplication) -> None:
    """The desktop's palette, with selection and link colours that read (R-UI-16)."""
    palette = readable_palette(app.palette())
    if palette is not None:  # None: already readable, so setting it cannot loop
        app.setPalette(palette)


class _QuitInterceptor(QObject):
    """Turns Qt's own quit requests into our graceful quit instead of an immediate exit."""

    def __init__(self, request_quit: Callable[[], None]) -> None:
        super().__init__()
        self._request_quit = request_quit

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Quit:
            self._request_quit()
            return True
        return False


class _Desktop:
    """What GUI mode owns while it runs: the service, the bridge and the visible pieces."""

    def __init__(self, service_factory: Callable[..., Any], data_dir: Path | None = None) -> None:
        self._service_factory = service_factory
        self._data_dir = data_dir
        self.quit_requested = asyncio.Event()
        self._windows: Windows | None = None
        self._show_pending = False
        self._autostart: bool | None = None

    def request_quit(self) -> None:
        """A stop signal: quit as the Quit item does (also while a startup dialog is open)."""
        self.quit_requested.set()
        for dialog in QApplication.topLevelWidgets():
            if isinstance(dialog, QDialog) and dialog.isVisible():
                dialog.reject()

    def show_window(self) -> None:
        """A second launch (or startup without a tray): bring up the Accounts window."""
        if self._windows is None:
            self._show_pending = True  # a second launch during startup; show once built
        else:
            self._windows.show_accounts()

    async def serve(self) -> int:
        service = await self._start_service()
        if service is None:  # a stop signal while a startup dialog was open is a clean quit
            return 0 if self.quit_requested.is_set() else 1
        # The same line as `serve`, for whoever started the app from a terminal (or a script).
        print(f"listening on {service.endpoint_url}", flush=True)

        bridge = Bridge(service)
        bridge.quitRequested.connect(self.quit_requested.set)
        bridge.settingsChanged.connect(lambda: self._sync_autostart(bridge))
        self._sync_autostart(bridge)
        tray = None
        notifier = None
        has_tray = QSystemTrayIcon.isSystemTrayAvailable()
        windows = Windows(bridge, main_window=not has_tray)
        self._windows = windows
        try:
            if has_tray:
                tray = Tray(bridge, requests_available=windows.requests_available)
                tray.openRequested.connect(windows.show_accounts)
                tray.requestsRequested.connect(windows.show_requests)
                tray.settingsRequested.connect(windows.show_settings)
                tray.setupToolRequested.connect(windows.show_setup_tool)
                tray.addAccountRequested.connect(windows.show_add_account)
                tray.welcomeRequested.connect(windows.show_welcome)
                notifier = Notifier(bridge, tray.show_message)
                tray.show()
            else:
                # GNOME without AppIndicator has no tray: the Accounts window is the app.
                windows.show_accounts()
            if self._show_pending:
                windows.show_accounts()
            # Everything built so far lives as long as the app: keep it out of the collector's
            # full passes, which otherwise stall the loop the proxy shares (bench_proxy --tray).
            heap.settle()
            # A database thread holding the GIL makes the loop thread wait up to the switch
            # interval (5 ms by default) after every socket call; the proxy's requests should
            # not queue behind a history page being read.
            sys.setswitchinterval(SWITCH_INTERVAL_S)
            if bridge.keyring_problem():  # R-UI-8: no keyring: offer the encrypted file
                windows.show_keyring()
            elif not bridge.snapshot():  # R-UI-9: first run: the welcome window
                windows.show_welcome()
            await self.quit_requested.wait()
        finally:
            print("stopping: letting in-flight requests finish", file=sys.stderr, flush=True)
            self._windows = None
            if tray is not None:
                tray.hide()
                tray.deleteLater()
            if notifier is not None:
                notifier.deleteLater()
            windows.close_all()
            try:
                await asyncio.wait_for(bridge.wait_idle(), LEVER_GRACE_S)
            except TimeoutError:
                log.warning("a lever was still running at quit")
            bridge.close()
            await self._stop(service)
            bridge.deleteLater()
        return 0

    async def _start_service(self) -> Any | None:
        """Start the service; on failure say why on stderr and in a dialog (R-FT-7, R-UI-8).

        A port in use offers another port, and the service is started again on the one picked
        (saved as `server.port` if the person ticks "from now on"). None: the app should end.
        """
        service = self._service_factory()
        remember: int | None = None
        while True:
            try:
                await service.start()
            except Exception as exc:  # every failure reaches the person
                if not isinstance(exc, StartupError):
                    log.debug("start failed", exc_info=True)
                text = (
                    str(exc)
                    if isinstance(exc, StartupError)
                    else (f"could not start: {type(exc).__name__}: {exc}")
                )
                print(f"sublane: error: {text}", file=sys.stderr, flush=True)
                choice = await startup_failure.ask(exc, getattr(service, "host", "127.0.0.1"))
                if choice is None:
                    return None
                service = self._service_factory(choice.port)
                remember = choice.port if choice.remember else None
                continue
            if remember is not None:
                try:
                    await service.update_settings({"server.port": remember})
                except Exception as exc:  # serving matters more than saving
                    log.warning("could not save port %s: %s", remember, exc)
            return service

    def _sync_autostart(self, bridge: Bridge) -> None:
        """Make the login entry match the setting (at start, and whenever it changes)."""
        enabled = bridge.settings().get("app.start_at_login")
        if not isinstance(enabled, bool) or enabled == self._autostart:
            return
        try:
            where = autostart.apply(enabled, autostart.launch_command(self._data_dir))
            log.info("start at login %s (%s)", "on" if enabled else "off", where)
            self._autostart = enabled
        except Exception as exc:  # a read-only config dir must not stop the app
            log.warning("could not change start at login: %s", exc)
            bridge.leverFailed.emit("start_at_login", str(exc))

    async def _stop(self, service: Any) -> None:
        try:
            await asyncio.wait_for(service.stop(drain_timeout=DRAIN_SECONDS), STOP_TIMEOUT_S)
        except TimeoutError:
            log.error("service did not stop within %.0f s; quitting anyway", STOP_TIMEOUT_S)
