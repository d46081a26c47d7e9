"""Account credentials: validating pasted secrets, reading installed CLIs' logins, and storing
an account with its secret (shared by the CLI, the service and the Add-account dialog)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from sublane_desktop.accounts.secrets import account_secret
from sublane_desktop.core.names import BadInput, check_base_url, check_name

PROVIDERS = ("anthropic", "codex", "antigravity")


class CredentialError(ValueError):
    """A clear, secret-free reason why a credential or account cannot be used."""


class AccountExists(CredentialError):
    """The name is taken: `replace` gives that account the new credential instead (mending one
    whose credential is missing or refused in place, R-LOGIN-4)."""


def validate_secret(provider: str, secret: Any) -> dict[str, Any]:
    if not isinstance(secret, dict):
        raise CredentialError("secret JSON must be an object")
    if provider == "antigravity":
        return _google_secret(secret)
    if "api_key" in secret:
        if not isinstance(secret["api_key"], str) or not secret["api_key"].strip():
            raise CredentialError('"api_key" must be a non-empty string')
        return {"api_key": secret["api_key"].strip()}
    if provider == "anthropic" and is_setup_token(secret):
        # `claude setup-token`: a long-lived subscription token, never refreshed, expiry unknown
        return {"access_token": secret["access_token"].strip()}
    required = ["access_token", "refresh_token", "expires_at"]
    if provider == "codex":
        required.append("account_id")
    missing = [name for name in required if name not in secret]
    if missing:
        raise CredentialError(
            'secret JSON needs either "api_key" or '
            + ", ".join(f'"{n}"' for n in required)
            + "; missing "
            + ", ".join(f'"{n}"' for n in missing)
        )
    for name in required:
        if name != "expires_at" and (not isinstance(secret[name], str) or not secret[name]):
            raise CredentialError(f'"{name}" must be a non-empty string')
    expires = secret["expires_at"]
    if isinstance(expires, bool) or not isinstance(expires, (int, float)) or expires <= 0:
        raise CredentialError('"expires_at" must be unix seconds')
    clean = {name: secret[name] for name in required}
    clean["expires_at"] = float(expires)
    return clean


SETUP_TOKEN_PREFIX = "sk-ant-oat"


def is_setup_token(secret: dict[str, Any]) -> bool:
    """A Claude subscription token without a refresh token (`claude setup-token` prints one)."""
    token = secret.get("access_token")
    return (
        isinstance(token, str)
        and token.strip().startswith(SETUP_TOKEN_PREFIX)
        and not secret.get("refresh_token")
    )


# Optional fields of a Google login: the Cloud project (else discovered on first use) and the
# installed-app OAuth client that issued it (a refresh must name the same client).
GOOGLE_OPTIONAL = ("project_id", "client_id", "client_secret")


def _google_secret(secret: dict[str, Any]) -> dict[str, Any]:
    """An Antigravity account's secret: a Google OAuth login (R-AG-1); there are no API keys."""
    if "api_key" in secret:
        raise CredentialError(
            "antigravity accounts take a Google OAuth login "
            '({"access_token","refresh_token","expires_at"}), not an api_key'
        )
    required = ("access_token", "refresh_token", "expires_at")
    missing = [name for name in required if not secret.get(name)]
    if missing:
        raise CredentialError(
            "a Google login needs "
            + ", ".join(f'"{n}"' for n in required)
            + "; missing "
            + ", ".join(f'"{n}"' for n in missing)
            + (" (without it SubLane cannot renew the login)" if "refresh_token" in missing else "")
        )
    for name in ("access_token", "refresh_token", *GOOGLE_OPTIONAL):
        if (
            name in secret
            and secret[name] is not None
            and (not isinstance(secret[name], str) or not secret[name].strip())
        ):
            raise CredentialError(f'"{name}" must be a non-empty string')
    expires = secret["expires_at"]
    if isinstance(expires, bool) or not isinstance(expires, (int, float)) or expires <= 0:
        raise CredentialError('"expires_at" must be unix seconds')
    clean: dict[str, Any] = {
        "access_token": secret["access_token"].strip(),
        "refresh_token": secret["refresh_token"].strip(),
        "expires_at": float(expires),
    }
    for name in GOOGLE_OPTIONAL:
        if secret.get(name):
            clean[name] = secret[name].strip()
    if ("client_id" in clean) != ("client_secret" in clean):
        raise CredentialError('"client_id" and "client_secret" go together')
    return clean


def _read_json(path: Path, what: str, how: str) -> Any:
    """A login file's JSON, or a CredentialError that says what went wrong with it and, for a
    missing file, how to get one."""
    # (here, not at the top: tool_files builds on this module's CredentialError)
    from sublane_desktop.accounts.sources.tool_files import NotThere, read_json

    try:
        return read_json(path, what)
    except NotThere:
        raise CredentialError(f"no {what} login at {path} ({how})") from None


def expiry_of(data: dict[str, Any]) -> float | None:
    """Unix seconds from whichever expiry field a Google login file uses."""
    for name, scale in (
        ("expiry_date", 0.001),
        ("expiryDate", 0.001),
        ("expires_at", 1.0),
        ("expiresAt", 1.0),
        ("expiry_timestamp", 1.0),
    ):
        value = data.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            seconds = float(value) * scale
            # a milliseconds value in a seconds field (or the reverse) is obvious by its size
            return seconds / 1000.0 if seconds > 1e11 else seconds
    value = data.get("expiry")
    if isinstance(value, str):
        from datetime import datetime

        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return None
    return None


