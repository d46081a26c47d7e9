"""A `claude setup-token` token: a long-lived `sk-ant-oat01-…` subscription token with no refresh
token (PROTOCOLS.md). Claude Code reads it from `CLAUDE_CODE_OAUTH_TOKEN`; so does this source.

Such an account is never refreshed (there is nothing to refresh with) and its expiry is
unknown: when Anthropic stops accepting it, the account says so in words
(REFUSED) and a new `claude setup-token` mends it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sublane_desktop.accounts.credentials import CredentialError, validate_secret
from sublane_desktop.accounts.sources import Login, Places
from sublane_desktop.accounts.sources.tool_files import NotThere

KIND = "claude-setup-token"
REFUSED = (
    "its `claude setup-token` token was refused (it has expired or was revoked) — run "
    "`claude setup-token` again and add the new token with `sublane account add --replace`"
)
ENV = "CLAUDE_CODE_OAUTH_TOKEN"


@dataclass(frozen=True)
class SetupToken:
    location: str  # the environment variable
    places: Places
    kind: str = KIND
    tool: str = "claude-code"
    title: str = "a `claude setup-token` token"
    provider: str = "anthropic"
    writable: bool = False  # nothing to write: the token never changes

    @classmethod
    def of(cls, places: Places) -> SetupToken:
        return cls(ENV, places)

    def read(self) -> Login:
        token = (self.places.environ.get(self.location) or "").strip()
        if not token:
            raise NotThere(f"no setup-token in {self.location}")
        if not token.startswith("sk-ant-oat"):
            raise CredentialError(f"{self.location} does not hold a `claude setup-token` token")
        return Login(
            KIND, self.location, "anthropic", validate_secret("anthropic", {"access_token": token})
        )

    def write(self, credential: dict[str, Any]) -> None:
        raise CredentialError("a setup-token is never refreshed, so never written back")
