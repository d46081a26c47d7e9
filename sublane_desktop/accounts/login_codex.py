"""Codex (ChatGPT subscription) browser sign-in, as openai/codex `codex-rs/login/src/server.rs`
does it (CLIProxyAPI `internal/auth/codex/openai_auth.go` follows it): authorize at
auth.openai.com with Codex's client, PKCE S256, a state and Codex's simplified-flow parameters;
the answer comes back to `http://localhost:1455/auth/callback`, or 1457 when 1455 is taken (the
two ports auth.openai.com's allow-list holds); the code is exchanged form-encoded at
`/oauth/token`. The ChatGPT account id is the `chatgpt_account_id` claim of the answer's
`id_token` (under `https://api.openai.com/auth`).

Scopes: `openid profile email offline_access` (CLIProxyAPI's; Codex CLI adds its connector
scopes, which SubLane does not use).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from sublane_desktop.accounts.login_flow import LoginFlow, TokenAnswerError, expiry, required

CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
AUTH_CLAIM = "https://api.openai.com/auth"


def claims_of(jwt: str) -> dict[str, Any]:
    """A JWT's payload, unverified (the token endpoint just gave it to us over TLS)."""
    try:
        payload = jwt.split(".")[1]
        payload += "=" * (-len(payload) % 4)
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (IndexError, ValueError):
        return {}
    return claims if isinstance(claims, dict) else {}


def to_secret(answer: Mapping[str, Any], now: float) -> dict[str, Any]:
    tokens = required(answer, "access_token", "refresh_token", "id_token")
    auth = claims_of(tokens["id_token"]).get(AUTH_CLAIM)
    account_id = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
    if not isinstance(account_id, str) or not account_id:
        raise TokenAnswerError("the id_token names no ChatGPT account")
    return {
        "access_token": tokens["access_token"],
        "refresh_token": tokens["refresh_token"],
        "id_token": tokens["id_token"],
        "expires_at": expiry(answer, now),
        "account_id": account_id,
    }


def describe(answer: Mapping[str, Any]) -> str | None:
    email = claims_of(str(answer.get("id_token", ""))).get("email")
    return email if isinstance(email, str) and email else None


FLOW = LoginFlow(
    name="codex",
    provider="codex",
    label="Codex",
    base_env="SUBLANE_CODEX_AUTH_BASE_URL",
    authorize_base="https://auth.openai.com",
    token_base="https://auth.openai.com",
    authorize_path="/oauth/authorize",
    token_path="/oauth/token",
    client_id=CLIENT_ID,
    scopes=("openid", "profile", "email", "offline_access"),
    redirect_path="/auth/callback",
    ports=(1455, 1457),
    body="form",
    to_secret=to_secret,
    extra_params=(("id_token_add_organizations", "true"), ("codex_cli_simplified_flow", "true")),
    describe=describe,
)
