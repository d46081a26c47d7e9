"""Account credentials: validating pasted secrets, reading installed CLIs' logins, and storing
an account with its secret (shared by the CLI, the service and the Add-account dialog)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from sublane_desktop.secrets import account_secret

PROVIDERS = ("anthropic", "codex", "antigravity")


class CredentialError(ValueError):
    """A clear, secret-free reason why a credential or account cannot be used."""


def validate_secret(provider: str, secret: Any) -> dict[str, Any]:
    if not isinstance(secret, dict):
        raise CredentialError("secret JSON must be an object")
    if "api_key" in secret:
        if not isinstance(secret["api_key"], str) or not secret["api_key"].strip():
            raise CredentialError('"api_key" must be a non-empty string')
        return {"api_key": secret["api_key"].strip()}
    required = ["access_token", "refresh_token", "expires_at"]
    if provider == "codex":
        required.append("account_id")
    missing = [name for name in required if name not in secret]
    if missing:
        raise CredentialError(
            "secret JSON needs either \"api_key\" or " + ", ".join(f'"{n}"' for n in required)
            + "; missing " + ", ".join(f'"{n}"' for n in missing)
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


def _jwt_exp(token: str) -> float | None:
    try:
        payload = token.split(".")[1]
        payload += "=" * (-len(payload) % 4)
        return float(json.loads(base64.urlsafe_b64decode(payload))["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


def _codex_account_id(tokens: dict[str, Any]) -> str | None:
    """ChatGPT account id from the id_token's auth claim (older auth.json files lack the field)."""
    try:
        payload = str(tokens.get("id_token")).split(".")[1]
        payload += "=" * (-len(payload) % 4)
        claims = json.loads(base64.urlsafe_b64decode(payload))
        return claims["https://api.openai.com/auth"]["chatgpt_account_id"] or None
    except (IndexError, ValueError, KeyError, TypeError, AttributeError):
        return None


def claude_code_secret(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
        oauth = data["claudeAiOauth"]
        return validate_secret("anthropic", {
            "access_token": oauth["accessToken"],
            "refresh_token": oauth["refreshToken"],
            "expires_at": float(oauth["expiresAt"]) / 1000.0,  # the file keeps milliseconds
        })
    except FileNotFoundError:
        raise CredentialError(f"no Claude Code login at {path} (run `claude` and log in first)") from None
    except (ValueError, KeyError, TypeError):
        raise CredentialError(f"{path} is not a Claude Code credentials file") from None


def codex_secret(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise CredentialError(f"no Codex login at {path} (run `codex login` first)") from None
    except ValueError:
        raise CredentialError(f"{path} is not valid JSON") from None
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if isinstance(tokens, dict) and tokens.get("access_token"):
        return validate_secret("codex", {
            "access_token": tokens.get("access_token"),
            "refresh_token": tokens.get("refresh_token") or "",
            "expires_at": _jwt_exp(str(tokens.get("access_token"))) or 1.0,
            "account_id": tokens.get("account_id") or _codex_account_id(tokens) or "",
        })
    if isinstance(data, dict) and data.get("OPENAI_API_KEY"):
        return validate_secret("codex", {"api_key": data["OPENAI_API_KEY"]})
    raise CredentialError(f"{path} has neither ChatGPT tokens nor an API key")


def store_account(secret_store: Any, provider: str, name: str, group: str,
                  base_url: str | None, limit: int, secret: dict[str, Any],
                  replace: bool = False) -> tuple[int, str, str]:
    """Add an account, or re-authorize an existing one of the same provider (`replace`).

    Call inside a database transaction: the row and the keyring entry land together, and a
    keyring failure rolls the row back. Returns (account id, "added"|"updated", kind).
    """
    from sublane_desktop.store import repositories as repo
    from sublane_desktop.store.models import Account, AccountRuntime

    if provider not in PROVIDERS:
        raise CredentialError(f"unknown provider {provider!r} (choose from {', '.join(PROVIDERS)})")
    if not 1 <= limit <= 8:
        raise CredentialError("max concurrency must be from 1 to 8")
    kind = "api_key" if "api_key" in secret else "oauth"
    existing = Account.get_or_none((Account.name == name) & Account.deleted_at.is_null())
    if existing is not None:
        if not replace:
            raise CredentialError(f"account {name!r} already exists")
        if existing.provider != provider:
            raise CredentialError(f"account {name!r} is a {existing.provider} account, not "
                           f"{provider}; pass --name to import under another name")
        existing.revision += 1  # re-auth: new lifecycle revision, auth failure repaired
        existing.kind = kind
        if base_url:
            existing.base_url = base_url
        existing.save()
        AccountRuntime.update(auth_failed=False).where(
            AccountRuntime.account == existing.id).execute()
        account, verb = existing, "updated"
    else:
        try:
            account = repo.add_account(provider, name, kind,
                                       repo.get_or_create_group(group),
                                       base_url=base_url, max_concurrency=limit)
        except repo.Conflict as exc:  # e.g. the name of a deleted account
            raise CredentialError(str(exc)) from None
        verb = "added"
    secret_store.set(account_secret(account.id), json.dumps(secret))
    return account.id, verb, kind


