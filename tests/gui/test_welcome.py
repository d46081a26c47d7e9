"""R-UI-9: first run end to end against the fake upstream — the welcome window finds the Claude
Code login, imports it with one click, creates a client key, sends a test request through the
proxy, and that request is in the Requests window.

A qasync loop runs the service and the widgets together (as in requests_fixtures), so every
qtbot wait also runs the asyncio side; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path

import keyring
import pytest
import qasync
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QLineEdit, QScrollArea

from sublane_desktop.accounts.secrets import SecretStore
from sublane_desktop.core.clock import FakeClock
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.requests_model import milliseconds
from sublane_desktop.gui.tool_setup import KEY_PLACEHOLDER
from sublane_desktop.gui.windows import Placement, Windows
from sublane_desktop.service import Service
from tests.conftest import file_keyring
from tests.fake_upstream import FakeAnthropic

WAIT_MS = 10000


@pytest.fixture
def first_run(qapp, qtbot, tmp_path: Path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    # The tools' OS keyring items are looked for too: an empty keyring of the test's own, never
    # this machine's (whose keyring may be absent, locked, or hold a real login).
    os_keyring = file_keyring(tmp_path / "os-keyring.cfg")
    monkeypatch.setattr(keyring, "get_keyring", lambda: os_keyring)
    gc.collect()
    gc.disable()
    loop = qasync.QEventLoop(qapp)
    asyncio.events._set_running_loop(loop)

    def run(coro):
        task = loop.create_task(coro)
        qtbot.waitUntil(task.done, timeout=WAIT_MS)
        return task.result()

    upstream = FakeAnthropic()
    run(upstream.start())
    service = Service(
        tmp_path / "data",
        port=0,
        clock=FakeClock(),
        secret_store=SecretStore(tmp_path, backend=file_keyring(tmp_path / "keyring.cfg")),
        env={"SUBLANE_ANTHROPIC_BASE_URL": upstream.url},
    )
    run(service.start())
    bridge = Bridge(service)
    windows = Windows(bridge)
    try:
        yield home, service, bridge, windows, upstream, run
    finally:
        windows.close_all()
        run(bridge.wait_idle())
        bridge.close()
        run(service.stop(drain_timeout=1))
        run(upstream.stop())
        asyncio.events._set_running_loop(None)
        loop.close()

        gc.enable()
        gc.collect()


def write_claude_code_login(home: Path) -> Path:
    path = home / ".claude" / ".credentials.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "claudeAiOauth": {
                    "accessToken": "sk-ant-oat01-welcome",
                    "refreshToken": "sk-ant-ort01-welcome",
                    "expiresAt": 1_900_000_000_000,
                }
            }
        )
    )
    return path


def test_first_run_from_no_account_to_a_request_in_the_requests_window(first_run, qtbot):
    home, service, _bridge, windows, upstream, run = first_run
    path = write_claude_code_login(home)
    welcome = windows.show_welcome()
    qtbot.waitExposed(welcome)
    assert list(welcome.import_buttons) == ["claude-code"]  # only what is on this computer
    assert welcome.import_status["claude-code"].text() == f"found at {path}"
    assert not welcome.test_button.isEnabled()
    assert welcome.test_result.text() == "Import a login and create a key first."

    welcome.import_buttons["claude-code"].click()
    qtbot.waitUntil(
        lambda: welcome.import_status["claude-code"].text().startswith("✓"), timeout=WAIT_MS
    )
    assert welcome.import_status["claude-code"].text() == "✓ imported as claude-code"
    assert [a["name"] for a in service.accounts_runtime()["accounts"]] == ["claude-code"]
    assert welcome.test_result.text() == "Create a key first."

    welcome.key_button.click()
    qtbot.waitUntil(lambda: welcome.key is not None, timeout=WAIT_MS)
    assert welcome.key.startswith("sl-")
    assert welcome.key_field.echoMode() is QLineEdit.EchoMode.Password  # masked by default
    assert welcome.test_button.isEnabled()
    # Step 4 no longer asks for the key it has (fault 11).
    assert welcome.test_result.text() == "Ready: one small request goes through SubLane."

    # Step 3 uses the key just made: the lines to paste carry it, not a placeholder.
    welcome.tool_button.click()
    setup = windows.dialogs["setup_tool"]
    assert setup.isVisible()
    for page in setup.pages.values():
        assert all(KEY_PLACEHOLDER not in text for text in page.texts()), page.tool.id
        assert any(welcome.key in text for text in page.texts()), page.tool.id
    setup.close()

    # A Claude subscription login answers Claude Code only (R-WF-2): the test checks the
    # sign-in with Anthropic and says why it sends no message of its own.
    welcome.send_test()
    qtbot.waitUntil(lambda: welcome.test_result.text().startswith("✓"), timeout=WAIT_MS)
    assert welcome.test_result.text().startswith("✓ claude-code is signed in. ")
    assert "answer Claude Code only" in welcome.test_result.text()
    assert "sublane run -- claude" in welcome.test_result.text()
    assert upstream.tokens_served() == []  # no message went to Anthropic to be refused
    assert upstream.client_refusals == 0

    # With an API key beside it, the test is a real request through the pool.
    run(service.add_account("anthropic", "api", {"api_key": "sk-ant-api03-welcome"}))
    welcome.send_test()
    qtbot.waitUntil(lambda: "answered" in welcome.test_result.text(), timeout=WAIT_MS)
    assert welcome.test_result.text().startswith("✓ claude-haiku-4-5 answered by api in ")
    answered = welcome.test_result.text()
    assert upstream.tokens_served() == ["sk-ant-api03-welcome"]
    assert not welcome.requests_button.isHidden()

    run(service.flush_records())
    welcome.requests_button.click()
    requests = windows.requests
    assert requests is not None
    qtbot.waitUntil(lambda: requests.model.rowCount() == 1, timeout=WAIT_MS)
    record = requests.model.record(0)
    assert record["model"] == "claude-haiku-4-5" and record["outcome"] == "success"
    # The figure the welcome gave is the one its record keeps (fault 16).
    assert f" in {milliseconds(record['duration_ms'])}. " in answered

    welcome.close()  # closing forgets the key on screen; the proxy keeps serving
    assert welcome.key_field.text() == "" and not welcome.isVisible()
    assert service.endpoint_url


def test_a_key_made_in_set_up_a_tool_is_the_welcomes_key(first_run, qtbot):
    """Fault 11: a key created in Set up a tool (opened from the welcome) serves step 4 too."""
    _home, service, bridge, windows, _upstream, run = first_run
    run(service.add_account("anthropic", "api", {"api_key": "sk-ant-api03-welcome"}))
    bridge.refresh_snapshot()
    qtbot.waitUntil(lambda: bool(bridge.snapshot()), timeout=WAIT_MS)
    welcome = windows.show_welcome()
    qtbot.waitExposed(welcome)
    assert welcome.test_result.text() == "Create a key first."
    welcome.tool_button.click()
    setup = windows.dialogs["setup_tool"]
    page = setup.pages["claude-code"]
    page.create_button.click()
    qtbot.waitUntil(lambda: page.key is not None, timeout=WAIT_MS)
    assert welcome.key == page.key
    assert welcome.test_button.isEnabled()
    assert welcome.test_result.text() == "Ready: one small request goes through SubLane."


def test_a_reopened_welcome_says_the_keys_and_tools_there_are_now(first_run, qtbot):
    """Second newcomer pass: reopened after keys were made, the welcome said "no key yet".
    Each time it is shown it reads the keys again (their secrets are shown once, so it names
    them and offers another), and a tool set up in Set up a tool reads as done."""
    _home, service, _bridge, windows, _upstream, run = first_run
    run(service.add_account("anthropic", "api", {"api_key": "sk-ant-api03-welcome"}))
    welcome = windows.show_welcome()
    qtbot.waitExposed(welcome)
    welcome.key_button.click()
    qtbot.waitUntil(lambda: welcome.key is not None, timeout=WAIT_MS)
    welcome.close()
    run(service.create_key("claude-code"))  # as Set up a tool names a key it makes

    welcome = windows.show_welcome()
    qtbot.waitUntil(
        lambda: welcome.key_field.placeholderText() == "2 keys made already", timeout=WAIT_MS
    )
    assert welcome.key_field.text() == ""  # a secret is shown once, when it is made
    assert welcome.key_button.text() == "Create another key"
    assert "desktop, claude-code" in welcome.key_field.toolTip()
    assert welcome.tool_note.text().startswith("Set up already: Claude Code")
    assert welcome.test_result.text() == "Create a key here first."


def test_the_welcome_can_be_opened_again(first_run, qtbot):
    """Fault 11: closed, the welcome comes back through the bridge (the tray's "Welcome…")
    and through the Accounts window's Welcome… button."""
    _home, _service, bridge, windows, _upstream, _run = first_run
    welcome = windows.show_welcome()
    welcome.close()
    assert not welcome.isVisible()
    bridge.request_welcome()
    assert welcome.isVisible()
    welcome.close()
    windows.show_accounts()
    assert windows.accounts is not None
    windows.accounts.welcome_button.click()
    assert welcome.isVisible()


def test_a_login_imported_in_an_earlier_run_reads_as_imported(first_run, qtbot):
    """Found by hand: after a restart, Welcome… offered "Import Claude Code login" (and
    "found at …") for the login the pool already had, as a step still to take."""
    home, service, bridge, windows, _upstream, run = first_run
    write_claude_code_login(home)
    run(service.import_login("claude-code"))
    bridge.refresh_snapshot()
    welcome = windows.show_welcome()
    assert welcome.import_status["claude-code"].text() == "✓ imported as claude-code"
    assert welcome.import_buttons["claude-code"].text() == "Imported"
    assert not welcome.import_buttons["claude-code"].isEnabled()
    assert welcome.test_result.text() == "Create a key first."


def test_not_now_on_the_keyring_dialog_still_leads_a_first_run_to_the_welcome(first_run, qtbot):
    """Fault 11: with no account yet, saying "Not now" to the keyring offer must not leave
    the person with nothing on screen."""
    _home, _service, _bridge, windows, _upstream, _run = first_run
    dialog = windows.show_keyring()
    dialog.cancel_button.click()
    assert not dialog.isVisible()
    welcome = windows.dialogs.get("welcome")
    assert welcome is not None and welcome.isVisible()


def test_a_long_login_path_is_shown_whole(first_run, qtbot, monkeypatch):
    """Fault 6: a login found deep in the file system was cut off at its second line."""
    home, _service, _bridge, windows, _upstream, _run = first_run
    deep = home / "a-rather-long-folder-name" / "and-another-folder-inside-it" / "home"
    monkeypatch.setenv("HOME", str(deep))
    path = write_claude_code_login(deep)
    welcome = windows.show_welcome()
    qtbot.waitExposed(welcome)
    status = welcome.import_status["claude-code"]
    assert status.text() == f"found at {path}"
    qtbot.waitUntil(lambda: status.height() >= status.heightForWidth(status.width()))
    assert status.heightForWidth(status.width()) > status.fontMetrics().lineSpacing() * 2


def test_no_login_found_offers_adding_by_hand(first_run, qtbot):
    _home, _service, _bridge, windows, _upstream, _run = first_run
    welcome = windows.show_welcome()
    assert welcome.import_buttons == {}
    assert not welcome.none_found.isHidden()
    welcome.add_button.click()
    assert windows.dialogs["add_account"].isVisible()


def test_welcome_lists_each_place_it_found_and_what_it_could_not_read(first_run, qtbot):
    """R-LOGIN-3: the Gemini CLI login is offered with Google's warning beside it; a Claude Code
    login file that cannot be read is named with the reason, in words."""
    home, _service, _bridge, windows, _upstream, _run = first_run
    (home / ".claude" / ".credentials.json").mkdir(parents=True)  # unreadable: a directory
    creds = home / ".gemini" / "oauth_creds.json"
    creds.parent.mkdir(parents=True)
    creds.write_text(
        json.dumps({"access_token": "ya29.w", "refresh_token": "1//w", "expiry_date": 1})
    )
    welcome = windows.show_welcome()
    qtbot.waitExposed(welcome)
    assert list(welcome.import_buttons) == ["gemini"]
    assert welcome.import_status["gemini"].text() == f"found at {creds}"
    warning = welcome.import_warnings["gemini"].text()
    assert "2026-06-18" in warning and "individual" in warning
    assert [label.text() for label in welcome.unread] == [
        "Could not read Claude Code's login in Claude Code's login file: cannot read "
        f"{home / '.claude' / '.credentials.json'}: it is a directory"
    ]
    assert welcome.none_found.isHidden()
    assert welcome.also_found == []


def test_welcome_names_every_place_a_tool_keeps_a_login(first_run, qtbot, monkeypatch):
    home, service, _bridge, windows, _upstream, _run = first_run
    path = write_claude_code_login(home)
    service.env["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-setup-welcome"
    welcome = windows.show_welcome()
    qtbot.waitExposed(welcome)
    assert welcome.import_status["claude-code"].text() == f"found at {path}"
    assert [label.text() for label in welcome.also_found] == [
        "Claude Code also keeps a login in a `claude setup-token` token"
        " (CLAUDE_CODE_OAUTH_TOKEN); the import takes the one above."
    ]
    assert "sk-ant-oat01-setup-welcome" not in "".join(label.text() for label in welcome.also_found)


def test_the_key_box_hint_fits_its_box(first_run, qtbot):
    """R-UI-16: the placeholder of the empty key box was cut ("your tools use this key i…")."""
    _home, _service, _bridge, windows, _upstream, _run = first_run
    welcome = windows.show_welcome()
    qtbot.waitExposed(welcome)
    box = welcome.key_field
    room = box.contentsRect().width() - box.textMargins().left() - box.textMargins().right()
    assert box.fontMetrics().horizontalAdvance(box.placeholderText()) + 8 <= room


def test_the_welcome_is_as_tall_as_its_steps(first_run, qtbot, tmp_path, monkeypatch):
    """Third newcomer pass: at 100 % a fixed 460 px height left a band of empty space between
    the last step and Close. It opens as tall as its content: no band, no scroll bar."""
    _home, _service, _bridge, windows, _upstream, _run = first_run
    # A first opening: no size saved by an earlier test's welcome (QSettings is per process).
    fresh = QSettings(str(tmp_path / "placement.ini"), QSettings.Format.IniFormat)
    monkeypatch.setattr(Placement, "settings", staticmethod(lambda: fresh))
    welcome = windows.show_welcome()
    qtbot.waitExposed(welcome)
    last_step = welcome.test_button.parentWidget()  # the "4. Send a test request" box
    close = welcome.close_button

    def gap() -> int:
        step_bottom = last_step.mapTo(welcome, last_step.rect().bottomLeft()).y()
        return close.mapTo(welcome, close.rect().topLeft()).y() - step_bottom

    # One layout spacing, a little more for the footer row's margin; 460 px left some 50.
    spacing = welcome.style().pixelMetric(welcome.style().PixelMetric.PM_LayoutVerticalSpacing)
    qtbot.waitUntil(lambda: gap() <= 3 * max(spacing, 6), timeout=2000)
    body = welcome.findChild(QScrollArea, "window_body")
    assert not body.verticalScrollBar().isVisible()
