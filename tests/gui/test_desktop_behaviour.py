"""R-UI-15: dialogs and windows behave as on every desktop (issue 25, faults 1, 4, 14, 15).

Enter runs the dialog's own main action, a one-off port conflict stays one-off, and a saved
window position is used only where the window fits on a screen.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, QSettings, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from sublane_desktop.gui.dialogs.add_account import AddAccountDialog
from sublane_desktop.gui.dialogs.client_keys import ClientKeysDialog
from sublane_desktop.gui.dialogs.keyring_setup import KeyringDialog
from sublane_desktop.gui.dialogs.settings import SettingsDialog
from sublane_desktop.gui.dialogs.setup_tool import SetupToolDialog
from sublane_desktop.gui.dialogs.startup_failure import PortInUseDialog
from sublane_desktop.gui.request_details import RequestDetailsDialog
from sublane_desktop.gui.windows import Placement
from sublane_desktop.startup import StartupError


def shown_active(qtbot, dialog: QDialog) -> QDialog:
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.activateWindow()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is not None, timeout=2000)
    return dialog


def defaults(dialog: QDialog) -> list[str]:
    """The buttons Enter would press: QDialog presses the visible default one."""
    return [b.text() for b in dialog.findChildren(QPushButton) if b.isDefault() and b.isVisible()]


def tab_until(qtbot, widget: QWidget, *, limit: int = 60) -> None:
    """Move the focus with the Tab key, as a person does, until it reaches `widget`."""
    for _ in range(limit):
        if QApplication.focusWidget() is widget:
            return
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    raise AssertionError(f"Tab never reached {widget!r}")


# --- Enter runs the dialog's own main action (fault 1) ------------------------------------------


async def test_enter_in_add_account_adds_what_was_typed(qtbot, live, monkeypatch):
    """Tabbing past the sign-in and import buttons to the form, then Enter: the account typed
    is added; no browser sign-in and no import of an installed login runs instead."""
    other_actions: list[str] = []
    monkeypatch.setattr(
        live.bridge, "sign_in", lambda which, **_: other_actions.append(f"sign in {which}")
    )
    monkeypatch.setattr(
        live.bridge, "import_login", lambda which, path=None: other_actions.append(which)
    )
    dialog = shown_active(qtbot, AddAccountDialog(live.bridge))
    dialog.choose_provider("anthropic")
    tab_until(qtbot, dialog.name)
    QTest.keyClicks(dialog.name, "api-enter")
    tab_until(qtbot, dialog.secret)
    QTest.keyClicks(dialog.secret, "sk-ant-api03-typed")
    added = []
    dialog.added.connect(added.append)
    QTest.keyClick(dialog.secret, Qt.Key.Key_Return)
    await live.bridge.wait_idle()
    assert other_actions == []
    assert [v["name"] for v in added] == ["api-enter"]
    assert dialog.status.text() == "Added api-enter."


def _port_dialog() -> PortInUseDialog:
    return PortInUseDialog(
        StartupError(StartupError.PORT_IN_USE, "port 8765 is in use", port=8765), "127.0.0.1"
    )


DIALOGS = {
    # name: (how to build it on a live bridge, the text of its main action; None: no main action)
    "add account": (AddAccountDialog, "Add"),
    "client keys": (ClientKeysDialog, "Create key"),
    "keyring": (KeyringDialog, None),  # the button's words depend on the keyring file
    "settings": (SettingsDialog, "Save"),
    "set up a tool": (SetupToolDialog, None),
    "request details": (lambda _b: RequestDetailsDialog({"request_id": "r-1"}), None),
    "port in use": (lambda _b: _port_dialog(), "Start on this port"),
}


@pytest.mark.parametrize("name", list(DIALOGS))
async def test_every_dialog_keeps_enter_on_its_main_action(qtbot, live, name):
    """Wherever the Tab key takes the focus, Enter would press the main action and nothing
    else: a secondary button that once had the focus never becomes the default."""
    build, main = DIALOGS[name]
    dialog = shown_active(qtbot, build(live.bridge))
    if isinstance(dialog, KeyringDialog):
        main = dialog.ok_button.text()
    expected = [] if main is None else [main]
    seen = set()
    for _ in range(60):
        focus = QApplication.focusWidget()
        if focus in seen:
            break
        seen.add(focus)
        assert defaults(dialog) == expected, f"focus on {focus!r}"
        QTest.keyClick(focus, Qt.Key.Key_Tab)
    assert len(seen) > 2  # the walk did visit the dialog's controls
    await live.bridge.wait_idle()


# --- a port conflict is one-off unless the person asks (fault 14) --------------------------------


def test_port_in_use_choice_is_one_off_by_default(qtbot):
    dialog = _port_dialog()
    qtbot.addWidget(dialog)
    choice = dialog.choice()
    assert choice.port != 8765
    assert choice.remember is False


# --- a saved position only where the window fits (fault 15) --------------------------------------


@pytest.fixture
def placement_settings(tmp_path, monkeypatch) -> QSettings:
    settings = QSettings(str(tmp_path / "placement.ini"), QSettings.Format.IniFormat)
    monkeypatch.setattr(Placement, "settings", staticmethod(lambda: settings))
    return settings


def placed(qtbot, saved: QRect, settings: QSettings) -> QWidget:
    settings.setValue("geometry/probe", f"{saved.x()},{saved.y()},{saved.width()},{saved.height()}")
    window = QWidget()
    qtbot.addWidget(window)
    window.resize(300, 200)
    Placement().place(window, "probe")
    return window


def _area() -> QRect:
    screen = QGuiApplication.primaryScreen()
    assert screen is not None
    return screen.availableGeometry()


def test_a_saved_position_that_fits_is_used(qtbot, placement_settings):
    area = _area()
    saved = QRect(area.x() + 10, area.y() + 20, 320, 210)
    window = placed(qtbot, saved, placement_settings)
    assert window.geometry() == saved


def test_a_saved_position_hanging_off_the_screen_is_not_used(qtbot, placement_settings):
    """Saved at another scale or on a bigger monitor: half of it would be off-screen."""
    area = _area()
    saved = QRect(area.right() - 100, area.bottom() - 50, 400, 300)
    window = placed(qtbot, saved, placement_settings)
    assert area.contains(window.geometry()), window.geometry()
    assert window.size() == saved.size()  # its size still fits: kept, only moved on-screen


def test_a_saved_size_bigger_than_the_screen_is_not_used(qtbot, placement_settings):
    area = _area()
    saved = QRect(area.x(), area.y(), area.width() * 2, area.height() * 2)
    window = placed(qtbot, saved, placement_settings)
    assert window.size().width() <= area.width() and window.size().height() <= area.height()
    assert area.contains(window.geometry())


def test_a_window_bigger_than_the_screen_keeps_its_title_bar_on_it(qtbot, placement_settings):
    """Found by hand at 200 % on a small screen: the Accounts window's minimum size exceeds
    the screen, and centred it opened with its title bar above the top edge, out of reach."""
    area = _area()
    window = QWidget()
    qtbot.addWidget(window)
    window.setMinimumSize(area.width() + 200, area.height() + 200)
    Placement().place(window, "probe")
    frame = window.frameGeometry()
    assert frame.left() >= area.left() and frame.top() >= area.top(), frame


def test_a_default_size_bigger_than_the_screen_opens_as_big_as_the_screen(
    qtbot, placement_settings
):
    """A 1280×800 screen at 200 % is 640×400: the Requests window (1180×680 by default) and
    Settings opened hanging off it, their Close and Save out of reach. Now they shrink to the
    screen and their content scrolls."""
    from sublane_desktop.gui.sizing import scroll_when_small, set_default_size

    area = _area()
    window = QWidget()
    qtbot.addWidget(window)
    layout = QVBoxLayout(window)
    tall = QLabel("content taller and wider than the screen")
    tall.setMinimumSize(area.width() + 300, area.height() + 300)
    layout.addWidget(tall)
    layout.addWidget(QPushButton("Close"))
    scroll_when_small(window)
    set_default_size(window, area.width() + 100, area.height() + 100)
    Placement().place(window, "probe")
    window.show()
    qtbot.waitExposed(window)
    assert area.contains(window.frameGeometry()), (window.frameGeometry(), area)
    close = window.findChild(QPushButton)
    assert close is not None and close.isVisible()
    corner = close.mapTo(window, close.rect().bottomRight())
    assert window.rect().contains(corner)  # the last row stays in view, below the scrolling


def test_a_size_the_screen_forced_is_not_kept_for_next_time(qtbot, placement_settings):
    """Third newcomer pass: at 200 % on a 1280×800 screen the Accounts window filled the
    screen; back at 100 % it reopened at that size, a quarter of the screen. A size the
    screen set is not saved; one the person chose is."""
    area = _area()
    window = QWidget()
    qtbot.addWidget(window)
    placement = Placement()  # kept: it saves the geometry as the window hides
    placement.place(window, "probe")
    window.setGeometry(area.x() + 10, area.y() + 10, 300, 200)
    window.show()
    qtbot.waitExposed(window)
    window.hide()
    chosen = placement_settings.value("geometry/probe")
    assert chosen == f"{area.x() + 10},{area.y() + 10},300,200"
    window.setGeometry(area)  # as big as the screen allows
    window.show()
    qtbot.waitExposed(window)
    window.hide()
    assert placement_settings.value("geometry/probe") == chosen


async def test_enter_in_the_key_name_creates_one_key(qtbot, live):
    """Enter in Client keys' name box creates the key, once (the box and the default button
    used to both create one)."""
    dialog = shown_active(qtbot, ClientKeysDialog(live.bridge))
    await live.bridge.wait_idle()
    dialog.name.setFocus()
    QTest.keyClicks(dialog.name, "laptop-enter")
    QTest.keyClick(dialog.name, Qt.Key.Key_Return)
    await live.bridge.wait_idle()
    qtbot.waitUntil(lambda: bool(dialog.new_key.text()), timeout=2000)
    keys = await live.service.list_keys()
    assert [k["name"] for k in keys].count("laptop-enter") == 1
