"""Claude (Anthropic subscription) browser sign-in, as Claude Code 2.1.197 does it and
CLIProxyAPI `internal/auth/claude/anthropic_auth.go` follows: authorize at claude.ai with
`code=true`, Claude Code's client, PKCE S256 and a state; the answer comes back to
`http://localhost:<any free port>/callback` (Claude Code listens on a port the system picks), or,
with `--no-browser`, to Anthropic's paste-back page, which shows `code#state` to paste; the code
is exchanged as JSON at platform.claude.com with the state in the body.

Scopes: Claude Code's claude.ai set without `org:create_api_key` (SubLane makes no API keys;
CLIProxyAPI asks for the same five).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_desktop.accounts.login_flow import LoginFlow, expiry, required

CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"


def to_secret(answer: Mapping[str, Any], now: float) -> dict[str, Any]:
    tokens = required(answer, "access_token", "refresh_token")
    return {**tokens, "expires_at": expiry(answer, now, default=28800.0)}


def describe(answer: Mapping[str, Any]) -> str | None:
    account = answer.get("account")
    email = account.get("email_address") if isinstance(account, dict) else None
    return email if isinstance(email, str) and email else None


FLOW = LoginFlow(
    name="claude",
    provider="anthropic",
    label="Claude",
    base_env="SUBLANE_CLAUDE_AUTH_BASE_URL",
    authorize_base="https://claude.ai",
    token_base="https://platform.claude.com",
    authorize_path="/oauth/authorize",
    token_path="/v1/oauth/token",
    client_id=CLIENT_ID,
    scopes=(
        "user:profile",
        "user:inference",
        "user:sessions:claude_code",
        "user:mcp_servers",
        "user:file_upload",
    ),
    redirect_path="/callback",
    ports=(),
    body="json",
    to_secret=to_secret,
    extra_params=(("code", "true"),),
    state_in_exchange=True,
    paste_back_path="/oauth/code/callback",
    describe=describe,
)
