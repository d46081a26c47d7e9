"""The dialogs on a real service: Add account, Settings, Client keys, Set up a tool."""

import json

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLineEdit, QMessageBox

from sublane_desktop.accounts.secrets import account_secret
from sublane_desktop.gui.dialogs.add_account import AddAccountDialog, secret_from_text
from sublane_desktop.gui.dialogs.client_keys import ClientKeysDialog
from sublane_desktop.gui.dialogs.common import show_error
from sublane_desktop.gui.dialogs.settings import SettingsDialog
from sublane_desktop.gui.dialogs.setup_tool import SetupToolDialog
from sublane_desktop.gui.tool_setup import KEY_PLACEHOLDER


def shown(qtbot, dialog):
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


# --- Add account ---------------------------------------------------------------------------------


def test_secret_from_text():
    assert secret_from_text("  sk-ant-api03-abc\n") == {"api_key": "sk-ant-api03-abc"}
    assert secret_from_text('{"access_token": "a"}') == {"access_token": "a"}
    for bad, words in [("", "paste"), ("{not json", "not valid JSON"), ("two words", "one word")]:
        try:
            secret_from_text(bad)
        except ValueError as exc:
            assert words in str(exc)
        else:
            raise AssertionError(bad)


async def test_add_account_says_where_the_secret_really_goes(qtbot, live):
    """Third newcomer pass: it said "system keyring" whatever keyring was in use. The live
    service keeps secrets in a keyrings.alt PlaintextKeyring file (as one chosen with
    PYTHON_KEYRING_BACKEND would); once SubLane's encrypted file is opened, it says that."""
    dialog = shown(qtbot, AddAccountDialog(live.bridge))
    note = dialog.keyring_note.text()
    assert note == (
        "The secret goes to an unencrypted keyring file (chosen in your keyring settings), "
        "never to SubLane's database."
    )
    assert "system keyring" not in note
    for jargon in ("PlaintextKeyring", "keyrings.alt", "PYTHON_KEYRING"):
        assert jargon not in note
    assert dialog.keyring_note.toolTip().endswith("keyring.cfg")  # the file, for whoever asks
    dialog.close()

    await live.service.open_file_keyring("a long password", create=True)
    dialog.show()  # opened again: says where secrets go now
    assert dialog.keyring_note.text() == (
        "The secret goes to SubLane's encrypted keyring file, never to SubLane's database."
    )
    assert dialog.keyring_note.toolTip().endswith("secrets.enc")


async def test_paste_an_api_key_adds_the_account_and_forgets_the_text(qtbot, live, secret_store):
    dialog = shown(qtbot, AddAccountDialog(live.bridge))
    dialog.choose_provider("anthropic")
    dialog.name.setText("api1")
    dialog.group.setText("team")
    dialog.limit.setValue(4)
    dialog.secret.setText("sk-ant-api03-secret")
    added = []
    dialog.added.connect(added.append)
    dialog.add_button.click()
    await live.bridge.wait_idle()
    assert [v["name"] for v in added] == ["api1"]
    view = await live.runtime("api1")
    assert view["max_concurrency"] == 4 and view["provider"] == "anthropic"
    assert json.loads(secret_store.get(account_secret(view["id"]))) == {
        "api_key": "sk-ant-api03-secret"
    }
    assert dialog.secret.text() == ""  # the secret does not linger in the dialog
    assert dialog.status.text() == "Added api1." and dialog.error.isHidden()
    assert dialog.name.text() == ""  # the next account needs its own name
    assert dialog.secret.echoMode() is QLineEdit.EchoMode.Password


async def test_errors_are_shown_inline(qtbot, live):
    dialog = shown(qtbot, AddAccountDialog(live.bridge))
    dialog.add_button.click()
    assert dialog.error.text() == "give the account a name"
    dialog.name.setText("x")
    dialog.secret.setText("{oops")
    dialog.add_button.click()
    assert "not valid JSON" in dialog.error.text()

    # The service's CredentialError, word for word; nothing was stored.
    dialog.choose_provider("codex")
    dialog.secret.setText('{"access_token": "at", "refresh_token": "rt", "expires_at": 1}')
    dialog.add_button.click()
    await live.bridge.wait_idle()
    assert dialog.error.text().endswith('missing "account_id"')
    assert not dialog.error.isHidden()
    assert live.service.accounts_runtime()["accounts"] == []
    assert dialog.add_button.isEnabled()


