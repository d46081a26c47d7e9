"""The tools' own login stores, built in a temp HOME the way each tool writes them.

Claude Code's `.credentials.json` and Keychain item, Codex's `auth.json` and keyring item,
Antigravity's token file, keyring item and IDE state database (its protobuf encoded here by
hand, independently of the product's decoder), Gemini CLI's `oauth_creds.json`.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import stat
import sys
from pathlib import Path
from typing import Any

from tests.fake_codex import fake_jwt

HERE = Path(__file__).resolve().parent


def claude_login(tag: str, expires_ms: int, **extra: Any) -> dict[str, Any]:
    return {
        "claudeAiOauth": {
            "accessToken": f"sk-ant-oat01-{tag}",
            "refreshToken": f"sk-ant-ort01-{tag}",
            "expiresAt": expires_ms,
            "scopes": ["user:inference", "user:profile"],
            "subscriptionType": "max",
            "rateLimitTier": "default_claude_max_20x",
        },
        **extra,
    }


def write_json(path: Path, data: Any, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    path.chmod(mode)
    return path


def codex_auth(access: str, refresh: str, account_id: str = "acct-1") -> dict[str, Any]:
    return {
        "auth_mode": "chatgpt",
        "OPENAI_API_KEY": None,
        "tokens": {
            "id_token": fake_jwt(
                {"https://api.openai.com/auth": {"chatgpt_account_id": account_id}}
            ),
            "access_token": access,
            "refresh_token": refresh,
            "account_id": account_id,
        },
        "last_refresh": "2026-12-01T10:00:00.000000Z",
    }


def codex_access(tag: str, exp: int) -> str:
    return fake_jwt({"exp": exp, "tag": tag})


def antigravity_token(access: str, refresh: str, expiry: str) -> dict[str, Any]:
    return {
        "token": {
            "access_token": access,
            "token_type": "Bearer",
            "refresh_token": refresh,
            "expiry": expiry,
        },
        "auth_method": "consumer",
    }


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def agent_manager_state(access: str, refresh: str, expiry_s: int) -> str:
    """`jetskiStateSync.agentManagerInitState` as Antigravity writes it: base64 protobuf, the
    OAuth token in field 6 (1 access, 2 type, 3 refresh, 4 Timestamp{1 seconds})."""
    token = (
        _field(1, access.encode())
        + _field(2, b"Bearer")
        + _field(3, refresh.encode())
        + _field(4, _field(1, expiry_s))
    )
    state = _field(1, b"some other state") + _field(6, token) + _field(9, 7)
    return base64.b64encode(state).decode()


def unified_oauth_token(access: str, refresh: str, expiry_s: int) -> str:
    """`antigravityUnifiedStateSync.oauthToken` as Antigravity 1.16.5+ writes it: base64 of a
    topic {1: entry {1: "oauthTokenInfoSentinelKey", 2: row {1: base64 of the token}}}."""
    token = (
        _field(1, access.encode())
        + _field(2, b"Bearer")
        + _field(3, refresh.encode())
        + _field(4, _field(1, expiry_s) + _field(2, 0))
        + _field(6, 1)
    )
    row = _field(1, base64.b64encode(token))
    entry = _field(1, b"oauthTokenInfoSentinelKey") + _field(2, row)
    return base64.b64encode(_field(1, entry)).decode()


def state_db(path: Path, rows: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    db.executemany("INSERT INTO ItemTable VALUES (?, ?)", list(rows.items()))
    db.commit()
    db.close()
    return path


class FakeKeychain:
    """A `security` command on PATH-less Linux: point SUBLANE_SECURITY_COMMAND at `command`."""

    def __init__(self, root: Path) -> None:
        self.store = root / "keychain.json"
        self.log = root / "security-calls.log"
        self.command = root / "security"
        self.command.write_text(
            f'#!/bin/sh\nexec {sys.executable} {HERE / "fake_security.py"} "$@"\n'
        )
        self.command.chmod(self.command.stat().st_mode | stat.S_IXUSR)
        self.log.write_text("")

    def env(self) -> dict[str, str]:
        return {
            "SUBLANE_SECURITY_COMMAND": str(self.command),
            "FAKE_SECURITY_STORE": str(self.store),
            "FAKE_SECURITY_LOG": str(self.log),
        }

    def install(self) -> None:
        """For in-process code: the fake's variables in this process's environment."""
        os.environ.update({k: v for k, v in self.env().items() if k.startswith("FAKE_")})

    def put(self, service: str, account: str, value: str) -> None:
        items = json.loads(self.store.read_text()) if self.store.exists() else {}
        items[service] = {"account": account, "password": value}
        self.store.write_text(json.dumps(items))

    def get(self, service: str) -> dict[str, str] | None:
        items = json.loads(self.store.read_text()) if self.store.exists() else {}
        return items.get(service)

    def calls(self) -> str:
        return self.log.read_text()
