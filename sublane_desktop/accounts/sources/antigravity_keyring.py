"""Antigravity's login in the OS keyring: service `gemini`, account `antigravity`, the value
google_token's JSON, on macOS wrapped as `go-keyring-base64:…` (PROTOCOLS.md;
lbjlaq/Antigravity-Manager `read_from_system_keyring`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sublane_desktop.accounts.credentials import CredentialError
from sublane_desktop.accounts.sources import Login, Places, os_keyring
from sublane_desktop.accounts.sources.google_token import secret_of, unwrap
from sublane_desktop.accounts.sources.tool_files import NotThere

KIND = "antigravity-keyring"


@dataclass(frozen=True)
class AntigravityKeyring:
    location: str  # "gemini/antigravity"
    places: Places
    kind: str = KIND
    tool: str = "antigravity"
    title: str = "the OS keyring (Antigravity)"
    provider: str = "antigravity"
    writable: bool = False

    @classmethod
    def of(cls, places: Places) -> AntigravityKeyring:
        return cls("gemini/antigravity", places)

    def read(self) -> Login:
        service, _, account = self.location.partition("/")
        where = f"the keyring item {self.location!r}"
        text = os_keyring.get(self.places.os_keyring, service, account)
        if not text:
            raise NotThere(f"no Antigravity login in {where}")
        return Login(KIND, self.location, "antigravity", secret_of(unwrap(text, where), where))

    def write(self, credential: dict[str, Any]) -> None:
        raise CredentialError("Antigravity's keyring item is not written back")
