"""One refresh-token family, two holders (R-LOGIN-2): an imported login and the tool it came
from rotate in either order and neither ever uses a spent token.

The "tool" is this test: it refreshes with the token in its own store against the same strict
fake (refresh tokens single-use, as Claude's and Codex's are) and writes the store as the tool
does. SubLane refreshes when its access token nears expiry (the fake clock moves it there).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from pathlib import Path

import aiohttp
import anthropic
import pytest

from sublane_desktop.accounts.secrets import account_secret
from sublane_desktop.core.clock import FakeClock
from sublane_desktop.providers import oauth
from sublane_desktop.providers.oauth import ANTHROPIC_CLIENT_ID, CODEX_CLIENT_ID
from tests.conftest import started_harness
from tests.fake_upstream import CLAUDE_CODE_HEADERS
from tests.openai_helpers import oai

from .tool_logins import FakeKeychain, claude_login, codex_access, codex_auth, write_json

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 8,
    "messages": [{"role": "user", "content": "x"}],
}
HOUR = 3600.0


@pytest.fixture
async def h(tmp_path: Path, upstream, codex_upstream, secret_store, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    async with started_harness(
        tmp_path, secret_store, upstream, codex=codex_upstream, clock=FakeClock()
    ) as harness:
        harness.home = home
        # No background quota reads here: these tests count refreshes, and a read traffic
        # starts on a stale gauge (R-GAUGE-3) would refresh too, at a moment that depends on
        # timing. (The chained test tokens' JWTs say exp 0, so a read that takes the written-back
        # token from the tool's file sees it expired; real tokens' exp and expires_in agree.)
        harness.service.quota.refresh_stale = lambda provider: None
        # Nor the read an import starts at once (R-UI-14, tests/test_fresh_gauges.py): it
        # refreshes an expiring token in the background, racing the refresh a test counts.
        harness.service.quota.read_new = lambda account_ids: None
        # each family's tokens chain: n -> n+1, every one good exactly once
        upstream.refresh_grants.update(
            {
                f"sk-ant-ort01-{n}": (f"sk-ant-oat01-{n + 1}", f"sk-ant-ort01-{n + 1}")
                for n in range(20)
            }
        )
        codex_upstream.refresh_grants.update(
            {f"rt-{n}": (codex_access(str(n + 1), 0), f"rt-{n + 1}") for n in range(20)}
        )
        codex_upstream.account_id = "acct-1"
        harness.key = await harness.create_key()
        yield harness


def claude_file(h, n: int, expires_in: float, **extra) -> Path:
    directory = h.home / "claude-config"
    h.service.env["CLAUDE_CONFIG_DIR"] = str(directory)
    expires_ms = int((h.clock.now() + expires_in) * 1000)
    return write_json(directory / ".credentials.json", claude_login(str(n), expires_ms, **extra))


async def claude_code_refreshes(h, path: Path) -> str:
    """Claude Code's own refresh: the token in its file, its client id, the answer written back
    to the file. The tool never holds a spent token, so the endpoint must take it."""
    data = json.loads(path.read_text())
    login = data["claudeAiOauth"]
    grant = {
        "grant_type": "refresh_token",
        "refresh_token": login["refreshToken"],
        "client_id": ANTHROPIC_CLIENT_ID,
    }
    async with (
        aiohttp.ClientSession() as s,
        s.post(h.upstream.url + "/v1/oauth/token", json=grant) as r,
    ):
        assert r.status == 200, f"the tool's refresh was refused: {await r.text()}"
        body = await r.json()
    login.update(
        accessToken=body["access_token"],
        refreshToken=body["refresh_token"],
        expiresAt=int((h.clock.now() + body["expires_in"]) * 1000),
    )
    path.write_text(json.dumps(data))
    return body["access_token"]


async def ask_as_claude_code(h) -> str:
    client = anthropic.AsyncAnthropic(
        base_url=h.url, api_key=h.key, max_retries=0, default_headers=CLAUDE_CODE_HEADERS
    )
    try:
        await client.messages.create(**BODY)
    finally:
        await client.close()
    return h.upstream.tokens_served()[-1]


def never_spent(calls: list[dict]) -> None:
    """Every refresh either side made used a token nobody had used before."""
    used = Counter(call["refresh_token"] for call in calls)
    assert [token for token, n in used.items() if n > 1] == []


def file_tokens(path: Path) -> tuple[str, str]:
    login = json.loads(path.read_text())["claudeAiOauth"]
    return login["accessToken"], login["refreshToken"]


async def test_claude_sublane_refreshes_first_then_the_tool(h) -> None:
    path = claude_file(h, 0, HOUR, mcpOAuth={"github": {"accessToken": "gh-keep"}})
    view = await h.service.import_login("claude-code")
    assert await ask_as_claude_code(h) == "sk-ant-oat01-0"

    h.clock.advance(HOUR)  # SubLane's token nears expiry: it refreshes and writes back
    assert await ask_as_claude_code(h) == "sk-ant-oat01-1"
    assert file_tokens(path) == ("sk-ant-oat01-1", "sk-ant-ort01-1")
    kept = json.loads(path.read_text())
    assert kept["mcpOAuth"] == {"github": {"accessToken": "gh-keep"}}
    assert kept["claudeAiOauth"]["subscriptionType"] == "max"

    h.clock.advance(2 * HOUR)
    assert await claude_code_refreshes(h, path) == "sk-ant-oat01-2"  # the tool's turn: fine

    h.clock.advance(6.5 * HOUR)  # SubLane's token is old; the tool's fresh one is adopted
    assert await ask_as_claude_code(h) == "sk-ant-oat01-2"
    secret = json.loads(await h.service.secrets.aget(account_secret(view["id"])) or "{}")
    assert secret["refresh_token"] == "sk-ant-ort01-2"

    h.clock.advance(8 * HOUR)  # both old: SubLane refreshes the live token, the tool follows
    assert await ask_as_claude_code(h) == "sk-ant-oat01-3"
    assert await claude_code_refreshes(h, path) == "sk-ant-oat01-4"
    never_spent(h.upstream.refresh_calls)
    assert h.service.account_view(view["id"])["state"] == "ok"


async def test_claude_the_tool_refreshes_first_then_sublane(h) -> None:
    path = claude_file(h, 0, HOUR)
    view = await h.service.import_login("claude-code")
    assert await claude_code_refreshes(h, path) == "sk-ant-oat01-1"  # the tool spends rt-0

    h.clock.advance(HOUR)  # SubLane's copy is spent: it reads the tool's and uses it
    assert await ask_as_claude_code(h) == "sk-ant-oat01-1"
    assert [c["refresh_token"] for c in h.upstream.refresh_calls] == ["sk-ant-ort01-0"]

    h.clock.advance(8 * HOUR)
    assert await ask_as_claude_code(h) == "sk-ant-oat01-2"
    assert file_tokens(path) == ("sk-ant-oat01-2", "sk-ant-ort01-2")
    assert await claude_code_refreshes(h, path) == "sk-ant-oat01-3"
    never_spent(h.upstream.refresh_calls)
    assert h.service.account_view(view["id"])["state"] == "ok"


async def test_the_tool_rotating_between_sublanes_read_and_refresh(h, monkeypatch) -> None:
    """The tool spends the token after SubLane read its store but before SubLane's refresh
    reached the endpoint: SubLane is refused, reads again, and carries on with the tool's."""
    path = claude_file(h, 0, HOUR)
    view = await h.service.import_login("claude-code")
    real = oauth.refresh
    raced: list[bool] = []

    async def tool_first(*args, **kwargs):
        if not raced:
            raced.append(True)
            await claude_code_refreshes(h, path)
        return await real(*args, **kwargs)

    monkeypatch.setattr(oauth, "refresh", tool_first)
    h.clock.advance(HOUR)
    assert await ask_as_claude_code(h) == "sk-ant-oat01-1"  # the tool's, adopted after refusal
    assert h.service.account_view(view["id"])["state"] == "ok"
    # the one refused call was SubLane's spent token, found out by the endpoint, not used
    assert [c["refresh_token"] for c in h.upstream.refresh_calls] == [
        "sk-ant-ort01-0",
        "sk-ant-ort01-0",
    ]


