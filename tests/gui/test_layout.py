"""R-UI-10: every window and dialog fits its content at its default size, at 100 % and 200 %
scale, in the light and the dark palette; every control has a name.

The screenshot command builds every window over a realistic demo pool (a pinned, current,
Fable-current account with a request in flight; a cooling one; a paused one) and audits each
picture with layout_audit.problems; it runs here in a subprocess so QT_SCALE_FACTOR applies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from tools import layout_audit

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "resources" / "screenshots"
WINDOWS = {
    "accounts.png",
    "accounts-history.png",
    "requests.png",
    "request-details.png",
    "tray-menu.png",
    "welcome.png",
    "dialog-add-account.png",
    "dialog-client-keys.png",
    "dialog-keyring.png",
    "dialog-settings.png",
    "dialog-setup-tool.png",
    "dialog-port-in-use.png",
}


def render(tmp_path: Path, scale: str, dark: bool = False) -> dict:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", QT_SCALE_FACTOR=scale, PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "tools.screenshots", str(tmp_path / "shots")]
    if dark:
        args.append("--dark")
    done = subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=240, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "scale, dark", [("1", False), ("2", False), ("1", True)], ids=["100%", "200%", "100%-dark"]
)
def test_every_window_fits_at_its_default_size(tmp_path, scale, dark):
    summary = render(tmp_path, scale, dark)
    suffix = "-dark" if dark else ""
    expected = {name.replace(".png", f"{suffix}.png") for name in WINDOWS}
    assert expected <= set(summary["written"]), summary
    assert summary["problems"] == {}
    committed = {p.name for p in COMMITTED.glob("*.png") if p.name.endswith("-dark.png") == dark}
    assert committed <= set(summary["written"])  # every committed picture can be re-taken


# --- the audit itself: it finds what it is meant to find -------------------------------------


def test_audit_finds_a_squeezed_window_a_sideways_scroll_and_a_nameless_field(qtbot):
    window = QWidget()
    qtbot.addWidget(window)
    row = QHBoxLayout()
    for i in range(8):
        row.addWidget(QPushButton(f"A long button label {i}"))
    wide = QWidget()
    wide.setMinimumWidth(2000)
    area = QScrollArea()
    area.setWidget(wide)
    nameless = QLineEdit()
    layout = QVBoxLayout(window)
    layout.addLayout(row)
    layout.addWidget(area)
    layout.addWidget(nameless)
    layout_audit.set_default_size(window, 300, 200)
    window.show()
    qtbot.waitExposed(window)
    found = layout_audit.problems(window)
    assert any(p.startswith("needs at least ") for p in found), found
    assert "QScrollArea scrolls sideways" in found
    assert "QLineEdit has no accessible name" in found
    nameless.setAccessibleName("Name")
    assert "QLineEdit has no accessible name" not in layout_audit.problems(window)


# --- placement: centred on first open, where it was left afterwards ---------------------------


def test_windows_open_centred_then_where_they_were_left(qtbot, service):
    from sublane_desktop.gui.bridge import Bridge
    from sublane_desktop.gui.windows import Windows

    bridge = Bridge(service)
    windows = Windows(bridge)
    windows.show_accounts()
    window = windows.accounts
    qtbot.waitExposed(window)
    area = window.screen().availableGeometry()
    centre = window.frameGeometry().center()
    assert abs(centre.x() - area.center().x()) <= 2 and abs(centre.y() - area.center().y()) <= 2
    window.move(area.left() + 5, area.top() + 7)
    window.resize(700, 480)
    left = window.geometry()
    window.hide()  # the geometry is saved as the window goes
    windows.close_all()

    again = Windows(Bridge(service))
    again.show_accounts()
    qtbot.waitExposed(again.accounts)
    assert again.accounts.geometry() == left
    assert (again.accounts.width(), again.accounts.height()) == (700, 480)
    again.close_all()
