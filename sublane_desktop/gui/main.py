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

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.icons import app_icon
from sublane_desktop.gui.single_instance import SingleInstance, instance_name
from sublane_desktop.gui.status_window import StatusWindow
from sublane_desktop.gui.tray import Tray

log = logging.getLogger(__name__)

# service.stop() bounds its own drain; this only keeps a wedged stop from hanging Quit forever.
STOP_TIMEOUT_S = 30.0


def run(service_factory: Callable[[], Any], data_dir: Path) -> int:
    # qasync picks PyQt6 over PySide6 when both are importable; it reads QT_API at import time.
    os.environ["QT_API"] = "pyside6"
    import qasync

    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("SubLane")
    app.setDesktopFileName("sublane")  # Wayland maps windows to sublane.desktop by this
    app.setQuitOnLastWindowClosed(False)
    app.setWindowIcon(app_icon())

    instance = SingleInstance(instance_name(data_dir))
    if instance.already_running():
        print("SubLane is already running; asked it to show itself")
        return 0

    desktop = _Desktop(service_factory)
    # Listen before the (possibly slow) service start so a quick second launch finds us.
    instance.listen(desktop.show_window)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    quit_interceptor = _QuitInterceptor(desktop.quit_requested.set)
    app.installEventFilter(quit_interceptor)
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
        app.removeEventFilter(quit_interceptor)
        instance.close()
        loop.close()
        asyncio.set_event_loop(None)


class _QuitInterceptor(QObject):
    """Turns Qt's own quit requests into our graceful quit instead of an immediate exit."""

    def __init__(self, request_quit: Callable[[], None]) -> None:
        super().__init__()
        self._request_quit = request_quit

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QEvent.Type.Quit:
            self._request_quit()
            return True
        return False


class _Desktop:
    """What GUI mode owns while it runs: the service, the bridge and the visible pieces."""

    def __init__(self, service_factory: Callable[[], Any]) -> None:
        self._service_factory = service_factory
        self.quit_requested = asyncio.Event()
        self._window: Any = None
        self._show_pending = False

    def show_window(self) -> None:
        if self._window is None:
            self._show_pending = True  # a second launch during startup; show once built
        else:
            self._window.show_and_raise()

    async def serve(self) -> int:
        service = self._service_factory()
        try:
            await service.start()
        except Exception as exc:  # e.g. the port is taken: say so instead of a traceback
            log.exception("service failed to start")
            print(f"SubLane could not start: {exc}", file=sys.stderr)
            return 1

        bridge = Bridge(service)
        bridge.quitRequested.connect(self.quit_requested.set)
        tray = None
        has_tray = QSystemTrayIcon.isSystemTrayAvailable()
        window = StatusWindow(bridge, quit_on_close=not has_tray)
        self._window = window
        try:
            if has_tray:
                tray = Tray(bridge)
                tray.openRequested.connect(window.show_and_raise)
                tray.show()
            else:
                # GNOME without AppIndicator has no tray: the window is the app.
                window.show()
            if self._show_pending:
                window.show_and_raise()
            await self.quit_requested.wait()
        finally:
            self._window = None
            if tray is not None:
                tray.hide()
                tray.deleteLater()
            window.quit_on_close = False
            window.hide()
            window.deleteLater()
            bridge.close()
            await self._stop(service)
            bridge.deleteLater()
        return 0

    async def _stop(self, service: Any) -> None:
        try:
            await asyncio.wait_for(service.stop(), STOP_TIMEOUT_S)
        except TimeoutError:
            log.error("service did not stop within %.0f s; quitting anyway", STOP_TIMEOUT_S)