async def test_claude_keychain_is_kept_in_step(h) -> None:
    keychain = FakeKeychain(h.home.parent)
    keychain.install()
    h.service.env["SUBLANE_SECURITY_COMMAND"] = str(keychain.command)
    expires = int((h.clock.now() + HOUR) * 1000)
    keychain.put("Claude Code-credentials", "me", json.dumps(claude_login("0", expires)))
    view = await h.service.import_login("claude-code")
    h.clock.advance(HOUR)
    assert await ask_as_claude_code(h) == "sk-ant-oat01-1"
    item = keychain.get("Claude Code-credentials")
    assert item is not None and item["account"] == "me"
    assert json.loads(item["password"])["claudeAiOauth"]["refreshToken"] == "sk-ant-ort01-1"
    assert "sk-ant" not in keychain.calls()
    assert h.service.account_view(view["id"])["state"] == "ok"


@pytest.mark.parametrize("how", ["vanished", "unreadable"])
async def test_a_source_gone_or_unreadable_does_not_break_sublanes_refresh(h, how) -> None:
    path = claude_file(h, 0, HOUR)
    view = await h.service.import_login("claude-code")
    if how == "vanished":  # the person logged the tool out
        shutil.rmtree(path.parent)
    else:
        path.unlink()
        path.mkdir()
    h.clock.advance(HOUR)
    assert await ask_as_claude_code(h) == "sk-ant-oat01-1"  # SubLane's own copy refreshed
    assert h.service.account_view(view["id"])["state"] == "ok"
    if how == "vanished":
        assert not path.parent.exists()  # a logged-out tool is not logged back in
    else:
        assert path.is_dir()


