"""Codex CLI's login in the OS keyring, where Codex keeps it when its credentials store is
`keyring` (or `auto` with a working keyring): service `Codex Auth`, account
`cli|<first 16 hex digits of sha256(canonical CODEX_HOME)>`, the value auth.json's JSON
(openai/codex `codex-rs/login/src/auth/storage.rs`: KEYRING_SERVICE, compute_store_key).

Codex's newer encrypted "secrets" keyring backend keeps an encrypted blob SubLane cannot read;
then the import says so and the file (or a sign-in) is the way.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from sublane_desktop.accounts.credentials import CredentialError
from sublane_desktop.accounts.sources import Login, Places, os_keyring
from sublane_desktop.accounts.sources.codex_file import codex_home, login_of, updated
from sublane_desktop.accounts.sources.tool_files import NotThere
from sublane_desktop.core import json_text

KIND = "codex-keyring"
SERVICE = "Codex Auth"


def store_key(places: Places) -> str:
    home = codex_home(places)
    try:
        canonical = home.resolve(strict=True)
    except OSError:
        canonical = home
    return "cli|" + hashlib.sha256(str(canonical).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class CodexKeyring:
    location: str  # "Codex Auth/cli|…"
    places: Places
    kind: str = KIND
    tool: str = "codex"
    title: str = "the OS keyring (Codex CLI)"
    provider: str = "codex"
    writable: bool = True

    @classmethod
    def of(cls, places: Places) -> CodexKeyring:
        return cls(f"{SERVICE}/{store_key(places)}", places)

    def _item(self) -> tuple[str, str]:
        service, _, account = self.location.partition("/")
        return service, account

    def _data(self) -> Any:
        service, account = self._item()
        text = os_keyring.get(self.places.os_keyring, service, account)
        if not text:
            raise NotThere(f"no Codex login in the keyring item {self.location!r}")
        try:
            return json_text.parse(text)
        except ValueError:
            raise CredentialError(
                f"the keyring item {self.location!r} is not Codex's login JSON"
                " (Codex's encrypted store cannot be read: use auth.json or sign in)"
            ) from None

    def read(self) -> Login:
        return login_of(self._data(), KIND, self.location, f"the keyring item {self.location!r}")

    def write(self, credential: dict[str, Any]) -> None:
        service, account = self._item()
        value = json.dumps(updated(self._data(), credential, time.time()), separators=(",", ":"))
        os_keyring.put(self.places.os_keyring, service, account, value)
