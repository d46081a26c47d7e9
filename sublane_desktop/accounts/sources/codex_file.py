"""Codex CLI's login file, `$CODEX_HOME/auth.json` (default `~/.codex/`).

`{"auth_mode"?, "OPENAI_API_KEY", "tokens": {"id_token", "access_token", "refresh_token",
"account_id"}, "last_refresh"}` (openai/codex `codex-rs/login/src/auth/storage.rs`,
`AuthDotJson`). The keyring item (codex_keyring.py) holds the same JSON, so both share
`login_of` and `updated`. The account is `tokens.account_id` (or the id_token's
`chatgpt_account_id` claim): Codex itself reloads a changed login only when that id matches
(`reload_if_account_id_matches` in `auth/manager.rs`), and so does SubLane.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sublane_desktop.accounts.credentials import (
    CredentialError,
    codex_account_id,
    jwt_exp,
    validate_secret,
)
from sublane_desktop.accounts.sources import Login, Places
from sublane_desktop.accounts.sources.tool_files import read_json, write_json_atomically

KIND = "codex-file"


def codex_home(places: Places) -> Path:
    custom = places.environ.get("CODEX_HOME")
    return Path(custom).expanduser() if custom else places.home / ".codex"


def login_of(data: Any, kind: str, location: str, where: str | None = None) -> Login:
    where = where or location
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if isinstance(tokens, dict) and tokens.get("access_token"):
        account_id = tokens.get("account_id") or codex_account_id(tokens) or ""
        secret = validate_secret(
            "codex",
            {
                "access_token": tokens.get("access_token"),
                "refresh_token": tokens.get("refresh_token") or "",
                "expires_at": jwt_exp(str(tokens.get("access_token"))) or 1.0,
                "account_id": account_id,
            },
        )
        if isinstance(tokens.get("id_token"), str):
            secret["id_token"] = tokens["id_token"]
        return Login(kind, location, "codex", secret, f"account:{account_id}")
    if isinstance(data, dict) and data.get("OPENAI_API_KEY"):
        return Login(
            kind, location, "codex", validate_secret("codex", {"api_key": data["OPENAI_API_KEY"]})
        )
    raise CredentialError(f"{where} has neither ChatGPT tokens nor an API key")


def updated(data: Any, credential: dict[str, Any], now: float) -> dict[str, Any]:
    """auth.json with SubLane's refreshed tokens, as Codex's own `persist_tokens` writes it:
    the tokens replaced, `last_refresh` set, every other field kept."""
    out = dict(data) if isinstance(data, dict) else {}
    tokens = dict(out.get("tokens") or {})
    tokens["access_token"] = credential["access_token"]
    tokens["refresh_token"] = credential["refresh_token"]
    if credential.get("id_token"):
        tokens["id_token"] = credential["id_token"]
    if credential.get("account_id") and not tokens.get("account_id"):
        tokens["account_id"] = credential["account_id"]
    out["tokens"] = tokens
    out["last_refresh"] = (
        datetime.fromtimestamp(now, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    )
    return out


@dataclass(frozen=True)
class CodexFile:
    location: str
    places: Places
    kind: str = KIND
    tool: str = "codex"
    title: str = "Codex CLI's login file"
    provider: str = "codex"
    writable: bool = True

    @classmethod
    def of(cls, places: Places) -> CodexFile:
        return cls(str(codex_home(places) / "auth.json"), places)

    def read(self) -> Login:
        return login_of(read_json(Path(self.location), "Codex"), KIND, self.location)

    def write(self, credential: dict[str, Any]) -> None:
        import time

        path = Path(self.location)
        write_json_atomically(path, updated(read_json(path, "Codex"), credential, time.time()))