async def test_detached_import_keeps_out_of_the_tools_store(h) -> None:
    path = claude_file(h, 0, HOUR)
    before = path.read_text()
    await h.service.import_login("claude-code", detach=True)
    h.clock.advance(HOUR)
    assert await ask_as_claude_code(h) == "sk-ant-oat01-1"
    assert path.read_text() == before  # never written...
    # ...so the tool now holds a spent token: what --detach warns about
    grant = {
        "grant_type": "refresh_token",
        "refresh_token": "sk-ant-ort01-0",
        "client_id": ANTHROPIC_CLIENT_ID,
    }
    async with (
        aiohttp.ClientSession() as s,
        s.post(h.upstream.url + "/v1/oauth/token", json=grant) as r,
    ):
        assert r.status == 400


# --- Codex ------------------------------------------------------------------------------------


def codex_file(h, n: int, exp: float, account_id: str = "acct-1") -> Path:
    directory = h.home / "codex-home"
    h.service.env["CODEX_HOME"] = str(directory)
    h.service.env["SUBLANE_OAUTH_BASE_URL"] = h.codex.url
    return write_json(
        directory / "auth.json", codex_auth(codex_access(str(n), int(exp)), f"rt-{n}", account_id)
    )


async def codex_refreshes(h, path: Path) -> str:
    """Codex CLI's own refresh (codex-rs/login: JSON to /oauth/token, then persist_tokens)."""
    data = json.loads(path.read_text())
    grant = {
        "client_id": CODEX_CLIENT_ID,
        "grant_type": "refresh_token",
        "refresh_token": data["tokens"]["refresh_token"],
    }
    async with aiohttp.ClientSession() as s, s.post(h.codex.url + "/oauth/token", json=grant) as r:
        assert r.status == 200, f"the tool's refresh was refused: {await r.text()}"
        body = await r.json()
    data["tokens"].update(
        access_token=body["access_token"],
        refresh_token=body["refresh_token"],
        id_token=body["id_token"],
    )
    path.write_text(json.dumps(data))
    return body["refresh_token"]


async def ask_codex(h) -> str:
    client = oai(h, h.key)
    try:
        await client.responses.create(model="gpt-5.4", input="hi")
    finally:
        await client.close()
    return h.codex.tokens_served()[-1]


async def test_codex_both_orders_and_the_reused_token_refusal(h) -> None:
    path = codex_file(h, 0, h.clock.now() + HOUR)
    view = await h.service.import_login("codex")
    h.codex.usage_for["*"] = 429  # keep quota polls out of this

    # the tool first: SubLane adopts its token (whose JWT has no exp: so it refreshes it)
    assert await codex_refreshes(h, path) == "rt-1"
    h.clock.advance(HOUR)
    await ask_codex(h)
    assert json.loads(path.read_text())["tokens"]["refresh_token"] == "rt-2"  # written back
    written = json.loads(path.read_text())
    assert written["auth_mode"] == "chatgpt" and written["last_refresh"].endswith("Z")
    assert written["tokens"]["account_id"] == "acct-1"

    # then SubLane again (ten days on), then the tool: each takes the other's live token
    h.clock.advance(240 * HOUR)
    await ask_codex(h)
    assert json.loads(path.read_text())["tokens"]["refresh_token"] == "rt-3"
    assert await codex_refreshes(h, path) == "rt-4"
    never_spent(h.codex.refresh_calls)
    assert h.service.account_view(view["id"])["state"] == "ok"

    # the fake answers a reused token as auth.openai.com does
    grant = {"client_id": CODEX_CLIENT_ID, "grant_type": "refresh_token", "refresh_token": "rt-0"}
    async with aiohttp.ClientSession() as s, s.post(h.codex.url + "/oauth/token", json=grant) as r:
        assert r.status == 401
        assert (await r.json())["error"]["code"] == "refresh_token_reused"


