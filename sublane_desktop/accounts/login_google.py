"""Antigravity (Google) browser sign-in: Google's installed-app flow with Antigravity's OAuth
client, as CLIProxyAPI `internal/auth/antigravity/` (client, scopes, port 51121) and
antigravity-claude-proxy `src/auth/oauth.js` (PKCE S256, the `/oauth-callback` path) do it:
authorize at accounts.google.com with `access_type=offline` and `prompt=consent` (else Google
gives no refresh token), exchange form-encoded at oauth2.googleapis.com with the client secret.
The secret keeps the client (a refresh must name the client that issued the token); the Cloud
project is found by loadCodeAssist (and onboarding) on first use, as for an imported login.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_desktop.accounts.login_flow import LoginFlow, expiry, required
from sublane_desktop.providers.antigravity import CLIENTS

CLIENT_ID, CLIENT_SECRET = CLIENTS["antigravity"]


def to_secret(answer: Mapping[str, Any], now: float) -> dict[str, Any]:
    tokens = required(answer, "access_token", "refresh_token")
    return {
        **tokens,
        "expires_at": expiry(answer, now),
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
    }


FLOW = LoginFlow(
    name="antigravity",
    provider="antigravity",
    label="Antigravity",
    base_env="SUBLANE_GOOGLE_AUTH_BASE_URL",
    authorize_base="https://accounts.google.com",
    token_base="https://oauth2.googleapis.com",
    authorize_path="/o/oauth2/v2/auth",
    token_path="/token",
    client_id=CLIENT_ID,
    scopes=(
        "https://www.googleapis.com/auth/cloud-platform",
        "https://www.googleapis.com/auth/userinfo.email",
        "https://www.googleapis.com/auth/userinfo.profile",
        "https://www.googleapis.com/auth/cclog",
        "https://www.googleapis.com/auth/experimentsandconfigs",
    ),
    redirect_path="/oauth-callback",
    ports=(51121,),
    body="form",
    to_secret=to_secret,
    client_secret=CLIENT_SECRET,
    extra_params=(("access_type", "offline"), ("prompt", "consent")),
)
