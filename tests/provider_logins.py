"""One provider's login as the R-UI-14 tests use it, the same for Claude, Codex and Antigravity:
its token and stored secret by name, and which tokens its fake upstream was asked usage for."""

from __future__ import annotations

from typing import Any

PROVIDERS = ("anthropic", "codex", "antigravity")


class ProviderLogin:
    def __init__(self, provider: str, upstream: Any, codex: Any, google: Any) -> None:
        self.provider = provider
        self.upstream, self.codex, self.google = upstream, codex, google

    def token(self, name: str) -> str:
        return {
            "anthropic": f"sk-ant-oat01-{name}",
            "codex": f"codex-at-{name}",
            "antigravity": f"ya29.{name}",
        }[self.provider]

    def secret(self, name: str) -> dict[str, Any]:
        secret: dict[str, Any] = {
            "access_token": self.token(name),
            "refresh_token": f"rt-{name}",
            "expires_at": 4_000_000_000,
        }
        if self.provider == "codex":
            secret["account_id"] = f"acct-{name}"
        if self.provider == "antigravity":
            secret["project_id"] = "proj-fake-1"
        return secret

    def reads(self) -> list[str]:
        """The tokens whose usage the fake upstream was asked for, in order."""
        if self.provider == "codex":
            return [token for token, _ in self.codex.usage_reads]
        if self.provider == "antigravity":
            return [token for token, _ in self.google.quota_reads]
        return list(self.upstream.usage_reads)

    def forget_reads(self) -> None:
        self.upstream.usage_reads.clear()
        self.codex.usage_reads.clear()
        self.google.quota_reads.clear()
