"""R-LOGIN-4 on the desktop: an account whose credential vanished from the keyring says why in
the tray and the Accounts window, and Add account, given its name again, offers to replace its
credential (mending it in place) instead of refusing with "already exists".

The entry is deleted with the keyring library's own file backend, as another program would."""

from __future__ import annotations

import json

from sublane_desktop.accounts.secrets import SERVICE, account_secret
from sublane_desktop.gui.accounts_window import AccountsWindow
from sublane_desktop.gui.dashboard import account_row
from sublane_desktop.gui.dialogs.add_account import AddAccountDialog
from sublane_desktop.gui.notifications import transitions
from sublane_desktop.gui.tray import Tray
from tests.conftest import file_keyring

MISSING = "credential missing from the keyring — sign in again"
OLD = {"access_token": "sk-ant-oat01-old-4c1d", "refresh_token": "rt-old", "expires_at": 4e9}
NEW = {"access_token": "sk-ant-oat01-new-8e2b", "refresh_token": "rt-new", "expires_at": 4e9}


async def vanished(live, tmp_path, seen: list | None = None) -> int:
    """work (a subscription login) lost its credential and the service noticed; spare is fine.
    `seen` gets the snapshot from before the loss."""
    service = live.service
    work = (await service.add_account("anthropic", "work", OLD))["id"]
    await service.add_account("anthropic", "spare", {"api_key": "sk-ant-api03-spare"})
    if seen is not None:
        seen.extend(live.bridge.accounts())
    file_keyring(tmp_path / "keyring.cfg").delete_password(SERVICE, account_secret(work))
    await service.credentials.sweep()  # the watch's look, without waiting for it
    assert service.account_view(work)["state"] == "auth_failed"
    live.bridge.refresh_snapshot()
    return work


def shown(qtbot, widget):
    qtbot.addWidget(widget)
    widget.show()
    return widget


async def test_the_reason_shows_in_the_tray_and_the_accounts_window(qtbot, live, tmp_path):
    await vanished(live, tmp_path)
    window = shown(qtbot, AccountsWindow(live.bridge))
    card = window.card_named("work")
    assert card.reason_label.isVisibleTo(window)
    assert card.reason_label.text() == "credential missing from the keyring"
    assert not window.card_named("spare").reason_label.isVisibleTo(window)
    tray = Tray(live.bridge)
    qtbot.waitUntil(
        lambda: "work: Sign in again — credential missing from the keyring" in tray.icon.toolTip(),
        timeout=2000,
    )
    [row] = [a for a in live.bridge.snapshot() if a["name"] == "work"]
    assert "credential missing from the keyring" in account_row(row, {}, live.clock.now()).text


async def test_the_notification_says_why_and_the_fix(live, tmp_path):
    before: list = []
    await vanished(live, tmp_path, before)
    [notice] = transitions(before, live.bridge.accounts())
    assert notice.title == "work needs a new login"
    assert notice.body == "Credential missing from the keyring — sign in again."
    # a refusal the service gave no words for still points at a way that mends in place
    [refused] = transitions(
        [{"id": 1, "name": "x", "state": "ok"}],
        [{"id": 1, "name": "x", "state": "auth_failed"}],
    )
    assert "sign in again" in refused.body and "add" not in refused.body


async def test_add_account_offers_to_replace_a_missing_credential_and_mends_in_place(
    qtbot, live, tmp_path, secret_store
):
    work = await vanished(live, tmp_path)
    revision = live.service.pool.accounts[work].revision
    window = shown(qtbot, AccountsWindow(live.bridge))
    dialog = shown(qtbot, AddAccountDialog(live.bridge))
    assert dialog.replace_button.isHidden()
    dialog.choose_provider("anthropic")
    dialog.name.setText("work")
    dialog.secret.setText(json.dumps(NEW))
    dialog.add_button.click()
    await live.bridge.wait_idle()
    # not "already exists": an offer, with the reason, and nothing written yet
    assert "already exists" in dialog.error.text() and MISSING in dialog.error.text()
    assert "Replace its credential" in dialog.error.text()
    assert "sk-ant-oat01-new" not in dialog.error.text()
    assert not dialog.replace_button.isHidden()
    assert live.service.pool.accounts[work].revision == revision
    assert secret_store.get(account_secret(work)) is None

    dialog.replace_button.click()
    await live.bridge.wait_idle()
    assert dialog.status.text() == "Replaced the credential of work."
    assert dialog.error.isHidden() and dialog.replace_button.isHidden()
    assert dialog.secret.text() == ""
    account = live.service.pool.accounts[work]
    assert account.revision == revision + 1 and not account.auth_failed
    assert live.service.account_view(work)["state"] == "ok"
    assert json.loads(secret_store.get(account_secret(work))) == NEW
    assert [a["name"] for a in live.service.accounts_runtime()["accounts"]] == ["work", "spare"]
    live.bridge.refresh_snapshot()
    qtbot.waitUntil(lambda: not window.card_named("work").reason_label.isVisibleTo(window))

    # and it serves again, with the new credential
    key = await live.create_key()
    await live.service.switch("work")
    assert await live.message(key) == 200
    assert live.upstream.tokens_served()[-1] == NEW["access_token"]


async def test_a_healthy_account_of_that_name_is_still_refused(qtbot, live, tmp_path):
    await vanished(live, tmp_path)
    dialog = shown(qtbot, AddAccountDialog(live.bridge))
    dialog.choose_provider("anthropic")
    dialog.name.setText("spare")  # works: a second credential under its name is a mistake
    dialog.secret.setText("sk-ant-api03-other")
    dialog.add_button.click()
    await live.bridge.wait_idle()
    assert dialog.error.text() == "account 'spare' already exists"
    assert dialog.replace_button.isHidden()

    # another provider's name is not offered either: that would be a different account
    dialog.choose_provider("codex")
    dialog.name.setText("work")
    dialog.secret.setText("sk-proj-other")
    dialog.add_button.click()
    await live.bridge.wait_idle()
    assert dialog.error.text() == "account 'work' already exists"
    assert dialog.replace_button.isHidden()


async def test_editing_the_name_withdraws_the_offer(qtbot, live, tmp_path):
    await vanished(live, tmp_path)
    dialog = shown(qtbot, AddAccountDialog(live.bridge))
    dialog.name.setText("work")
    dialog.secret.setText(json.dumps(NEW))
    dialog.add_button.click()
    assert not dialog.replace_button.isHidden()
    dialog.name.setText("work2")
    assert dialog.replace_button.isHidden()
