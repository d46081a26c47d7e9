"""Browser sign-in from the desktop (R-LOGIN-1): the Add account dialog's "Sign in with the
browser" for each provider, and "Sign in again" in the tray row's submenu and the Accounts
window's ⋯ menu, which mends an account in place. The "browser" is an HTTP client that follows
the redirect (tests/browser_follow.py), run where the system browser would open."""

from __future__ import annotations

import asyncio
import socket

import pytest

from sublane_desktop.gui.accounts_window import AccountsWindow
from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.dialogs.add_account import AddAccountDialog
from sublane_desktop.gui.tray import Tray
from tests.browser_follow import follow
from tests.conftest import started_harness


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def desk(qapp, tmp_path, upstream, codex_upstream, antigravity_upstream, secret_store):
    async with started_harness(
        tmp_path, secret_store, upstream, codex=codex_upstream, google=antigravity_upstream
    ) as h:
        port = free_port()
        codex_upstream.redirect_ports = {port}
        h.service.env.update(
            {
                "SUBLANE_CLAUDE_AUTH_BASE_URL": upstream.url,
                "SUBLANE_CODEX_AUTH_BASE_URL": codex_upstream.url,
                "SUBLANE_GOOGLE_AUTH_BASE_URL": antigravity_upstream.url,
                "SUBLANE_LOGIN_PORT": str(port),
                "SUBLANE_LOGIN_TIMEOUT": "20",
            }
        )
        upstream.usage_for["*"] = {
            "five_hour": {"utilization": 42.0, "resets_at": "2030-01-01T00:00:00Z"},
            "seven_day": None,
        }
        bridge = Bridge(h.service)
        bridge.sign_in_browser = follow
        h.bridge = bridge
        try:
            yield h
        finally:
            await bridge.wait_idle()
            bridge.close()


def dialog_of(qtbot, desk) -> AddAccountDialog:
    dialog = AddAccountDialog(desk.bridge)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


@pytest.mark.parametrize(
    ("which", "provider", "name"),
    [
        ("claude", "anthropic", "person1@example.com"),
        ("codex", "codex", "person1@example.com"),
        ("antigravity", "antigravity", "antigravity-1"),
    ],
)
async def test_sign_in_with_browser_adds_a_verified_account(
    qtbot, desk, which, provider, name
) -> None:
    dialog = dialog_of(qtbot, desk)
    added: list[dict] = []
    dialog.added.connect(added.append)
    dialog.signin_buttons[which].click()
    assert dialog.status.text() == "Waiting for you to sign in in your browser…"
    assert not dialog.signin_buttons["claude"].isEnabled()  # one sign-in at a time
    await desk.bridge.wait_idle()
    assert dialog.error.isHidden(), dialog.error.text()
    assert dialog.status.text().startswith(f"Signed in: {name} — the credential works")
    assert [(v["name"], v["provider"]) for v in added] == [(name, provider)]
    [account] = desk.service.accounts_runtime()["accounts"]
    assert account["state"] == "ok"
    if which == "claude":  # the quota was read at once: real gauges, not cold ones
        assert round(account["gauges"]["five_hour"]["utilization"] * 100) == 42
    assert dialog.signin_buttons["claude"].isEnabled()
    text = dialog.status.text() + dialog.signin_url.text()
    assert "signin-1" not in text and "code" not in dialog.status.text()


async def test_a_sign_in_the_browser_never_answers_says_so_and_adds_nothing(qtbot, desk) -> None:
    desk.service.env["SUBLANE_LOGIN_TIMEOUT"] = "0.3"
    desk.bridge.sign_in_browser = lambda url: None  # the page was closed
    dialog = dialog_of(qtbot, desk)
    dialog.signin_buttons["claude"].click()
    await desk.bridge.wait_idle()
    assert "no answer from the browser within 0.3 s" in dialog.error.text()
    assert dialog.status.text() == ""
    assert desk.service.accounts_runtime()["accounts"] == []
    # the address to open by hand was shown while it waited, and is gone again
    assert dialog.signin_url.isHidden()


