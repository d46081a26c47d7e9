"""Claude Code's login in the macOS Keychain: the generic password `Claude Code-credentials`,
holding the same JSON as the login file (PROTOCOLS.md; better-ccflare reads it with
`security find-generic-password -s "Claude Code-credentials" -w`).

With CLAUDE_CONFIG_DIR set, Claude Code (2.1.197, read from its bundle) names the item
`Claude Code-credentials-<first 8 hex digits of sha256(the variable's value, NFC)>`, under the
account `$USER`; so does this source.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sublane_desktop.accounts.credentials import CredentialError
from sublane_desktop.accounts.sources import Login, Places, macos_keychain
from sublane_desktop.accounts.sources.claude_code_file import config_dir, login_of, updated
from sublane_desktop.accounts.sources.tool_files import NotThere
from sublane_desktop.core import json_text

KIND = "claude-code-keychain"
SERVICE = "Claude Code-credentials"


def service_name(places: Places) -> str:
    custom = places.environ.get("CLAUDE_CONFIG_DIR")
    if not custom:
        return SERVICE
    digest = hashlib.sha256(unicodedata.normalize("NFC", custom).encode("utf-8")).hexdigest()
    return f"{SERVICE}-{digest[:8]}"


@dataclass(frozen=True)
class ClaudeKeychain:
    location: str  # the item's service name
    places: Places
    kind: str = KIND
    tool: str = "claude-code"
    title: str = "the macOS Keychain (Claude Code)"
    provider: str = "anthropic"
    writable: bool = True

    @classmethod
    def of(cls, places: Places) -> ClaudeKeychain | None:
        """The Keychain source on macOS (or wherever the `security` seam points), else None."""
        return cls(service_name(places), places) if places.security() else None

    def _security(self) -> str:
        security = self.places.security()
        if security is None:
            raise NotThere("there is no Keychain on this system")
        return security

    def _data(self) -> Any:
        try:
            text = macos_keychain.find(self._security(), self.location)
        except macos_keychain.ItemMissing:
            raise NotThere(f"no Claude Code login in the Keychain item {self.location!r}") from None
        try:
            return json_text.parse(text)
        except ValueError:
            raise CredentialError(
                f"the Keychain item {self.location!r} does not hold Claude Code's login JSON"
            ) from None

    def read(self) -> Login:
        where = f"the Keychain item {self.location!r}"
        return login_of(self._data(), KIND, self.location, self.places, where)

    def lock_dir(self) -> Path:
        """Where Claude Code takes its refresh lock (its config directory)."""
        return config_dir(self.places)

    def write(self, credential: dict[str, Any]) -> None:
        security = self._security()
        account = (
            macos_keychain.account_of(security, self.location)
            or self.places.environ.get("USER")
            or "claude"
        )
        value = json.dumps(updated(self._data(), credential), separators=(",", ":"))
        macos_keychain.update(security, self.location, account, value)
