"""OAuth token refresh (PROTOCOLS.md; R-ST-3). The host moves over time, so it is a setting."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import aiohttp

from sublane_desktop.providers.antigravity import refresh_form
from sublane_desktop.providers.unreachable import why_unreachable

ANTHROPIC_CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
CODEX_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
DEFAULT_OAUTH_BASE = {
    "anthropic": "https://platform.claude.com",
    "codex": "https://auth.openai.com",
    "antigravity": "https://oauth2.googleapis.com",
}
TOKEN_PATH = {"anthropic": "/v1/oauth/token", "codex": "/oauth/token", "antigravity": "/token"}
# The env variable that moves each provider's token endpoint (R-CLI-1, R-AG-1).
OAUTH_BASE_ENV = {
    "anthropic": "SUBLANE_OAUTH_BASE_URL",
    "codex": "SUBLANE_OAUTH_BASE_URL",
    "antigravity": "SUBLANE_GOOGLE_OAUTH_BASE_URL",
}
REFRESH_MARGIN_SECONDS = 300.0  # refresh this long before expiry


class RefreshRejected(Exception):
    """The OAuth server refused the refresh token: the account must be signed in again."""


class RefreshFailed(Exception):
    """A transient refresh failure (network, 5xx): try again later, keep the old token."""


def needs_refresh(credential: dict[str, Any], now: float | None = None) -> bool:
    if "api_key" in credential or not credential.get("refresh_token"):
        return False
    expires = credential.get("expires_at")
    if not isinstance(expires, (int, float)):
        return False
    return (now if now is not None else time.time()) >= expires - REFRESH_MARGIN_SECONDS


async def refresh(
    http: aiohttp.ClientSession,
    provider: str,
    oauth_base: str,
    credential: dict[str, Any],
    now: float,
) -> dict[str, Any]:
    """A new credential dict (same shape) from the refresh token."""
    form: dict[str, str] | None = None
    payload: dict[str, str] | None = None
    if provider == "antigravity":  # Google's token endpoint takes a form, with the client
        form = refresh_form(credential)
    elif provider == "codex":
        payload = {
            "client_id": CODEX_CLIENT_ID,
            "grant_type": "refresh_token",
            "refresh_token": credential["refresh_token"],
            "scope": "openid profile email",
        }
    else:
        payload = {
            "grant_type": "refresh_token",
            "refresh_token": credential["refresh_token"],
            "client_id": ANTHROPIC_CLIENT_ID,
        }
    url = oauth_base.rstrip("/") + TOKEN_PATH.get(provider, "/v1/oauth/token")
    try:
        async with http.post(
            url, json=payload, data=form, timeout=aiohttp.ClientTimeout(total=30)
        ) as resp:
            if resp.status in (400, 401, 403):
                raise RefreshRejected(f"token refresh refused (HTTP {resp.status})")
            if resp.status != 200:
                raise RefreshFailed(f"token refresh failed (HTTP {resp.status})")
            body = await resp.json(content_type=None)
    except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
        raise RefreshFailed(f"token refresh failed: {why_unreachable(exc)}") from None
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise RefreshFailed("token refresh answer had no access_token")
    fresh = dict(credential, access_token=token)
    if isinstance(body.get("refresh_token"), str) and body["refresh_token"]:
        fresh["refresh_token"] = body["refresh_token"]
    if isinstance(body.get("id_token"), str) and body["id_token"]:
        fresh["id_token"] = body["id_token"]  # Codex keeps it in auth.json (R-LOGIN-2)
    expires_in = body.get("expires_in")
    if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
        fresh["expires_at"] = now + float(expires_in)
    elif provider == "codex" and jwt_expiry(token) is not None:
        # Codex's own refresh reads no expires_in (codex-rs/login RefreshResponse): the access
        # token is a JWT and says when it expires
        fresh["expires_at"] = jwt_expiry(token)
    return fresh


def jwt_expiry(token: str) -> float | None:
    """A JWT's `exp` claim (unverified: only when to refresh hangs on it), else None."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        exp = claims["exp"]
    except (IndexError, ValueError, KeyError, TypeError):
        return None
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None