async def signed_in_then_refused(desk) -> tuple[int, int]:
    settled = await desk.bridge.sign_in("claude")
    account_id = settled["account"]["id"]
    account = desk.service.pool.find(account_id)
    desk.service.pool.mark_auth_failed(account)
    assert desk.service.account_view(account_id)["state"] == "auth_failed"
    return account_id, account.revision


async def test_sign_in_again_from_the_tray_mends_the_account_in_place(qtbot, desk) -> None:
    account_id, revision = await signed_in_then_refused(desk)
    tray = Tray(desk.bridge)
    tray._rebuild_menu()
    menu = tray.account_menu("person1@example.com")
    again = next(a for a in menu.actions() if a.text() == "Sign in again…")
    again.trigger()
    await desk.bridge.wait_idle()
    view = desk.service.account_view(account_id)
    assert view["state"] == "ok"
    assert desk.service.pool.find(account_id).revision == revision + 1
    assert len(desk.service.accounts_runtime()["accounts"]) == 1  # mended, not added
    tray._rebuild_menu()
    assert "Sign in again…" not in [
        a.text() for a in tray.account_menu("person1@example.com").actions()
    ]
    tray.hide()


async def test_sign_in_again_from_the_accounts_window(qtbot, desk) -> None:
    account_id, revision = await signed_in_then_refused(desk)
    window = AccountsWindow(desk.bridge)
    qtbot.addWidget(window)
    window.refresh()
    card = window.cards[account_id]
    qtbot.waitUntil(lambda: card.signin_action.isVisible(), timeout=2000)
    card.signin_action.trigger()
    await desk.bridge.wait_idle()
    assert desk.service.account_view(account_id)["state"] == "ok"
    assert desk.service.pool.find(account_id).revision == revision + 1
    window.refresh()
    qtbot.waitUntil(lambda: not card.signin_action.isVisible(), timeout=2000)


async def test_signing_the_same_person_in_twice_points_to_sign_in_again(qtbot, desk) -> None:
    await desk.bridge.sign_in("claude")
    desk.upstream.signins = 0  # the fake names the next sign-in's person the same again
    dialog = dialog_of(qtbot, desk)
    dialog.signin_buttons["claude"].click()
    await desk.bridge.wait_idle()
    assert dialog.error.text() == (
        "account 'person1@example.com' already exists; to give it this login, use Sign in"
        " again on it (tray or Accounts window)"
    )
    assert len(desk.service.accounts_runtime()["accounts"]) == 1


async def test_closing_the_dialog_abandons_a_waiting_sign_in(qtbot, desk, monkeypatch) -> None:
    desk.bridge.sign_in_browser = lambda url: None  # nobody signs in
    dialog = dialog_of(qtbot, desk)
    listening = asyncio.Event()
    show = dialog._show_signin_url

    def shown(url: str) -> None:
        show(url)
        listening.set()

    monkeypatch.setattr(dialog, "_show_signin_url", shown)
    dialog.signin_buttons["codex"].click()
    await asyncio.wait_for(listening.wait(), 5)  # it listens and shows the address
    assert dialog.signin_url.isVisible()
    dialog.hide()
    await asyncio.wait_for(desk.bridge.wait_idle(), 5)  # over at once, not after 20 s
    assert dialog.signin_buttons["codex"].isEnabled() and dialog.status.text() == ""
    assert dialog.error.isHidden()  # abandoned by the person: nothing to report
    # the port is free again: the next sign-in listens there and completes
    desk.bridge.sign_in_browser = follow
    settled = await desk.bridge.sign_in("codex")
    assert settled["verdict"]["result"] == "ok"
    assert [a["name"] for a in desk.service.accounts_runtime()["accounts"]] == [
        "person1@example.com"
    ]
