"""The tray app as a person runs it, for the benchmark: `sublane` in GUI mode (offscreen), with
the Accounts window and the Requests window open and live.

    python -m tests.bench.tray_app --data-dir DIR

Prints `listening on URL` once the service is up and both windows are shown; SIGINT quits the
way the Quit lever does (streams drained).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["QT_API"] = "pyside6"

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from sublane_desktop.app import make_service
from sublane_desktop.gui import main as gui_main
from sublane_desktop.gui.accounts_window import AccountsWindow


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    app = QApplication.instance() or gui_main.DesktopApplication(sys.argv[:1])

    def open_windows(service: object) -> None:
        shown = [
            w
            for w in QApplication.topLevelWidgets()
            if isinstance(w, AccountsWindow) and w.isVisible()
        ]
        if not shown:  # started with a tray host: open the Accounts window as a person would
            QTimer.singleShot(50, lambda: open_windows(service))
            return
        shown[0].requestsRequested.emit()  # the Requests window, live
        print(f"listening on {service.endpoint_url}", flush=True)

    def factory():
        service = make_service(args.data_dir, "127.0.0.1", 0)
        start = service.start

        async def started() -> None:
            await start()
            QTimer.singleShot(0, lambda: open_windows(service))

        service.start = started
        return service

    # SIGINT: ask Qt to quit, which main.run turns into the graceful quit. A timer lets Python
    # see the signal while Qt's loop runs.
    signal.signal(signal.SIGINT, lambda *_: app.quit())
    wake = QTimer()
    wake.start(200)
    wake.timeout.connect(lambda: None)
    return gui_main.run(factory, args.data_dir)


if __name__ == "__main__":
    raise SystemExit(main())
