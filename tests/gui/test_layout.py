"""R-UI-10, R-UI-16: every window, dialog and the tray menu fits its content at its default size,
shows no elided or cut text and reads at 4.5:1, at 100 % and 200 % scale, in the light and the
dark palette; every control has a name.

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
PICTURES = [
    "accounts",
    "accounts-history",
    "requests",
    "requests-account-switch",
    "requests-mine",
    "request-details",
    "request-details-account-switch",
    "tray-menu",
    "welcome",
    "dialog-add-account",
    "dialog-client-keys",
    "dialog-keyring",
    "dialog-settings",
    "dialog-setup-tool",
    "dialog-port-in-use",
    # The questions before Disable, Remove and Revoke, and the window a second launch shows
    # while the quitting SubLane drains (and once that took too long): audited as the rest.
    "question-disable",
    "question-remove",
    "question-revoke",
    "waiting-for-previous",
    "waiting-for-previous-timed-out",
]
VARIANTS = {"100%": ("1", False), "200%": ("2", False), "100%-dark": ("1", True)}
VARIANTS["200%-dark"] = ("2", True)

# What the audit finds in windows other helpers own (issue 25), as it found it; strict, so the
# test fails once fixed and the entry has to go. Picture -> (variants, finding).
KNOWN: dict[str, tuple[set[str], str]] = {}


# A 1920×1080 screen: at 200 % that is 960×540 logical pixels, the tightest common HiDPI desk.
# (Qt's offscreen default, 800×800, is 400×400 at 200 %: no real screen is that small, and
# menus and windows are clamped to it.)
SCREEN = {"screens": [{"name": "1080p", "x": 0, "y": 0, "width": 1920, "height": 1080}]}


def render(tmp_path: Path, scale: str, dark: bool = False) -> dict:
    config = tmp_path / "screen.json"
    config.write_text(json.dumps(SCREEN))
    env = dict(
        os.environ,
        QT_QPA_PLATFORM=f"offscreen:configfile={config}",
        QT_SCALE_FACTOR=scale,
        PYTHONPATH=str(ROOT),
    )
    args = [sys.executable, "-m", "tools.screenshots", str(tmp_path / "shots")]
    if dark:
        args.append("--dark")
    done = subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=240, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """One run of the screenshot command per variant, shared by that variant's tests."""
    runs: dict[str, dict] = {}

    def get(variant: str) -> dict:
        if variant not in runs:
            scale, dark = VARIANTS[variant]
            runs[variant] = render(tmp_path_factory.mktemp(variant.replace("%", "")), scale, dark)
        return runs[variant]

    return get


def _cases():
    for variant in VARIANTS:
        for picture in PICTURES:
            variants, finding = KNOWN.get(picture, (set(), ""))
            marks = [pytest.mark.xfail(strict=True, reason=finding)] if variant in variants else []
            yield pytest.param(variant, picture, marks=marks, id=f"{variant}-{picture}")


@pytest.mark.parametrize("variant, picture", list(_cases()))
def test_window_fits_and_reads(rendered, variant, picture):
    """Fits its default size, nothing elided or cut, every text 4.5:1 (R-UI-10, R-UI-16)."""
    summary = rendered(variant)
    name = picture + ("-dark" if VARIANTS[variant][1] else "")
    assert f"{name}.png" in summary["written"], summary["skipped"]
    assert summary["problems"].get(name, []) == []


# A 1280×800 laptop screen: 1280×800 logical pixels at 100 %, 640×400 at 200 %. A desktop
# panel takes a strip of it, and a window's title bar and borders come on top of its size.
LAPTOP_PX = (1280, 800)
PANEL_PX = 32
FRAME = (8, 32)  # logical px: borders, and a title bar


@pytest.mark.parametrize("variant", ["100%", "200%"])
def test_every_window_can_shrink_to_fit_a_small_laptop_screen(rendered, variant):
    """Item 1 of this session: a window's minimum size must fit the available area of a
    1280×800 screen at 100 % and at 200 %; the Accounts window needed 675 px of a 640 px wide
    screen, Settings 613 px of 400, Requests 1046 px: edges and buttons were off-screen."""
    summary = rendered(variant)
    scale = int(VARIANTS[variant][0])
    room_w = LAPTOP_PX[0] // scale - FRAME[0]
    room_h = (LAPTOP_PX[1] - PANEL_PX) // scale - FRAME[1]
    windows = [p for p in PICTURES if p not in ("tray-menu", "accounts-history")]
    assert set(windows) <= set(summary["minimums"]), summary["minimums"]
    too_big = {
        name: size
        for name, size in summary["minimums"].items()
        if size[0] > room_w or size[1] > room_h
    }
    assert too_big == {}, f"room {room_w}×{room_h}"


def test_the_windows_content_fits_a_small_laptop_screen_without_scrolling_sideways(rendered):
    """At 200 % on a 1280×800 screen the Accounts window's content needed 675 px of 640 and the
    Requests window's 1042 px: they scrolled sideways, Settings… and Copy cut at the edge.
    Welcome… moved up a row, and the Requests filters flow onto more rows (FlowLayout)."""
    summary = rendered("200%")
    room_w = LAPTOP_PX[0] // 2 - FRAME[0]
    assert {"accounts", "requests"} <= set(summary["contents"])
    wide = {name: size for name, size in summary["contents"].items() if size[0] > room_w}
    assert wide == {}, f"room {room_w} px"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_committed_picture_can_be_retaken(rendered, variant):
    summary = rendered(variant)
    dark = VARIANTS[variant][1]
    committed = {p.name for p in COMMITTED.glob("*.png") if p.name.endswith("-dark.png") == dark}
    assert committed <= set(summary["written"])
    assert set(summary["problems"]) <= {p + ("-dark" if dark else "") for p in PICTURES}


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