async def test_codex_store_holding_another_account_is_left_alone(h) -> None:
    path = codex_file(h, 0, h.clock.now() + HOUR)
    view = await h.service.import_login("codex")
    h.codex.usage_for["*"] = 429
    other = codex_auth(codex_access("x", int(h.clock.now() + 10 * HOUR)), "rt-other", "acct-2")
    write_json(path, other)  # the person logged Codex in to another ChatGPT account
    h.clock.advance(HOUR)
    await ask_codex(h)
    assert json.loads(path.read_text()) == other  # neither adopted nor overwritten
    assert [c["refresh_token"] for c in h.codex.refresh_calls] == ["rt-0"]
    assert h.service.account_view(view["id"])["state"] == "ok"


async def test_a_new_credential_by_hand_ends_the_shared_family(h) -> None:
    """`account add --replace` or a sign-in gives SubLane its own family: the tool's store is
    neither read nor written any more."""
    path = claude_file(h, 0, HOUR)
    view = await h.service.import_login("claude-code")
    own = {
        "access_token": "sk-ant-oat01-own",
        "refresh_token": "sk-ant-ort01-own",
        "expires_at": h.clock.now() + 60,
    }
    h.upstream.refresh_grants["sk-ant-ort01-own"] = ("sk-ant-oat01-own2", "sk-ant-ort01-own2")
    await h.service.add_account("anthropic", "claude-code", own, replace=True)
    before = path.read_text()
    assert await ask_as_claude_code(h) == "sk-ant-oat01-own2"
    assert path.read_text() == before
    assert os.path.exists(path) and view["id"] == h.service.pool.find("claude-code").id


async def test_setup_token_is_never_refreshed_and_says_when_it_stops(h) -> None:
    """R-LOGIN-3: a `claude setup-token` token serves Claude Code as a subscription login, no
    refresh is ever attempted (there is no refresh token), and when Anthropic stops taking it
    the account says so in words."""
    token = "sk-ant-oat01-setup-long-lived"
    view = await h.service.add_account("anthropic", "st", {"access_token": token})
    h.clock.advance(365 * 24 * HOUR)  # expiry unknown: nothing to do ahead of time
    assert await ask_as_claude_code(h) == token
    h.upstream.expired.add(token)
    with pytest.raises(anthropic.AuthenticationError):
        await ask_as_claude_code(h)
    assert h.upstream.refresh_calls == []
    view = h.service.account_view(view["id"])
    assert view["state"] == "auth_failed"
    assert "setup-token` token was refused (it has expired or was revoked)" in view["auth_reason"]
    assert "claude setup-token" in view["auth_reason"] and token not in view["auth_reason"]


async def test_a_store_holding_an_older_login_is_mended_not_adopted(h) -> None:
    """The tool's store holds a login older than SubLane's (say a write-back failed, or a backup
    was restored): its token is spent, so SubLane keeps its own and writes the live one back."""
    path = claude_file(h, 0, HOUR)
    view = await h.service.import_login("claude-code")
    stale = path.read_text()
    h.clock.advance(HOUR)
    assert await ask_as_claude_code(h) == "sk-ant-oat01-1"  # refreshed and written back
    path.write_text(stale)  # ...and then the old file came back
    h.clock.advance(8 * HOUR)
    assert await ask_as_claude_code(h) == "sk-ant-oat01-2"
    assert file_tokens(path) == ("sk-ant-oat01-2", "sk-ant-ort01-2")
    assert await claude_code_refreshes(h, path) == "sk-ant-oat01-3"
    never_spent(h.upstream.refresh_calls)
    assert h.service.account_view(view["id"])["state"] == "ok"


