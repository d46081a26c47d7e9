"""Move the real pointer through the tray menu on a real X server (Xvfb) and report what opened.

    xvfb-run -a python tests/gui/hover_probe.py

Fault 2 and fault 17 only showed with a real pointer: X sends enter events as the menu appears
under it and as it crosses rows, which the offscreen platform does not. The menu is popped up
at the top-right corner, where a panel's tray puts it, so the submenu opens to the left; the
pointer then goes from the first row down-left to its "Pause" lever, crossing the rows below,
at a person's pace (the path takes about half a second, as Qt's sloppy-submenu timing
expects). Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ["QT_API"] = "pyside6"
os.environ.pop("QT_QPA_PLATFORM", None)  # the real X server, not offscreen
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gui_fakes import FakeService, account
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.tray import Tray

STEPS = 12
STEP_MS = 40  # the pointer's pace: 12 steps of 40 ms


def until(check, timeout_s: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        QTest.qWait(10)
    return check()


def main() -> None:
    app = QApplication([])
    service = FakeService(
        [account("work", current=True), account("home", id=2), account("third", id=3)]
    )
    tray = Tray(Bridge(service))
    screen = app.primaryScreen().geometry()
    corner = QPoint(screen.right() - 4, screen.top() + 4)

    def open_subs() -> list[str]:
        return [name for name in tray.rows if tray.account_menu(name).isVisible()]

    QCursor.setPos(corner)
    tray.menu.popup(corner)  # under the pointer, as a click on the tray icon opens it
    until(lambda: bool(tray.rows) and tray.rows["work"].isVisible())
    # The tray icon pops the menu up on the press; the click's release then lands on the row
    # under the pointer (seen with trayer on Xvfb). It must neither open that row's submenu
    # nor leave QMenu unable to follow the pointer into it.
    first = tray.rows["work"]
    release_at = first.mapFromGlobal(QCursor.pos())
    QTest.mouseRelease(
        first, Qt.MouseButton.RightButton, Qt.KeyboardModifier.NoModifier, release_at
    )
    QTest.qWait(400)  # longer than the submenu popup delay: anything meant to open has
    by_itself = open_subs()

    work = tray.rows["work"]
    start = work.mapToGlobal(QPoint(work.width() // 2, work.height() // 4))
    QCursor.setPos(start)
    until(lambda: open_subs() == ["work"])
    sub = tray.account_menu("work")
    pause = next(a for a in sub.actions() if a.text() == "Pause")
    target = sub.mapToGlobal(sub.actionGeometry(pause).center())
    path = []
    for i in range(1, STEPS + 1):
        QCursor.setPos(start + (target - start) * (i / STEPS))
        QTest.qWait(STEP_MS)
        path.append(open_subs())
    until(lambda: sub.activeAction() is pause, 1.0)
    active = sub.activeAction()
    print(
        json.dumps(
            {
                "platform": app.platformName(),
                "opened_by_itself": by_itself,
                "submenu_left_of_menu": sub.geometry().right() <= tray.menu.geometry().left(),
                "path": path,
                "active_lever": active.text() if active is not None else None,
            }
        )
    )
    tray.menu.hide()


if __name__ == "__main__":
    main()