def gemini_cli_secret(path: Path) -> dict[str, Any]:
    """Gemini CLI's `~/.gemini/oauth_creds.json` (tokens, `expiry_date` in ms). The CLI's own
    installed-app client issued it, so refreshes name that client."""
    from sublane_desktop.providers.antigravity import CLIENTS

    data = _read_json(path, "Gemini CLI", "run `gemini` and sign in with Google first")
    if not isinstance(data, dict) or not data.get("access_token"):
        raise CredentialError(f"{path} is not a Gemini CLI credentials file")
    client_id, client_secret = CLIENTS["gemini-cli"]
    return _google_secret(
        {
            "access_token": data.get("access_token"),
            "refresh_token": data.get("refresh_token"),
            "expires_at": expiry_of(data) or 1.0,
            "client_id": client_id,
            "client_secret": client_secret,
        }
    )


def antigravity_secret(path: Path) -> dict[str, Any]:
    """An Antigravity-style account file: a Google login plus `project_id`, as one object, a
    list of them or `{"accounts": [...]}` (the first account is imported)."""
    data = _read_json(path, "Antigravity", "pass --file with an exported Antigravity account")
    if isinstance(data, dict) and isinstance(data.get("accounts"), list):
        data = data["accounts"]
    if isinstance(data, list):
        data = next((d for d in data if isinstance(d, dict)), None)
    if isinstance(data, dict) and isinstance(data.get("token"), dict):
        data = dict(data["token"], **{k: v for k, v in data.items() if k != "token"})
    if not isinstance(data, dict) or not (data.get("access_token") or data.get("accessToken")):
        raise CredentialError(f"{path} is not an Antigravity account file")
    secret: dict[str, Any] = {
        "access_token": data.get("access_token") or data.get("accessToken"),
        "refresh_token": data.get("refresh_token") or data.get("refreshToken"),
        "expires_at": expiry_of(data) or 1.0,
    }
    for name, alias in (
        ("project_id", "projectId"),
        ("client_id", "clientId"),
        ("client_secret", "clientSecret"),
    ):
        if data.get(name) or data.get(alias):
            secret[name] = data.get(name) or data.get(alias)
    return _google_secret(secret)


# Each tool's login file under HOME by default; accounts/sources/ knows every place a tool keeps
# one (CLAUDE_CONFIG_DIR, CODEX_HOME, the Keychain and keyrings, Antigravity's database).
LOGIN_FILES = {
    "claude-code": Path(".claude") / ".credentials.json",
    "codex": Path(".codex") / "auth.json",
    "gemini": Path(".gemini") / "oauth_creds.json",
    "antigravity": Path(".gemini") / "jetski-standalone-oauth-token",
}


def jwt_exp(token: str) -> float | None:
    try:
        payload = token.split(".")[1]
        payload += "=" * (-len(payload) % 4)
        return float(json.loads(base64.urlsafe_b64decode(payload))["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


def codex_account_id(tokens: dict[str, Any]) -> str | None:
    """ChatGPT account id from the id_token's auth claim (older auth.json files lack the field)."""
    try:
        payload = str(tokens.get("id_token")).split(".")[1]
        payload += "=" * (-len(payload) % 4)
        claims = json.loads(base64.urlsafe_b64decode(payload))
        return claims["https://api.openai.com/auth"]["chatgpt_account_id"] or None
    except (IndexError, ValueError, KeyError, TypeError, AttributeError):
        return None


def store_account(
    secret_store: Any,
    provider: str,
    name: str,
    group: str,
    base_url: str | None,
    limit: int,
    secret: dict[str, Any],
    replace: bool = False,
) -> tuple[int, str, str]:
    """Add an account, or re-authorize an existing one of the same provider (`replace`).

    Call inside a database transaction: the row and the keyring entry land together, and a
    keyring failure rolls the row back. Returns (account id, "added"|"updated", kind).
    """
    from sublane_desktop.store import account_sources
    from sublane_desktop.store import repositories as repo
    from sublane_desktop.store.models import Account, AccountRuntime

    if provider not in PROVIDERS:
        raise CredentialError(f"unknown provider {provider!r} (choose from {', '.join(PROVIDERS)})")
    if not 1 <= limit <= 8:
        raise CredentialError("max concurrency must be from 1 to 8")
    try:
        check_name(name, "account")
        if base_url is not None:
            check_base_url(base_url)
    except BadInput as exc:
        raise CredentialError(str(exc)) from None
    kind = "api_key" if "api_key" in secret else "oauth"
    existing = Account.get_or_none((Account.name == name) & Account.deleted_at.is_null())
    if existing is not None:
        if not replace:
            raise AccountExists(f"account {name!r} already exists")
        if existing.provider != provider:
            raise CredentialError(
                f"account {name!r} is a {existing.provider} account, not "
                f"{provider}; pass --name to import under another name"
            )
        existing.revision += 1  # re-auth: new lifecycle revision, auth failure repaired
        existing.kind = kind
        if base_url:
            existing.base_url = base_url
        existing.save()
        AccountRuntime.update(auth_failed=False).where(
            AccountRuntime.account == existing.id
        ).execute()
        account, verb = existing, "updated"
    else:
        try:
            account = repo.add_account(
                provider,
                name,
                kind,
                repo.get_or_create_group(group),
                base_url=base_url,
                max_concurrency=limit,
            )
        except repo.Conflict as exc:  # e.g. the name of a deleted account
            raise CredentialError(str(exc)) from None
        verb = "added"
    # A credential stored by hand or by a sign-in is SubLane's own family: no tool to keep in
    # step with (an import remembers its source again right after, accounts/imports.py).
    account_sources.forget(account.id)
    secret_store.set(account_secret(account.id), json.dumps(secret))
    return account.id, verb, kind
