"""Start the real desktop app on a real X server (Xvfb) and report what a person would see.

    xvfb-run -a python tests/gui/xvfb_probe.py no-tray|tray DATA_DIR

`tray` first starts a system tray host (trayer) on the same display. The app runs through
gui.main.run with a real Service on a free port; once it is up, this prints one JSON line —
whether a tray was available, whether the tray icon is shown, the visible windows, and
whether the proxy answered over HTTP — and quits through Qt, as a session manager would.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

os.environ["QT_API"] = "pyside6"
os.environ.pop("QT_QPA_PLATFORM", None)  # the real X server, not offscreen

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from sublane_desktop.gui import main as gui_main
from sublane_desktop.gui.tray import Tray
from sublane_desktop.service import Service

WAIT_S = 20.0


TRAYS: list[Tray] = []
_tray_init = Tray.__init__


def _remember(self: Tray, *args: object, **kwargs: object) -> None:
    _tray_init(self, *args, **kwargs)
    TRAYS.append(self)


Tray.__init__ = _remember


def main() -> int:
    mode, data_dir = sys.argv[1], Path(sys.argv[2])
    host = None
    if mode == "tray":
        host = subprocess.Popen(
            ["trayer", "--edge", "top", "--width", "10"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    app = QApplication(sys.argv[:1])
    if host is not None:  # the tray host needs a moment to claim the tray selection
        # Qt's loop runs meanwhile (X events are handled); a timer looks again every 50 ms, as
        # qtbot.waitUntil does, since Qt has no signal for a tray host appearing.
        deadline = time.monotonic() + WAIT_S
        waiting = QEventLoop()
        look = QTimer(interval=50)
        look.timeout.connect(
            lambda: (
                (QSystemTrayIcon.isSystemTrayAvailable() or time.monotonic() >= deadline)
                and waiting.quit()
            )
        )
        look.start()
        waiting.exec()
        look.stop()
    report: dict[str, object] = {"platform": app.platformName()}
    held: list[asyncio.Future[None]] = []

    def factory() -> Service:
        service = Service(data_dir, port=0)
        start = service.start

        async def started() -> None:
            await start()
            QTimer.singleShot(300, lambda: look(service))

        service.start = started
        return service

    def look(service: Service) -> None:
        trays = TRAYS
        report["tray_available"] = QSystemTrayIcon.isSystemTrayAvailable()
        report["tray_icon_visible"] = any(t.icon.isVisible() for t in trays)
        report["windows"] = sorted(
            w.windowTitle()
            for w in QApplication.topLevelWidgets()
            if w.isVisible() and w.windowTitle()
        )

        async def probe() -> None:
            loop = asyncio.get_running_loop()
            url = service.endpoint_url + "/v1/models"

            def get() -> int:
                try:
                    with urllib.request.urlopen(url, timeout=5) as r:
                        return r.status
                except urllib.error.HTTPError as exc:
                    return exc.code

            report["http_status"] = await loop.run_in_executor(None, get)
            QApplication.quit()

        held.append(asyncio.ensure_future(probe()))  # a task nobody holds can vanish

    try:
        code = gui_main.run(factory, data_dir)
    finally:
        if host is not None:
            host.terminate()
            host.wait(10)
    report["exit_code"] = code
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
