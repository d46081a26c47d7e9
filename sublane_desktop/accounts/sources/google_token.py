"""Antigravity's own token JSON, shared by its token file and its keyring item:
`{"token": {"access_token", "token_type", "refresh_token", "expiry" (RFC 3339)},
"auth_method"}` (lbjlaq/Antigravity-Manager `src-tauri/src/modules/integration.rs`,
KeyringPayload; the keyring value may be wrapped as `go-keyring-base64:<base64>`).
The login was issued to Antigravity's OAuth client, so a refresh names that client."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from sublane_desktop.accounts.credentials import CredentialError, expiry_of, validate_secret
from sublane_desktop.core import json_text

GO_KEYRING_PREFIX = "go-keyring-base64:"


def unwrap(text: str, where: str) -> Any:
    if text.startswith(GO_KEYRING_PREFIX):
        try:
            text = base64.b64decode(text[len(GO_KEYRING_PREFIX) :]).decode("utf-8")
        except (binascii.Error, ValueError):
            raise CredentialError(f"{where} is not readable (bad base64)") from None
    try:
        return json_text.parse(text)
    except ValueError:
        raise CredentialError(f"{where} is not valid JSON") from None


def secret_of(data: Any, where: str) -> dict[str, Any]:
    from sublane_desktop.providers.antigravity import CLIENTS

    token = data.get("token") if isinstance(data, dict) else None
    token = token if isinstance(token, dict) else data
    if not isinstance(token, dict) or not token.get("access_token"):
        raise CredentialError(f"{where} is not an Antigravity login")
    client_id, client_secret = CLIENTS["antigravity"]
    return validate_secret(
        "antigravity",
        {
            "access_token": token.get("access_token"),
            "refresh_token": token.get("refresh_token"),
            "expires_at": expiry_of(token) or 1.0,
            "client_id": client_id,
            "client_secret": client_secret,
        },
    )
