"""Logins found where the tools keep them (R-LOGIN-3), each place built in a temp HOME as its
tool writes it, and written back in that tool's own format (R-LOGIN-2)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from keyrings.alt.file import PlaintextKeyring

from sublane_desktop.accounts.credentials import CredentialError
from sublane_desktop.accounts.sources import Places, discover, sources_of, survey
from sublane_desktop.accounts.sources.claude_code_file import ClaudeCodeFile
from sublane_desktop.accounts.sources.claude_keychain import ClaudeKeychain
from sublane_desktop.accounts.sources.codex_file import CodexFile
from sublane_desktop.accounts.sources.codex_keyring import CodexKeyring, store_key
from sublane_desktop.accounts.sources.gemini_cli import WARNING
from sublane_desktop.providers.antigravity import CLIENTS

from .tool_logins import (
    FakeKeychain,
    agent_manager_state,
    antigravity_token,
    claude_login,
    codex_access,
    codex_auth,
    state_db,
    unified_oauth_token,
    write_json,
)


def file_keyring(path: Path) -> PlaintextKeyring:
    backend = PlaintextKeyring()
    backend.file_path = str(path)
    return backend


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def places(home: Path, keyring: PlaintextKeyring | None = None, **env: str) -> Places:
    backend = keyring or file_keyring(home.parent / "os-keyring.cfg")
    return Places(home, env, "linux", keyring=lambda: backend)


# --- Claude Code ------------------------------------------------------------------------------


def test_claude_code_is_found_under_claude_config_dir(home: Path) -> None:
    custom = home / "elsewhere"
    write_json(custom / ".credentials.json", claude_login("custom", 1_900_000_000_000))
    write_json(home / ".claude" / ".credentials.json", claude_login("default", 1_900_000_000_000))
    write_json(custom / ".claude.json", {"oauthAccount": {"accountUuid": "uuid-7"}})
    login, _ = discover("claude-code", places(home, CLAUDE_CONFIG_DIR=str(custom)))
    assert login.secret == {
        "access_token": "sk-ant-oat01-custom",
        "refresh_token": "sk-ant-ort01-custom",
        "expires_at": 1_900_000_000.0,
    }
    assert (login.kind, login.location) == ("claude-code-file", str(custom / ".credentials.json"))
    assert login.identity == "uuid:uuid-7"
    # without the variable, the default directory; the plan is the identity when no uuid is known
    login, _ = discover("claude-code", places(home))
    assert login.secret["access_token"] == "sk-ant-oat01-default"
    assert login.identity == "plan:max"


def test_claude_code_keychain_through_the_security_seam(home: Path) -> None:
    keychain = FakeKeychain(home.parent)
    keychain.install()
    keychain.put(
        "Claude Code-credentials", "me", json.dumps(claude_login("mac", 1_900_000_000_000))
    )
    seam = places(home, SUBLANE_SECURITY_COMMAND=str(keychain.command))
    login, _ = discover("claude-code", seam)
    assert (login.kind, login.location) == ("claude-code-keychain", "Claude Code-credentials")
    assert login.secret["refresh_token"] == "sk-ant-ort01-mac"

    # written back in place: same item, same account, every field it does not own kept
    source = ClaudeKeychain.of(seam)
    assert source is not None
    source.write(
        {
            "access_token": "sk-ant-oat01-new",
            "refresh_token": "sk-ant-ort01-new",
            "expires_at": 1_950_000_000.0,
        }
    )
    item = keychain.get("Claude Code-credentials")
    assert item is not None and item["account"] == "me"
    stored = json.loads(item["password"])["claudeAiOauth"]
    assert stored == dict(
        claude_login("x", 0)["claudeAiOauth"],
        accessToken="sk-ant-oat01-new",
        refreshToken="sk-ant-ort01-new",
        expiresAt=1_950_000_000_000,
    )
    assert "sk-ant" not in keychain.calls()  # never on a command line: hex on stdin

    # no item: the file is next; a Keychain that refuses is said in words
    keychain.store.write_text("{}")
    with pytest.raises(CredentialError, match="no Claude Code login in the Keychain item"):
        discover("claude-code", seam)
    rows = {r["kind"]: r for r in survey(seam)}
    assert rows["claude-code-keychain"]["found"] is False
    assert rows["claude-code-keychain"]["problem"] is None  # simply none there
    os.environ["FAKE_SECURITY_DENY"] = "1"
    try:
        rows = {r["kind"]: r for r in survey(seam)}
    finally:
        del os.environ["FAKE_SECURITY_DENY"]
    assert "the Keychain refused to give out 'Claude Code-credentials'" in str(
        rows["claude-code-keychain"]["problem"]
    )


def test_claude_config_dir_names_its_own_keychain_item(home: Path) -> None:
    """Claude Code 2.1.197: `Claude Code-credentials-<sha256(CLAUDE_CONFIG_DIR)[:8]>`."""
    keychain = FakeKeychain(home.parent)
    keychain.install()
    custom = str(home / "work-claude")
    digest = hashlib.sha256(custom.encode()).hexdigest()[:8]
    keychain.put("Claude Code-credentials", "me", json.dumps(claude_login("default", 1)))
    keychain.put(
        f"Claude Code-credentials-{digest}",
        "me",
        json.dumps(claude_login("work", 1_900_000_000_000)),
    )
    seam = places(home, SUBLANE_SECURITY_COMMAND=str(keychain.command), CLAUDE_CONFIG_DIR=custom)
    login, _ = discover("claude-code", seam)
    assert login.location == f"Claude Code-credentials-{digest}"
    assert login.secret["access_token"] == "sk-ant-oat01-work"


def test_a_security_command_on_path_is_the_keychain_off_macos(home: Path) -> None:
    keychain = FakeKeychain(home.parent)
    keychain.install()
    keychain.put(
        "Claude Code-credentials", "me", json.dumps(claude_login("path", 1_900_000_000_000))
    )
    login, _ = discover("claude-code", places(home, PATH=str(keychain.command.parent)))
    assert (login.kind, login.secret["access_token"]) == (
        "claude-code-keychain",
        "sk-ant-oat01-path",
    )


def test_no_keychain_off_macos_without_the_seam(home: Path) -> None:
    assert [s.kind for s in sources_of("claude-code", places(home))] == [
        "claude-code-file",
        "claude-setup-token",
    ]
    mac = Places(home, {}, "darwin")
    assert ClaudeKeychain.of(mac) is not None and mac.security() == "/usr/bin/security"


def test_setup_token_from_claude_code_oauth_token(home: Path) -> None:
    login, passed = discover(
        "claude-code", places(home, CLAUDE_CODE_OAUTH_TOKEN="sk-ant-oat01-setup-long-lived")
    )
    assert login.secret == {"access_token": "sk-ant-oat01-setup-long-lived"}  # no refresh token
    assert login.kind == "claude-setup-token" and "no Claude Code login at" in passed[0]
    with pytest.raises(CredentialError, match="does not hold a `claude setup-token` token"):
        discover("claude-code", places(home, CLAUDE_CODE_OAUTH_TOKEN="sk-ant-api03-a-key"))


def test_claude_write_back_keeps_every_field_and_the_mode(home: Path) -> None:
    path = write_json(
        home / ".claude" / ".credentials.json",
        claude_login("old", 1_800_000_000_000, mcpOAuth={"server": {"accessToken": "keep"}}),
        mode=0o600,
    )
    ClaudeCodeFile.of(places(home)).write(
        {"access_token": "sk-ant-oat01-n", "refresh_token": "sk-ant-ort01-n", "expires_at": 1.9e9}
    )
    data = json.loads(path.read_text())
    assert data["mcpOAuth"] == {"server": {"accessToken": "keep"}}
    assert data["claudeAiOauth"]["subscriptionType"] == "max"
    assert data["claudeAiOauth"]["scopes"] == ["user:inference", "user:profile"]
    assert (data["claudeAiOauth"]["accessToken"], data["claudeAiOauth"]["expiresAt"]) == (
        "sk-ant-oat01-n",
        1_900_000_000_000,
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == [".credentials.json"]  # no temp left


# --- Codex ------------------------------------------------------------------------------------


def test_codex_is_found_under_codex_home(home: Path) -> None:
    custom = home / "codex-elsewhere"
    write_json(custom / "auth.json", codex_auth(codex_access("a", 1_900_000_000), "rt-a"))
    login, _ = discover("codex", places(home, CODEX_HOME=str(custom)))
    assert login.secret["refresh_token"] == "rt-a" and login.secret["account_id"] == "acct-1"
    assert login.secret["expires_at"] == 1_900_000_000.0
    assert login.identity == "account:acct-1"
    with pytest.raises(CredentialError, match="no Codex login at"):
        discover("codex", places(home))  # ~/.codex is empty


def test_codex_keyring_item_as_codex_names_it(home: Path) -> None:
    custom = home / "ch"
    custom.mkdir()
    backend = file_keyring(home.parent / "os.cfg")
    seam = places(home, backend, CODEX_HOME=str(custom))
    # Codex: service "Codex Auth", account "cli|" + sha256(canonical CODEX_HOME)[:16]
    import hashlib

    key = "cli|" + hashlib.sha256(str(custom.resolve()).encode()).hexdigest()[:16]
    assert store_key(seam) == key
    auth = codex_auth(codex_access("k", 1_900_000_000), "rt-k", "acct-k")
    backend.set_password("Codex Auth", key, json.dumps(auth))
    login, passed = discover("codex", seam)
    assert login.kind == "codex-keyring" and login.secret["refresh_token"] == "rt-k"
    assert passed == [f"no Codex login at {custom / 'auth.json'}"]
    CodexKeyring.of(seam).write(
        {
            "access_token": "at-new",
            "refresh_token": "rt-new",
            "expires_at": 1.0,
            "id_token": "i.d.t",
        }
    )
    written = json.loads(backend.get_password("Codex Auth", key) or "")
    assert written["tokens"] == dict(
        auth["tokens"], access_token="at-new", refresh_token="rt-new", id_token="i.d.t"
    )
    assert written["auth_mode"] == "chatgpt" and written["last_refresh"] != auth["last_refresh"]
    backend.set_password("Codex Auth", key, "encrypted-blob")  # Codex's newer secrets store
    rows = {r["kind"]: r for r in survey(seam)}
    assert "is not Codex's login JSON" in rows["codex-keyring"]["problem"]


def test_codex_write_back_keeps_the_fields_codex_owns(home: Path) -> None:
    auth = codex_auth(codex_access("a", 1_900_000_000), "rt-a")
    path = write_json(home / ".codex" / "auth.json", dict(auth, agent_identity=None), mode=0o640)
    CodexFile.of(places(home)).write(
        {"access_token": "at-b", "refresh_token": "rt-b", "expires_at": 2e9, "account_id": "acct-1"}
    )
    data = json.loads(path.read_text())
    assert data["tokens"]["id_token"] == auth["tokens"]["id_token"]  # none new: the old kept
    assert data["tokens"]["refresh_token"] == "rt-b" and data["agent_identity"] is None
    assert data["last_refresh"].endswith("Z")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


# --- Antigravity and Gemini CLI ---------------------------------------------------------------


def test_antigravity_state_database(home: Path) -> None:
    db = home / ".config" / "Antigravity" / "User" / "globalStorage" / "state.vscdb"
    state_db(
        db,
        {
            "jetskiStateSync.agentManagerInitState": agent_manager_state(
                "ya29.ide", "1//rt-ide", 1_900_000_123
            ),
            "storage.serviceMachineId": "m-1",
        },
    )
    login, _ = discover("antigravity", places(home))
    client_id, client_secret = CLIENTS["antigravity"]
    assert login.secret == {
        "access_token": "ya29.ide",
        "refresh_token": "1//rt-ide",
        "expires_at": 1_900_000_123.0,
        "client_id": client_id,
        "client_secret": client_secret,
    }
    assert login.kind == "antigravity-state-db"
    # XDG_CONFIG_HOME moves it; macOS keeps it under Application Support
    moved = home / "xdg" / "Antigravity" / "User" / "globalStorage" / "state.vscdb"
    moved.parent.mkdir(parents=True)
    db.rename(moved)
    assert discover("antigravity", places(home, XDG_CONFIG_HOME=str(home / "xdg")))[0].secret
    mac = Places(home, {}, "darwin", keyring=lambda: file_keyring(home / "k.cfg"))
    assert (
        "Library/Application Support/Antigravity"
        in [s.location for s in sources_of("antigravity", mac)][-1]
    )


def test_antigravity_newer_format_is_read_first(home: Path) -> None:
    db = home / ".config" / "Antigravity" / "User" / "globalStorage" / "state.vscdb"
    state_db(
        db,
        {
            "antigravityUnifiedStateSync.oauthToken": unified_oauth_token(
                "ya29.new", "1//rt-new", 1_900_000_321
            ),
            "jetskiStateSync.agentManagerInitState": agent_manager_state(
                "ya29.old", "1//rt-old", 1_800_000_000
            ),
        },
    )
    login, _ = discover("antigravity", places(home))
    assert (login.secret["access_token"], login.secret["refresh_token"]) == (
        "ya29.new",
        "1//rt-new",
    )
    assert login.secret["expires_at"] == 1_900_000_321.0


def test_antigravity_unreadable_shapes_are_said_in_words(home: Path) -> None:
    db = home / ".config" / "Antigravity" / "User" / "globalStorage" / "state.vscdb"
    state_db(db, {"antigravityUnifiedStateSync.oauthToken": "Cg5vYXV0aA=="})
    rows = {r["kind"]: r for r in survey(places(home))}
    assert "in a shape SubLane cannot read" in rows["antigravity-state-db"]["problem"]
    assert "sublane account login antigravity" in rows["antigravity-state-db"]["problem"]
    db.unlink()
    state_db(db, {"jetskiStateSync.agentManagerInitState": "not base64 at all!"})
    with pytest.raises(CredentialError, match="holds no Antigravity login SubLane can read"):
        discover("antigravity", places(home))
    db.write_text("not a database")
    rows = {r["kind"]: r for r in survey(places(home))}
    assert "not a readable SQLite database" in rows["antigravity-state-db"]["problem"]


def test_antigravity_token_file_and_keyring(home: Path) -> None:
    backend = file_keyring(home.parent / "os.cfg")
    write_json(
        home / ".gemini" / "jetski-standalone-oauth-token",
        antigravity_token("ya29.file", "1//rt-file", "2030-03-17T12:00:00.000000Z"),
    )
    login, _ = discover("antigravity", places(home, backend))
    assert login.kind == "antigravity-token-file"
    expiry = datetime(2030, 3, 17, 12, tzinfo=UTC).timestamp()
    assert (login.secret["refresh_token"], login.secret["expires_at"]) == ("1//rt-file", expiry)
    payload = json.dumps(antigravity_token("ya29.kr", "1//rt-kr", "2030-01-01T00:00:00Z"))
    wrapped = "go-keyring-base64:" + base64.b64encode(payload.encode()).decode()
    backend.set_password("gemini", "antigravity", wrapped)
    login, _ = discover("antigravity", places(home, backend))  # the keyring comes first
    assert (login.kind, login.secret["access_token"]) == ("antigravity-keyring", "ya29.kr")
    assert login.secret["client_id"] == CLIENTS["antigravity"][0]


def test_gemini_cli_carries_googles_warning(home: Path) -> None:
    write_json(
        home / ".gemini" / "oauth_creds.json",
        {"access_token": "ya29.g", "refresh_token": "1//g", "expiry_date": 1_900_000_000_000},
    )
    login, _ = discover("gemini", places(home))
    assert login.warning == WARNING
    assert "2026-06-18" in WARNING and "individual" in WARNING
    assert {r["tool"]: r["warning"] for r in survey(places(home)) if r["found"]} == {
        "gemini": WARNING
    }


def test_survey_names_every_place_and_what_could_not_be_read(home: Path) -> None:
    (home / ".claude" / ".credentials.json").mkdir(parents=True)  # a directory, not a file
    write_json(home / ".codex" / "auth.json", {"tokens": {}})
    rows = survey(places(home))
    assert {r["tool"] for r in rows} == {"claude-code", "codex", "antigravity", "gemini"}
    problems = {r["kind"]: r["problem"] for r in rows if r["problem"]}
    assert problems == {
        "claude-code-file": f"cannot read {home / '.claude' / '.credentials.json'}: it is a directory",
        "codex-file": f"{home / '.codex' / 'auth.json'} has neither ChatGPT tokens nor an API key",
    }
    assert not any(r["found"] for r in rows)


def test_identities_are_digests_compared_by_kind() -> None:
    from sublane_desktop.accounts.sources.tool_files import identity_digest, other_account

    uuid_a, uuid_b = identity_digest("uuid:aaaa"), identity_digest("uuid:bbbb")
    assert uuid_a is not None and uuid_a.startswith("uuid:") and "aaaa" not in uuid_a
    assert other_account(uuid_a, uuid_b) and not other_account(uuid_a, identity_digest("uuid:aaaa"))
    # a uuid against a plan (`.claude.json` appeared since the import) cannot tell: the same
    assert not other_account(uuid_a, identity_digest("plan:max"))
    assert not other_account(None, uuid_b) and not other_account(uuid_a, None)


def test_a_symlinked_login_file_is_written_where_it_points(home: Path) -> None:
    real = write_json(home / "dotfiles" / "claude-credentials.json", claude_login("s", 1))
    link = home / ".claude" / ".credentials.json"
    link.parent.mkdir()
    link.symlink_to(real)
    ClaudeCodeFile.of(places(home)).write(
        {"access_token": "sk-ant-oat01-n", "refresh_token": "sk-ant-ort01-n", "expires_at": 1.9e9}
    )
    assert link.is_symlink()
    assert json.loads(real.read_text())["claudeAiOauth"]["refreshToken"] == "sk-ant-ort01-n"


def test_no_keyring_on_the_system_is_no_login_there(home: Path) -> None:
    """keyring's fail backend (no keyring at all) holds nothing: not a problem to report."""
    from keyring.backends.fail import Keyring as NoKeyring

    rows = survey(Places(home, {}, "linux", keyring=NoKeyring))
    assert [r for r in rows if r["problem"]] == []

    class Broken(PlaintextKeyring):
        def get_password(self, service: str, username: str) -> str | None:
            raise RuntimeError("locked")

    rows = {r["kind"]: r for r in survey(Places(home, {}, "linux", keyring=Broken))}
    assert rows["codex-keyring"]["problem"] == "the keyring could not be used (Codex Auth)"
