"""Antigravity's token files under `~/.gemini/`: `jetski-standalone-oauth-token` (the standalone
agent) and `antigravity-cli/antigravity-oauth-token` (the agy CLI), both holding google_token's
JSON (PROTOCOLS.md; public Antigravity tools read them in that order)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sublane_desktop.accounts.credentials import CredentialError
from sublane_desktop.accounts.sources import Login, Places
from sublane_desktop.accounts.sources.google_token import secret_of, unwrap
from sublane_desktop.accounts.sources.tool_files import NotThere

KIND = "antigravity-token-file"
FILES = (
    Path(".gemini") / "jetski-standalone-oauth-token",
    Path(".gemini") / "antigravity-cli" / "antigravity-oauth-token",
)


@dataclass(frozen=True)
class AntigravityTokenFile:
    location: str
    places: Places
    kind: str = KIND
    tool: str = "antigravity"
    title: str = "Antigravity's token file"
    provider: str = "antigravity"
    writable: bool = False  # Google keeps one refresh token per login: nothing to share

    @classmethod
    def all(cls, places: Places) -> list[AntigravityTokenFile]:
        return [cls(str(places.home / name), places) for name in FILES]

    def read(self) -> Login:
        path = Path(self.location)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotThere(f"no Antigravity login at {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "unreadable"
            raise CredentialError(f"cannot read {path}: {reason}") from None
        return Login(
            KIND, self.location, "antigravity", secret_of(unwrap(text, str(path)), str(path))
        )

    def write(self, credential: dict[str, Any]) -> None:
        raise CredentialError("Antigravity's token file is not written back")