def test_audit_finds_cut_words_and_faint_text(qtbot):
    from PySide6.QtCore import QRect, Qt
    from PySide6.QtGui import QColor, QPainter, QPalette, QStandardItem, QStandardItemModel
    from PySide6.QtWidgets import QLabel, QTableView

    class Painted(QWidget):
        def paintEvent(self, event):
            painter = QPainter(self)
            painter.setPen(QColor("#bbbbbb"))  # on white: 1.9:1
            text = self.fontMetrics().elidedText(
                "current for Claude", Qt.TextElideMode.ElideRight, 40
            )
            painter.drawText(QRect(0, 0, 40, self.height()), Qt.AlignmentFlag.AlignLeft, text)
            painter.end()

    window = QWidget()
    qtbot.addWidget(window)
    palette = window.palette()
    palette.setColor(QPalette.ColorRole.Window, QColor("white"))
    window.setPalette(palette)
    window.setAutoFillBackground(True)
    squeezed = QLabel("Antigravity: Claude / Gemini Pro / Gemini Flash")
    squeezed.setMinimumWidth(10)
    faint = QLabel("quiet words")
    faint_palette = faint.palette()
    faint_palette.setColor(QPalette.ColorRole.WindowText, QColor("#aaaaaa"))
    faint.setPalette(faint_palette)
    button = QPushButton("A button with a long label")
    button.setMinimumWidth(10)
    drawn = Painted()
    drawn.setMinimumHeight(24)
    model = QStandardItemModel(1, 1)
    model.setHorizontalHeaderLabels(["Code"])
    model.setItem(0, 0, QStandardItem("upstream_unreachable"))
    table = QTableView()
    table.setModel(model)
    table.setColumnWidth(0, 60)
    row = QHBoxLayout()
    row.addWidget(squeezed)
    row.addWidget(button)
    layout = QVBoxLayout(window)
    layout.addLayout(row)
    layout.addWidget(faint)
    layout.addWidget(drawn)
    layout.addWidget(table)
    layout_audit.set_default_size(window, 160, 260)
    window.show()
    qtbot.waitExposed(window)
    squeezed.resize(60, squeezed.height())
    button.resize(60, button.height())
    found = "\n".join(layout_audit.problems(window))
    assert "QLabel('Antigravity: Claude / Gemini P') is cut" in found, found
    assert "QPushButton('A button with a long label') is cut" in found, found
    assert "'quiet words' is faint" in found, found
    assert "Painted cuts 'current for Claude'" in found, found
    assert "Painted: 'cu" in found and "is faint, 1.9:1" in found, found
    assert "column 'Code' cuts 1 cell(s), e.g. 'upstream_unreachable'" in found, found
    plain = layout_audit.problems(window, text=False)
    assert not any("faint" in p or " cut" in p for p in plain), plain


def test_an_antigravity_account_reads_whole_in_the_accounts_window_and_the_menu(qtbot, service):
    """Fault 6: its model families came out as 'Claude / Gemir / Gemir'. The demo pool of the
    screenshots has no Antigravity account, so it is audited here."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QApplication

    from sublane_desktop.gui.accounts_window import AccountsWindow
    from sublane_desktop.gui.bridge import Bridge
    from sublane_desktop.gui.main import use_readable_palette
    from sublane_desktop.gui.tray import Tray
    from tests.gui.gui_fakes import account

    now = service.clock.now()

    def gauge(utilization):
        return {"utilization": utilization, "resets_at": now + 3600, "observed_at": now - 20}

    families = {"claude": gauge(0.5), "gemini_pro": gauge(0.2), "gemini_flash": gauge(0.1)}
    service.set_accounts(
        [
            account("work", current=True)
            | {"gauges": {"five_hour": gauge(0.4), "seven_day": gauge(0.6), "fable": gauge(0.3)}},
            account("gemini-team", id=2) | {"provider": "antigravity", "gauges": families},
        ]
    )
    app = QApplication.instance()
    before = app.palette()
    use_readable_palette(app)  # as the app does at start
    try:
        bridge = Bridge(service)
        window = AccountsWindow(bridge)
        qtbot.addWidget(window)
        window.show()
        qtbot.waitExposed(window)
        assert layout_audit.problems(window) == []
        tray = Tray(bridge)
        tray.menu.aboutToShow.emit()
        tray.menu.popup(QPoint(10, 10))
        qtbot.waitUntil(lambda: tray.rows["gemini-team"].isVisible(), timeout=2000)
        assert layout_audit.problems(tray.menu) == []
        tray.menu.hide()
        bridge.close()
    finally:
        app.setPalette(before)


def test_audit_finds_a_menu_narrower_than_its_items(qtbot):
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QMenu

    menu = QMenu()
    qtbot.addWidget(menu)
    menu.addAction("Claude pool left: 5h 52% · 7d 50% · Fable 38% · Gemini 12%")
    menu.popup(QPoint(0, 0))
    qtbot.waitUntil(menu.isVisible, timeout=2000)
    assert layout_audit.problems(menu) == []
    menu.setFixedWidth(120)
    found = layout_audit.problems(menu)
    assert any(p.startswith("menu is cut: its widest item needs ") for p in found), found