async def test_import_buttons_read_the_installed_logins(qtbot, live, tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text(
        json.dumps(
            {
                "claudeAiOauth": {
                    "accessToken": "sk-ant-oat01-x",
                    "refreshToken": "rt",
                    "expiresAt": 4_000_000_000_000,
                }
            }
        )
    )
    monkeypatch.setenv("HOME", str(home))
    dialog = shown(qtbot, AddAccountDialog(live.bridge))
    dialog.import_claude.click()
    await live.bridge.wait_idle()
    assert (await live.runtime("claude-code"))["provider"] == "anthropic"
    dialog.import_codex.click()
    await live.bridge.wait_idle()
    assert dialog.error.text().startswith("no Codex login at ")


async def test_google_imports(qtbot, live, tmp_path, monkeypatch, secret_store):
    """Gemini CLI's login from ~/.gemini, an Antigravity account file chosen by the person."""
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    dialog = shown(qtbot, AddAccountDialog(live.bridge))
    dialog.import_gemini.click()
    await live.bridge.wait_idle()
    assert dialog.error.text().startswith("no Gemini CLI login at ")
    (home / ".gemini" / "oauth_creds.json").write_text(
        json.dumps(
            {"access_token": "ya29.g", "refresh_token": "1//r", "expiry_date": 4_000_000_000_000}
        )
    )
    dialog.import_gemini.click()
    await live.bridge.wait_idle()
    assert (await live.runtime("gemini"))["provider"] == "antigravity"

    file = tmp_path / "ag.json"
    file.write_text(
        json.dumps(
            {
                "access_token": "ya29.a",
                "refresh_token": "1//ra",
                "expires_at": 4_000_000_000,
                "project_id": "p-9",
            }
        )
    )
    monkeypatch.setattr(dialog, "choose_antigravity_file", lambda: None)  # cancelled
    dialog.import_antigravity.click()
    await live.bridge.wait_idle()
    assert [a["name"] for a in live.service.accounts_runtime()["accounts"]] == ["gemini"]
    monkeypatch.setattr(dialog, "choose_antigravity_file", lambda: file)
    dialog.import_antigravity.click()
    await live.bridge.wait_idle()
    view = await live.runtime("antigravity")
    assert json.loads(secret_store.get(account_secret(view["id"])))["project_id"] == "p-9"
    assert dialog.status.text() == "Added antigravity."


# --- Settings --------------------------------------------------------------------------------------


async def test_settings_are_saved_through_the_service(qtbot, live):
    dialog = shown(qtbot, SettingsDialog(live.bridge))
    assert dialog.cap.value() == 8 and dialog.ceilings["scheduler.five_hour_max"].value() == 90
    assert dialog.changes() == {}
    dialog.cap.setValue(4)
    dialog.ceilings["scheduler.five_hour_max"].setValue(85)
    dialog.mode.setCurrentIndex(dialog.mode.findData("round_robin"))
    dialog.poll_floor.setValue(600)
    dialog.start_at_login.setChecked(True)
    assert dialog.port_note.text().endswith("A new port applies after SubLane restarts.")
    size = dialog.size()
    for digits in (9, 99, 999, 9999):  # typing a port digit by digit
        dialog.port.setValue(digits)
        assert dialog.size() == size  # the dialog does not grow while typing
    assert dialog.port_note.text().endswith("until SubLane restarts; then on port 9999.")
    dialog.buttons.accepted.emit()
    await live.bridge.wait_idle()
    status, settings = await live.api("GET", "/api/settings")
    assert status == 200
    assert (
        settings["pool.cap"],
        settings["scheduler.five_hour_max"],
        settings["scheduler.mode"],
        settings["quota.poll_floor_seconds"],
        settings["app.start_at_login"],
        settings["server.port"],
    ) == (4, 0.85, "round_robin", 600, True, 9999)
    assert live.service.pool.cap == 4
    assert not dialog.isVisible()


async def test_a_refused_setting_is_shown_inline(qtbot, live, monkeypatch):
    async def refuse(changes):
        raise ValueError("pool.cap must be an integer from 1 to 64")

    monkeypatch.setattr(live.service, "update_settings", refuse)
    dialog = shown(qtbot, SettingsDialog(live.bridge))
    dialog.cap.setValue(3)
    dialog.buttons.accepted.emit()
    await live.bridge.wait_idle()
    assert dialog.error.text() == "pool.cap must be an integer from 1 to 64"
    assert dialog.isVisible()


# --- Client keys -----------------------------------------------------------------------------------


async def test_create_shows_the_key_once_and_revoke_stops_it(qtbot, live):
    dialog = shown(qtbot, ClientKeysDialog(live.bridge))
    await live.bridge.wait_idle()
    assert dialog.table.rowCount() == 0 and dialog.new_key_row.isHidden()
    dialog.name.setText("laptop")
    dialog.create_button.click()
    await live.bridge.wait_idle()
    key = dialog.new_key.text()
    assert key.startswith("sl-") and not dialog.new_key_row.isHidden()
    assert dialog.new_key.echoMode() is QLineEdit.EchoMode.Password  # masked, Show reveals
    assert await live.service.identify(key) is not None
    QApplication.clipboard().clear()
    dialog.copy_button.click()
    assert QApplication.clipboard().text() == key
    assert dialog.table.item(0, 0).text() == "laptop"
    assert dialog.table.item(0, 5).text() == "Active"

    dialog.table.selectRow(0)
    dialog.revoke_button.click()
    # third newcomer pass: "Tools using it get 401", answered with "Yes"
    assert "401" not in dialog.confirm_box.text()
    assert dialog.confirm_box.button(QMessageBox.StandardButton.Yes).text() == "Revoke"
    assert dialog.confirm_box.defaultButton() is dialog.confirm_box.button(
        QMessageBox.StandardButton.Cancel
    )
    dialog.confirm_box.button(QMessageBox.StandardButton.Yes).click()
    await live.bridge.wait_idle()
    assert dialog.table.item(0, 5).text() == "Revoked"
    assert dialog.new_key.text() == "" and dialog.new_key_row.isHidden()  # no revoked secret shown
    assert await live.service.identify(key) is None
    assert not dialog.revoke_button.isEnabled()

    dialog.hide()  # shown once: closing the dialog forgets it
    assert dialog.new_key.text() == ""


# --- Set up a tool ---------------------------------------------------------------------------------


async def test_setup_tool_creates_a_key_for_the_tool_and_fills_the_lines(qtbot, live):
    dialog = shown(qtbot, SetupToolDialog(live.bridge))
    page = dialog.pages["claude-code"]
    assert all(KEY_PLACEHOLDER in text for text in page.texts())
    page.create_button.click()
    await live.bridge.wait_idle()
    key = page.key
    assert key and key.startswith("sl-")
    assert page.texts()[0] == (
        f"export ANTHROPIC_BASE_URL={live.url}\nexport ANTHROPIC_AUTH_TOKEN={key}\n"
        "export _CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL=1"
    )
    assert [k["name"] for k in await live.service.list_keys()] == ["claude-code"]
    assert await live.service.identify(key) is not None
    QApplication.clipboard().clear()
    page.copy_buttons[0].click()
    assert QApplication.clipboard().text() == page.texts()[0]

    codex = dialog.pages["codex"]
    codex.create_button.click()
    await live.bridge.wait_idle()
    assert f'base_url = "{live.url}/v1"' in codex.texts()[0]
    assert codex.texts()[1] == f"export SUBLANE_KEY={codex.key}"

    dialog.hide()
    assert page.key is None and KEY_PLACEHOLDER in page.texts()[0]


async def test_settings_say_their_choices_in_words(qtbot, live):
    """R-UI-16, fault 12: no raw setting value among the choices, and the two settings a
    person cannot guess ("Global cap", "Quota poll floor") say what they do."""
    from sublane_desktop.core.scheduler import MODES

    dialog = shown(qtbot, SettingsDialog(live.bridge))
    choices = [dialog.mode.itemText(i) for i in range(dialog.mode.count())]
    assert len(choices) == len(MODES)
    assert all("_" not in choice and choice not in MODES for choice in choices), choices
    for i in range(dialog.mode.count()):
        assert dialog.mode.itemData(i, Qt.ItemDataRole.ToolTipRole), choices[i]
    dialog.mode.setCurrentIndex(dialog.mode.findData("cost_aware"))
    assert dialog.mode.currentText() == "Keep conversations' caches"
    # Third newcomer pass: every field is explained, in words of its own (no "ceiling",
    # "cap" or "poll floor" of the design)
    from PySide6.QtWidgets import QFormLayout, QLabel

    form = dialog.findChild(QFormLayout)
    labels = [
        item.widget().text()
        for row in range(form.rowCount())
        if (item := form.itemAt(row, QFormLayout.ItemRole.LabelRole)) is not None
        and isinstance(item.widget(), QLabel)
    ]
    for jargon in ("ceiling", "cap", "floor"):
        assert not [label for label in labels if jargon in label.lower()], labels
    assert dialog.ceiling_note.text().startswith("Once an account has used this much")
    assert "worth the cached input" in dialog.mode_note.text()
    assert dialog.cap_note.isVisible() and "at once, across all accounts" in dialog.cap_note.text()
    assert dialog.poll_note.isVisible() and "at most this often" in dialog.poll_note.text()


async def test_an_error_in_add_account_squashes_no_field(qtbot, live):
    """Fault 6: a two-line error pushed the form, and the fields shrank below their height."""
    from PySide6.QtWidgets import QAbstractSpinBox, QComboBox

    dialog = shown(qtbot, AddAccountDialog(live.bridge))
    qtbot.waitExposed(dialog)
    show_error(
        dialog.error,
        "work already exists, and needs a new credential (its sign-in no longer works: the "
        "refresh token was revoked). Replace its credential with this one? It keeps its history "
        "and settings.",
    )
    dialog.replace_button.show()
    fields = [
        f for kind in (QLineEdit, QComboBox, QAbstractSpinBox) for f in dialog.findChildren(kind)
    ]
    qtbot.waitUntil(
        lambda: dialog.error.height() >= dialog.error.heightForWidth(dialog.error.width())
    )

    def squashed() -> list[str]:
        return [
            field.accessibleName() or type(field).__name__
            for field in fields
            if field.isVisible()
            and not isinstance(field.parent(), (QComboBox, QAbstractSpinBox))  # their own edit
            and field.height() < field.minimumSizeHint().height()
        ]

    # the content settles within a few event-loop turns (its scroll area resizes it)
    qtbot.waitUntil(lambda: not squashed(), timeout=2000)


async def test_add_account_names_providers_and_fields_in_words(qtbot, live):
    """R-UI-16, from the newcomer pass: no provider ids or an unexplained "Limit"."""
    from PySide6.QtWidgets import QFormLayout, QLabel

    dialog = shown(qtbot, AddAccountDialog(live.bridge))
    items = [dialog.provider.itemText(i) for i in range(dialog.provider.count())]
    assert items == ["Claude (Anthropic)", "ChatGPT / Codex (OpenAI)", "Antigravity (Google)"]
    dialog.choose_provider("codex")
    assert dialog.provider_id() == "codex"
    form = dialog.provider.parentWidget().layout()
    assert isinstance(form, QFormLayout)
    label = form.labelForField(dialog.limit)
    assert isinstance(label, QLabel) and label.text() == "Requests at once"
    assert dialog.limit.toolTip()


async def test_every_copy_button_says_it_copied_then_is_ready_again(qtbot, live, monkeypatch):
    """Third newcomer pass: Copy in Set up a tool, Client keys and the Accounts window (and
    the welcome) put the text on the clipboard and showed nothing, so people were unsure."""
    from PySide6.QtGui import QGuiApplication

    from sublane_desktop.gui import dialogs
    from sublane_desktop.gui.accounts_window import AccountsWindow

    monkeypatch.setattr(dialogs.common, "COPIED_MS", 50)
    setup = shown(qtbot, SetupToolDialog(live.bridge))
    accounts = AccountsWindow(live.bridge)
    qtbot.addWidget(accounts)
    page = setup.pages["claude-code"]
    for button, expected in [
        (page.copy_buttons[0], page.texts()[0]),
        (accounts.copy_button, live.bridge.endpoint_url()),
    ]:
        width = button.width()
        button.click()
        assert QGuiApplication.clipboard().text() == expected
        assert button.text() == "Copied ✓" and button.width() == width  # nothing beside moves
        qtbot.waitUntil(lambda b=button: b.text() == "Copy", timeout=2000)
    await live.bridge.wait_idle()