async def test_sublane_refreshes_under_claude_codes_own_lock(h, monkeypatch) -> None:
    """Claude Code 2.1.197 refreshes under `<config dir>/.oauth_refresh.lock` and re-reads its
    login after taking it: SubLane holds the same lock from its re-read to its write-back."""
    path = claude_file(h, 0, HOUR)
    await h.service.import_login("claude-code")
    lock = path.parent / ".oauth_refresh.lock"
    real = oauth.refresh
    held: list[bool] = []

    async def observed(*args, **kwargs):
        held.append(lock.is_dir())
        return await real(*args, **kwargs)

    monkeypatch.setattr(oauth, "refresh", observed)
    h.clock.advance(HOUR)
    assert await ask_as_claude_code(h) == "sk-ant-oat01-1"
    assert held == [True] and not lock.exists()


async def test_a_busy_lock_is_waited_for_and_what_claude_code_wrote_is_used(h) -> None:
    path = claude_file(h, 0, HOUR)
    await h.service.import_login("claude-code")
    lock = path.parent / ".oauth_refresh.lock"
    lock.mkdir()  # Claude Code is refreshing right now
    waits: list[float] = []

    async def claude_code_finishes(seconds: float) -> None:
        waits.append(seconds)
        await claude_code_refreshes(h, path)
        lock.rmdir()

    h.service.credentials.token_sync.wait = claude_code_finishes
    h.clock.advance(HOUR)
    assert await ask_as_claude_code(h) == "sk-ant-oat01-1"  # Claude Code's, read after the wait
    assert len(waits) == 1 and 1.0 <= waits[0] <= 2.0
    assert [c["refresh_token"] for c in h.upstream.refresh_calls] == ["sk-ant-ort01-0"]


async def test_a_stale_lock_is_taken_over(h) -> None:
    path = claude_file(h, 0, HOUR)
    await h.service.import_login("claude-code")
    lock = path.parent / ".oauth_refresh.lock"
    lock.mkdir()
    old = time.time() - 60  # its holder died a minute ago
    os.utime(lock, (old, old))

    async def no_wait(seconds: float) -> None:
        raise AssertionError("a stale lock is not waited for")

    h.service.credentials.token_sync.wait = no_wait
    h.clock.advance(HOUR)
    assert await ask_as_claude_code(h) == "sk-ant-oat01-1"
    assert not lock.exists()


async def test_the_tools_token_is_taken_whatever_expiry_it_wrote(h) -> None:
    """A store holding a token SubLane never spent is the tool's newer one, whatever its expiry
    says (here already past): SubLane refreshes with it, never with its own spent token."""
    path = claude_file(h, 0, HOUR)
    await h.service.import_login("claude-code")
    await claude_code_refreshes(h, path)
    data = json.loads(path.read_text())
    data["claudeAiOauth"]["expiresAt"] = int((h.clock.now() - HOUR) * 1000)
    path.write_text(json.dumps(data))
    h.clock.advance(HOUR)
    assert await ask_as_claude_code(h) == "sk-ant-oat01-2"
    assert [c["refresh_token"] for c in h.upstream.refresh_calls] == [
        "sk-ant-ort01-0",  # the tool's
        "sk-ant-ort01-1",  # SubLane's, with the token the tool wrote
    ]


async def test_a_codex_refresh_without_expires_in_reads_the_jwt(h) -> None:
    """Codex's own refresh reads no expires_in: the new access token's JWT says when it expires,
    so the next request does not refresh again."""
    path = codex_file(h, 0, h.clock.now() + HOUR)
    view = await h.service.import_login("codex")
    h.codex.usage_for["*"] = 429
    h.codex.refresh_expires_in = None
    h.codex.refresh_grants["rt-0"] = (
        codex_access("1", int(h.clock.now() + 10 * 24 * HOUR)),
        "rt-1",
    )
    h.clock.advance(HOUR)
    await ask_codex(h)
    secret = json.loads(await h.service.secrets.aget(account_secret(view["id"])) or "{}")
    assert secret["expires_at"] == int(h.clock.now() - HOUR + 10 * 24 * HOUR)
    h.clock.advance(HOUR)
    await ask_codex(h)
    assert [c["refresh_token"] for c in h.codex.refresh_calls] == ["rt-0"]
    assert json.loads(path.read_text())["tokens"]["refresh_token"] == "rt-1"
