"""What one provider's browser sign-in is (R-LOGIN-1): where to send the browser, which client
and scopes to ask for, where the answer comes back, how the code is exchanged, and how the
token answer becomes the account's secret. One `LoginFlow` per provider module
(`login_claude`, `login_codex`, `login_google`); `signin` runs any of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class TokenAnswerError(ValueError):
    """The token endpoint answered 200 with something that is not a usable login."""


@dataclass(frozen=True)
class LoginFlow:
    name: str  # what `sublane account login` calls it: claude, codex, antigravity
    provider: str  # the account's provider: anthropic, codex, antigravity
    label: str  # the provider in words
    base_env: str  # moves the authorize and token URLs (R-LOGIN-1)
    authorize_base: str
    token_base: str
    authorize_path: str
    token_path: str
    client_id: str
    scopes: tuple[str, ...]
    redirect_path: str  # the loopback redirect's path
    # Ports to listen on, in order (a registered fallback after the first); () = any free port.
    ports: tuple[int, ...]
    body: str  # "json" or "form": how the token endpoint takes the exchange
    to_secret: Callable[[Mapping[str, Any], float], dict[str, Any]]
    client_secret: str | None = None  # an installed-app client's (Google)
    extra_params: tuple[tuple[str, str], ...] = ()  # after the standard authorize parameters
    state_in_exchange: bool = False  # Anthropic's exchange body carries the state
    paste_back_path: str | None = None  # the provider's own page that shows code#state
    describe: Callable[[Mapping[str, Any]], str | None] = field(default=lambda answer: None)

    def authorize_endpoint(self, env: Mapping[str, str]) -> str:
        return (env.get(self.base_env) or self.authorize_base).rstrip("/") + self.authorize_path

    def token_endpoint(self, env: Mapping[str, str]) -> str:
        return (env.get(self.base_env) or self.token_base).rstrip("/") + self.token_path

    def paste_back_uri(self, env: Mapping[str, str]) -> str | None:
        """The paste-back page, on the token host (platform.claude.com, or the override)."""
        if self.paste_back_path is None:
            return None
        return (env.get(self.base_env) or self.token_base).rstrip("/") + self.paste_back_path

    def loopback_uri(self, port: int) -> str:
        return f"http://localhost:{port}{self.redirect_path}"

    def authorize_params(self, redirect_uri: str, challenge: str, state: str) -> dict[str, str]:
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(self.scopes),
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
        }
        params.update(self.extra_params)
        return params

    def exchange_fields(
        self, code: str, redirect_uri: str, verifier: str, state: str
    ) -> dict[str, str]:
        fields = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": self.client_id,
            "code_verifier": verifier,
        }
        if self.client_secret:
            fields["client_secret"] = self.client_secret
        if self.state_in_exchange:
            fields["state"] = state
        return fields


def expiry(answer: Mapping[str, Any], now: float, default: float = 3600.0) -> float:
    """Unix seconds from the answer's `expires_in` (seconds from now)."""
    seconds = answer.get("expires_in")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        seconds = default
    return now + float(seconds)


def required(answer: Mapping[str, Any], *names: str) -> dict[str, str]:
    """The named string fields of a token answer; TokenAnswerError names the missing ones."""
    missing = [n for n in names if not isinstance(answer.get(n), str) or not answer[n]]
    if missing:
        raise TokenAnswerError("the token answer has no " + " or ".join(missing))
    return {n: str(answer[n]) for n in names}


def flows() -> dict[str, LoginFlow]:
    """Every provider's flow by its command name."""
    from sublane_desktop.accounts import login_claude, login_codex, login_google

    return {f.name: f for f in (login_claude.FLOW, login_codex.FLOW, login_google.FLOW)}


def flow_for_provider(provider: str) -> LoginFlow | None:
    return next((f for f in flows().values() if f.provider == provider), None)
