"""Claude Code's login file, `$CLAUDE_CONFIG_DIR/.credentials.json` (default `~/.claude/`).

The file is `{"claudeAiOauth": {"accessToken", "refreshToken", "expiresAt" (ms), "scopes",
"subscriptionType", …}, …}` (PROTOCOLS.md). The macOS Keychain item holds the same JSON
(claude_keychain.py), so both share `login_of` and `updated`.

Which account a login belongs to: Claude Code keeps the account's uuid beside its settings in
`.claude.json` (`oauthAccount.accountUuid`), not in the login; when that is there it is the
identity, otherwise the plan (`subscriptionType`) is the best the login carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sublane_desktop.accounts.credentials import CredentialError, validate_secret
from sublane_desktop.accounts.sources import Login, Places
from sublane_desktop.accounts.sources.tool_files import read_json, write_json_atomically
from sublane_desktop.core import json_text

KIND = "claude-code-file"


def config_dir(places: Places) -> Path:
    custom = places.environ.get("CLAUDE_CONFIG_DIR")
    return Path(custom).expanduser() if custom else places.home / ".claude"


def account_uuid(places: Places) -> str | None:
    """The signed-in account's uuid from Claude Code's settings file, if it names one."""
    directory = config_dir(places)
    for path in (directory / ".claude.json", places.home / ".claude.json"):
        try:
            data = json_text.parse(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        account = data.get("oauthAccount") if isinstance(data, dict) else None
        uuid = account.get("accountUuid") if isinstance(account, dict) else None
        if isinstance(uuid, str) and uuid:
            return uuid
    return None


def login_of(
    data: Any, kind: str, location: str, places: Places, where: str | None = None
) -> Login:
    """A Login from Claude Code's credentials JSON (file or Keychain)."""
    where = where or location
    oauth = data.get("claudeAiOauth") if isinstance(data, dict) else None
    if not isinstance(oauth, dict) or not oauth.get("accessToken"):
        raise CredentialError(f"{where} is not a Claude Code credentials file")
    try:
        secret = validate_secret(
            "anthropic",
            {
                "access_token": oauth.get("accessToken"),
                "refresh_token": oauth.get("refreshToken"),
                "expires_at": float(oauth.get("expiresAt") or 0) / 1000.0,  # ms on disk
            },
        )
    except (CredentialError, TypeError, ValueError):
        raise CredentialError(f"{where} is not a Claude Code credentials file") from None
    uuid = account_uuid(places)
    plan = oauth.get("subscriptionType")
    identity = f"uuid:{uuid}" if uuid else (f"plan:{plan}" if isinstance(plan, str) else None)
    return Login(kind, location, "anthropic", secret, identity)


def updated(data: Any, credential: dict[str, Any]) -> dict[str, Any]:
    """The credentials JSON with SubLane's refreshed tokens in it, every other field kept."""
    out = dict(data) if isinstance(data, dict) else {}
    oauth = dict(out.get("claudeAiOauth") or {})
    oauth["accessToken"] = credential["access_token"]
    oauth["refreshToken"] = credential["refresh_token"]
    oauth["expiresAt"] = round(float(credential["expires_at"]) * 1000)
    out["claudeAiOauth"] = oauth
    return out


@dataclass(frozen=True)
class ClaudeCodeFile:
    location: str
    places: Places
    kind: str = KIND
    tool: str = "claude-code"
    title: str = "Claude Code's login file"
    provider: str = "anthropic"
    writable: bool = True

    @classmethod
    def of(cls, places: Places) -> ClaudeCodeFile:
        return cls(str(config_dir(places) / ".credentials.json"), places)

    def read(self) -> Login:
        return login_of(
            read_json(Path(self.location), "Claude Code"), KIND, self.location, self.places
        )

    def lock_dir(self) -> Path:
        """Where Claude Code takes its refresh lock for this login (claude_refresh_lock.py)."""
        return Path(self.location).parent

    def write(self, credential: dict[str, Any]) -> None:
        path = Path(self.location)
        write_json_atomically(path, updated(read_json(path, "Claude Code"), credential))
