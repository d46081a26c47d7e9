"""R-UI-8: failures reach the person, driven by real conditions — a keyring backend that fails,
a credential removed from the keyring."""

from __future__ import annotations

import aiohttp
import keyring
import keyring.core
import pytest
from PySide6.QtWidgets import QLineEdit

from sublane_desktop.accounts import problems
from sublane_desktop.accounts.secrets import FILE_NAME, account_secret
from sublane_desktop.gui.accounts_window import AccountsWindow
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.dialogs.add_account import AddAccountDialog
from sublane_desktop.gui.dialogs.keyring_setup import KeyringDialog
from sublane_desktop.gui.pool_status import tooltip_text
from sublane_desktop.gui.tray import Tray
from sublane_desktop.service import Service
from tests.conftest import Harness
from tests.fake_upstream import CLAUDE_CODE_HEADERS

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "hi"}],
}
PASSWORD = "correct horse battery"


@pytest.fixture
def failing_keyring(monkeypatch):
    """The machine's keyring is keyring's `fail` backend: nothing can be stored."""
    for name in ("SUBLANE_KEYRING", "SUBLANE_KEYRING_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    previous = keyring.get_keyring()
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    keyring.core.init_backend()
    yield
    keyring.core.set_keyring(previous)


async def started(tmp_path, upstream, **kwargs) -> Service:
    service = Service(
        tmp_path / "data", port=0, env={"SUBLANE_ANTHROPIC_BASE_URL": upstream.url}, **kwargs
    )
    await service.start()
    return service


async def test_no_keyring_dialog_creates_the_encrypted_file_after_two_matching_passwords(
    qtbot, qapp, tmp_path, upstream, failing_keyring
):
    service = await started(tmp_path, upstream)
    bridge = Bridge(service)
    try:
        assert service.keyring_problem.startswith("no usable OS keyring")
        window = AccountsWindow(bridge)
        qtbot.addWidget(window)
        assert not window.keyring_row.isHidden()
        assert window.keyring_button.text() == "Set up a keyring…"

        # Add account does not promise a keyring that is not there (third newcomer pass).
        adding = AddAccountDialog(bridge)
        qtbot.addWidget(adding)
        adding.show()
        assert adding.keyring_note.text() == (
            "No keyring is open, so no secret can be kept yet: set up a keyring first."
        )
        adding.hide()

        dialog = KeyringDialog(bridge)
        qtbot.addWidget(dialog)
        # Plain words (fault 12): no backend class, no environment variable, unless asked.
        dialog.show()
        for shown in (window.keyring_banner.text(), dialog.problem_label.text()):
            assert "no system keyring" in shown
            for jargon in ("keyring.backends", "SUBLANE_KEYRING", "PYTHON_KEYRING", "="):
                assert jargon not in shown, shown
        assert dialog.details.isHidden()
        dialog.details_button.click()
        assert dialog.details.isVisible() and "no usable OS keyring" in dialog.details.text()
        # Not even behind Details, nor in the banner's tooltip (the terminal keeps them)
        for shown in (dialog.details.text(), window.keyring_banner.toolTip()):
            for jargon in ("keyring.backends", "SUBLANE_KEYRING", "PYTHON_KEYRING"):
                assert jargon not in shown, shown
        assert dialog.creating and dialog.ok_button.text() == "Create encrypted keyring"
        assert dialog.password.echoMode() is QLineEdit.EchoMode.Password
        dialog.password.show_toggle.click()  # the Show toggle reveals, for checking a typo
        assert dialog.password.echoMode() is QLineEdit.EchoMode.Normal

        dialog.password.setText(PASSWORD)
        dialog.confirm.setText(PASSWORD + "x")
        dialog.ok_button.click()
        assert dialog.error.text() == "The two passwords differ; type them again."
        assert not (tmp_path / "data" / FILE_NAME).exists()

        dialog.confirm.setText(PASSWORD)
        with qtbot.waitSignal(dialog.opened, timeout=10000) as opened:
            dialog.ok_button.click()
            await bridge.wait_idle()
        assert opened.args[0].startswith("encrypted file: ")
        assert (tmp_path / "data" / FILE_NAME).stat().st_mode & 0o777 == 0o600
        assert service.keyring_problem is None
        qtbot.waitUntil(lambda: window.keyring_row.isHidden(), timeout=2000)
        adding.show()  # opened again: the secret now goes to the file just made
        assert adding.keyring_note.text() == (
            "The secret goes to SubLane's encrypted keyring file, never to SubLane's database."
        )
        adding.hide()

        # it works at once: the management API answers and an account can be added
        async with (
            aiohttp.ClientSession() as s,
            s.get(
                service.endpoint_url + "/api/accounts/runtime",
                headers={"Authorization": f"Bearer {service.admin_token}"},
            ) as r,
        ):
            assert r.status == 200
        reply = bridge.add_account("anthropic", "work", {"api_key": "sk-ant-api03-w"})
        assert (await reply)["state"] == "ok"
    finally:
        bridge.close()
        await service.stop(drain_timeout=1)

    # Next start: the OS keyring still fails; the file exists, so the dialog asks once.
    again = await started(tmp_path, upstream)
    bridge = Bridge(again)
    try:
        work = again.accounts_runtime()["accounts"][0]
        assert work["state"] == "auth_failed"
        assert work["auth_reason"] == problems.KEYRING_UNAVAILABLE
        dialog = KeyringDialog(bridge)
        qtbot.addWidget(dialog)
        assert not dialog.creating and dialog.ok_button.text() == "Unlock"
        assert not dialog.confirm.isVisibleTo(dialog)
        dialog.password.setText("wrong password!")
        dialog.ok_button.click()
        await bridge.wait_idle()
        assert (
            dialog.error.text() == "Could not open the keyring: encrypted keyring: wrong password"
        )
        assert again.keyring_problem is not None
        dialog.password.setText(PASSWORD)
        dialog.ok_button.click()
        await bridge.wait_idle()
        assert again.keyring_problem is None
        assert again.accounts_runtime()["accounts"][0]["state"] == "ok"
        assert (await again.credential(again.pool.find("work")))["api_key"] == "sk-ant-api03-w"
    finally:
        bridge.close()
        await again.stop(drain_timeout=1)


async def test_a_credential_removed_from_the_keyring_turns_the_account_auth_failed(
    qtbot, tmp_path, upstream, secret_store
):
    service = await started(tmp_path, upstream, secret_store=secret_store)
    h = Harness(service, upstream)
    bridge = Bridge(service)
    try:
        acc = await h.add_account("work", "tok-w")
        key = await h.create_key()
        tray = Tray(bridge)
        secret_store.delete(account_secret(acc))  # gone from the keyring behind our back

        async with (
            aiohttp.ClientSession() as s,
            s.post(
                service.endpoint_url + "/v1/messages",
                json=BODY,
                headers={"x-api-key": key, **CLAUDE_CODE_HEADERS},
            ) as r,
        ):
            body = await r.json()
        assert r.status >= 400
        # the account, what is wrong, and the fix (R-LOGIN-4)
        assert body["error"]["message"].startswith(
            "account work: credential missing from the keyring; sign in again"
        )
        assert "sublane account login work" in body["error"]["message"]
        missing = problems.own_reason(problems.MISSING, "oauth")
        assert missing == "credential missing from the keyring — sign in again"
        view = service.account_view(acc)
        assert view["state"] == "auth_failed"
        assert view["auth_reason"] == missing
        qtbot.waitUntil(
            lambda: (
                f"work: Sign in again — {missing.removesuffix(' — sign in again')}"
                in tray.icon.toolTip()
            ),
            timeout=2000,
        )
        assert tooltip_text("u", [view]).splitlines()[1:3] == [
            "No account can serve a request now",
            f"work: Sign in again — {missing.removesuffix(' — sign in again')}",
        ]

        # adding it again (a new credential) repairs it
        await service.add_account("anthropic", "work", {"api_key": "tok-w"}, replace=True)
        assert service.account_view(acc)["state"] == "ok"
        assert service.account_view(acc)["auth_reason"] is None
    finally:
        bridge.close()
        await service.stop(drain_timeout=1)
