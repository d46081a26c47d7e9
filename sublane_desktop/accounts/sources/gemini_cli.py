"""Gemini CLI's login file, `~/.gemini/oauth_creds.json` (`access_token`, `refresh_token`,
`expiry_date` in ms; issued to Gemini CLI's own OAuth client).

Since 2026-06-18 Google refuses that client for individual accounts (PROTOCOLS.md; gemini-cli
issue threads: `UNSUPPORTED_CLIENT`), so every read of it carries WARNING, and the import says
it before anything else. Google does not rotate refresh tokens, so nothing is written back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sublane_desktop.accounts.credentials import CredentialError, gemini_cli_secret
from sublane_desktop.accounts.sources import Login, Places
from sublane_desktop.accounts.sources.tool_files import NotThere

KIND = "gemini-cli-file"
WARNING = (
    "Google no longer accepts Gemini CLI's login for individual Google accounts (free, AI Pro, "
    "Ultra) since 2026-06-18: this login only works for Gemini Code Assist Standard or "
    "Enterprise, which do not serve Antigravity's models. For an individual account use "
    "`sublane account login antigravity` instead."
)


@dataclass(frozen=True)
class GeminiCliFile:
    location: str
    places: Places
    kind: str = KIND
    tool: str = "gemini"
    title: str = "Gemini CLI's login file"
    provider: str = "antigravity"
    writable: bool = False  # Google keeps one refresh token per login: nothing to share

    @classmethod
    def of(cls, places: Places) -> GeminiCliFile:
        return cls(str(places.home / ".gemini" / "oauth_creds.json"), places)

    def read(self) -> Login:
        path = Path(self.location)
        if not path.exists():
            raise NotThere(f"no Gemini CLI login at {path}")
        secret = gemini_cli_secret(path)
        return Login(KIND, self.location, "antigravity", secret, warning=WARNING)

    def write(self, credential: dict[str, Any]) -> None:
        raise CredentialError("Gemini CLI's login is not written back")
