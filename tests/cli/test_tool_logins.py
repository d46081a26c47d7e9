"""Imports through the real `sublane` command (R-LOGIN-2, R-LOGIN-3): each tool's login found
where the tool keeps it without --file, what the import means for the tool said in words,
`--detach`, setup-tokens, and one clear line naming every place when nothing is found."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import aiohttp
import anthropic
from keyrings.alt.file import PlaintextKeyring

from sublane_desktop.accounts.secrets import account_secret
from sublane_desktop.providers.oauth import ANTHROPIC_CLIENT_ID
from tests.accounts.tool_logins import (
    FakeKeychain,
    agent_manager_state,
    claude_login,
    codex_access,
    codex_auth,
    state_db,
    write_json,
)
from tests.fake_upstream import CLAUDE_CODE_HEADERS

from .conftest import Sublane
from .test_cli import one_error_line


def sources(sublane: Sublane) -> list[tuple]:
    db = sqlite3.connect(sublane.data_dir / "sublane.db")
    try:
        return db.execute(
            "SELECT account_id, kind, location, identity IS NOT NULL, detached"
            " FROM account_sources ORDER BY account_id"
        ).fetchall()
    finally:
        db.close()


def test_import_claude_code_from_claude_config_dir_is_kept_in_step(sublane: Sublane) -> None:
    custom = sublane.home / "cc"
    path = write_json(custom / ".credentials.json", claude_login("cfg", 1_900_000_000_000))
    sublane.env["CLAUDE_CONFIG_DIR"] = str(custom)
    result = sublane.ok("account", "import-claude-code")
    first, note = result.stdout.splitlines()
    assert first.startswith("added anthropic account claude-code (id 1, oauth)")
    assert note == (
        f"note: kept in step with {path}: before each refresh SubLane reads it again, after each"
        " refresh it writes the new tokens back, so the tool stays logged in."
    )
    assert "sk-ant" not in result.stdout + result.stderr
    [account] = sublane.accounts()
    assert sources(sublane) == [(account["id"], "claude-code-file", str(path), 1, 0)]
    assert b"sk-ant-o" not in sublane.database_bytes()  # the source row holds no token


def test_import_claude_code_from_the_keychain_seam(sublane: Sublane) -> None:
    keychain = FakeKeychain(sublane.root)
    sublane.env.update(keychain.env())
    keychain.put("Claude Code-credentials", "me", json.dumps(claude_login("kc", 1_900_000_000_000)))
    sublane.ok("account", "import-claude-code", "--name", "mac")
    [account] = sublane.accounts()
    secret = json.loads(sublane.keyring_secret(account_secret(account["id"])) or "{}")
    assert secret["refresh_token"] == "sk-ant-ort01-kc"
    assert sources(sublane)[0][1:3] == ("claude-code-keychain", "Claude Code-credentials")
    # a Keychain that will not answer, and no file: one line naming both places
    keychain.store.write_text("{}")
    sublane.env["FAKE_SECURITY_DENY"] = "1"
    line = one_error_line(sublane.run("account", "import-claude-code", "--name", "again"))
    assert "the Keychain refused to give out 'Claude Code-credentials'" in line
    assert ".credentials.json" in line and "run `claude` and log in" in line


def test_import_codex_from_codex_home_and_from_its_keyring(sublane: Sublane) -> None:
    home = sublane.home / "ch"
    write_json(home / "auth.json", codex_auth(codex_access("a", 1_900_000_000), "rt-a", "acct-a"))
    sublane.env["CODEX_HOME"] = str(home)
    sublane.ok("account", "import-codex")
    assert sources(sublane)[0][1:3] == ("codex-file", str(home / "auth.json"))

    (home / "auth.json").unlink()  # Codex set to keep it in the keyring instead
    key = "cli|" + hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
    backend = PlaintextKeyring()
    backend.file_path = str(sublane.keyring_file)
    auth = codex_auth(codex_access("k", 1_900_000_000), "rt-k", "acct-k")
    backend.set_password("Codex Auth", key, json.dumps(auth))
    sublane.ok("account", "import-codex", "--name", "codex-keyring")
    by_name = {a["name"]: a["id"] for a in sublane.accounts()}
    secret = json.loads(sublane.keyring_secret(account_secret(by_name["codex-keyring"])) or "{}")
    assert (secret["refresh_token"], secret["account_id"]) == ("rt-k", "acct-k")
    assert sources(sublane)[1][1:3] == ("codex-keyring", f"Codex Auth/{key}")


def test_import_antigravity_without_file_reads_what_it_finds(sublane: Sublane) -> None:
    line = one_error_line(sublane.run("account", "import-antigravity"))
    for place in (
        "keyring item 'gemini/antigravity'",
        "jetski-standalone-oauth-token",
        "antigravity-oauth-token",
        "state.vscdb",
        "sublane account login antigravity",
    ):
        assert place in line
    db = sublane.home / ".config" / "Antigravity" / "User" / "globalStorage" / "state.vscdb"
    state_db(
        db,
        {
            "jetskiStateSync.agentManagerInitState": agent_manager_state(
                "ya29.ide", "1//rt-ide", 1_900_000_000
            )
        },
    )
    token_file = sublane.home / ".gemini" / "jetski-standalone-oauth-token"
    token_file.parent.mkdir()
    token_file.write_text("{not json")  # a place it finds but cannot read: said, and skipped
    result = sublane.ok("account", "import-antigravity")
    assert "added antigravity account antigravity" in result.stdout
    assert (
        f"note: could not read Antigravity's token file: {token_file} is not valid JSON"
        in result.stdout
    )
    assert f"imported from {db}" in result.stdout
    [account] = sublane.accounts()
    assert account["provider"] == "antigravity"
    secret = json.loads(sublane.keyring_secret(account_secret(account["id"])) or "{}")
    assert (secret["access_token"], secret["refresh_token"]) == ("ya29.ide", "1//rt-ide")
    assert "ya29" not in result.stdout + result.stderr


def test_import_gemini_says_googles_change_plainly(sublane: Sublane) -> None:
    write_json(
        sublane.home / ".gemini" / "oauth_creds.json",
        {"access_token": "ya29.g", "refresh_token": "1//g", "expiry_date": 1_900_000_000_000},
    )
    result = sublane.ok("account", "import-gemini")
    assert "added antigravity account gemini" in result.stdout
    assert result.stderr.startswith(
        "sublane: warning: Google no longer accepts Gemini CLI's login for individual"
    )
    assert "2026-06-18" in result.stderr and "sublane account login antigravity" in result.stderr


def test_detach_says_what_it_means_and_is_remembered(sublane: Sublane) -> None:
    path = write_json(
        sublane.home / ".claude" / ".credentials.json", claude_login("d", 1_900_000_000_000)
    )
    result = sublane.ok("account", "import-claude-code", "--detach")
    note = result.stdout.splitlines()[1]
    assert note.startswith(f"note: detached from {path}: SubLane will not read or write it again.")
    assert "whichever refreshes first signs the other out" in note
    assert "sublane account login" in note
    assert sources(sublane)[0][4] == 1
    assert "--detach" in sublane.ok("account", "import-codex", "--help").stdout


def test_setup_token_is_a_subscription_account(sublane: Sublane) -> None:
    token = "sk-ant-oat01-setup-token-long-lived-xyz"
    result = sublane.ok(
        "account",
        "add",
        "--provider",
        "anthropic",
        "--name",
        "st",
        input=json.dumps({"access_token": token}),
    )
    assert "added anthropic account st" in result.stdout and "oauth" in result.stdout
    [account] = sublane.accounts()
    assert json.loads(sublane.keyring_secret(account_secret(account["id"])) or "{}") == {
        "access_token": token
    }
    # Claude Code's own variable for it is found too
    sublane.env["CLAUDE_CODE_OAUTH_TOKEN"] = token
    sublane.ok("account", "import-claude-code", "--name", "st2")
    assert sources(sublane)[0][1:3] == ("claude-setup-token", "CLAUDE_CODE_OAUTH_TOKEN")
    # without the sk-ant-oat prefix, a token without a refresh token is still refused
    line = one_error_line(
        sublane.run(
            "account",
            "add",
            "--provider",
            "anthropic",
            "--name",
            "bad",
            input=json.dumps({"access_token": "some-token"}),
        )
    )
    assert '"refresh_token"' in line and "some-token" not in line


def test_reimporting_another_account_of_the_tool_asks_for_a_name(sublane: Sublane) -> None:
    """Importing again mends the same login; when the tool is now logged in to another account
    the import refuses to swap it under the old name, and --name adds it beside."""
    home = sublane.home / ".codex"
    write_json(home / "auth.json", codex_auth(codex_access("a", 1_900_000_000), "rt-a", "acct-a"))
    sublane.ok("account", "import-codex")
    sublane.ok("account", "import-codex")  # the same account again: mended in place
    write_json(home / "auth.json", codex_auth(codex_access("b", 1_900_000_000), "rt-b", "acct-b"))
    line = one_error_line(sublane.run("account", "import-codex"))
    assert "account 'codex' was imported from another Codex account" in line
    assert "pass --name" in line
    sublane.ok("account", "import-codex", "--name", "codex-b")
    assert [a["name"] for a in sublane.accounts()] == ["codex", "codex-b"]
    assert b"acct-a" not in sublane.database_bytes()  # identities are kept as digests


async def test_sublane_serve_keeps_claude_codes_file_in_step(sublane: Sublane, upstream) -> None:
    """The whole path through the real commands: import, `sublane serve`, a request as Claude
    Code that makes SubLane refresh (written back), Claude Code refreshing with the file's token,
    and a 401 that makes SubLane take up what Claude Code wrote instead of its spent token."""
    grants = {
        f"sk-ant-ort01-{n}": (f"sk-ant-oat01-{n + 1}", f"sk-ant-ort01-{n + 1}") for n in range(5)
    }
    upstream.refresh_grants.update(grants)
    path = write_json(
        sublane.home / ".claude" / ".credentials.json",
        claude_login("0", 1_000_000_000_000, mcpOAuth={"keep": "me"}),  # long expired
    )
    sublane.env.update(
        {"SUBLANE_ANTHROPIC_BASE_URL": upstream.url, "SUBLANE_OAUTH_BASE_URL": upstream.url}
    )
    sublane.ok("account", "import-claude-code")
    key = sublane.ok("key", "create", "--name", "cc").stdout.split()[0]
    server = sublane.serve()
    client = anthropic.AsyncAnthropic(
        base_url=server.url, api_key=key, max_retries=0, default_headers=CLAUDE_CODE_HEADERS
    )
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "x"}],
    }

    await client.messages.create(**body)  # SubLane refreshes rt-0 and writes the file back
    data = json.loads(path.read_text())
    assert data["claudeAiOauth"]["refreshToken"] == "sk-ant-ort01-1" and data["mcpOAuth"] == {
        "keep": "me"
    }
    assert oct(path.stat().st_mode & 0o777) == "0o600"

    # Claude Code refreshes with what is in its file
    grant = {
        "grant_type": "refresh_token",
        "refresh_token": "sk-ant-ort01-1",
        "client_id": ANTHROPIC_CLIENT_ID,
    }
    async with (
        aiohttp.ClientSession() as s,
        s.post(upstream.url + "/v1/oauth/token", json=grant) as r,
    ):
        assert r.status == 200
        fresh = await r.json()
    data["claudeAiOauth"].update(
        accessToken=fresh["access_token"],
        refreshToken=fresh["refresh_token"],
        expiresAt=4_000_000_000_000,
    )
    path.write_text(json.dumps(data))

    upstream.expired.add("sk-ant-oat01-1")  # SubLane's access token now answered 401
    await client.messages.create(**body)
    assert upstream.tokens_served()[-1] == "sk-ant-oat01-2"  # Claude Code's, taken up
    assert [c["refresh_token"] for c in upstream.refresh_calls] == [
        "sk-ant-ort01-0",
        "sk-ant-ort01-1",
    ]
    await client.close()
    assert server.interrupt() == 0
    assert "sk-ant-o" not in server.stderr()
