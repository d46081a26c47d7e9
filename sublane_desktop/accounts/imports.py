"""Importing a tool's login (R-LOGIN-2, R-LOGIN-3): find it, store it, remember where it lives.

`find_login` reads the tool's login from the file given (`--file`) or from the first place the
tool keeps one (sources.discover). `store_import` stores it like any account and remembers its
source (metadata only) so the refresh path can keep the tool's copy in step; `detach` remembers
that it must not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sublane_desktop.accounts.credentials import (
    CredentialError,
    antigravity_secret,
    store_account,
    validate_secret,
)
from sublane_desktop.accounts.sources import Login, NotThere, Places, Source, discover
from sublane_desktop.accounts.sources.tool_files import identity_digest, other_account

# The import names the CLI and the welcome window use, and the provider each one feeds.
TOOL_PROVIDER = {
    "claude-code": "anthropic",
    "codex": "codex",
    "gemini": "antigravity",
    "antigravity": "antigravity",
}
EXPORT_KIND = "antigravity-export"
TOOL_NAMES = {  # by source kind, for the words
    "claude-code-file": "Claude Code",
    "claude-code-keychain": "Claude Code",
    "claude-setup-token": "Claude",
    "codex-file": "Codex",
    "codex-keyring": "Codex",
}  # an account file another tool exported: read once


def find_login(tool: str, file: Path | None, places: Places) -> Login:
    """The login to import. Raises CredentialError (in words, naming where it looked)."""
    from sublane_desktop.accounts.sources import (
        claude_code_file,
        codex_file,
        gemini_cli,
        sources_of,
    )

    if tool not in TOOL_PROVIDER:
        raise CredentialError(f"unknown login source {tool!r}")
    if file is None:
        return discover(tool, places)[0]
    if tool == "antigravity":
        return Login(EXPORT_KIND, str(file), "antigravity", antigravity_secret(file))
    source: Source
    if tool == "claude-code":
        source = claude_code_file.ClaudeCodeFile(str(file), places)
    elif tool == "codex":
        source = codex_file.CodexFile(str(file), places)
    else:
        source = gemini_cli.GeminiCliFile(str(file), places)
    try:
        return source.read()
    except NotThere as exc:
        hint = {s.kind: s.title for s in sources_of(tool, places)}.get(source.kind, "")
        raise CredentialError(f"{exc} (expected {hint})" if hint else str(exc)) from None


def store_import(
    secret_store: Any,
    login: Login,
    name: str,
    group: str,
    base_url: str | None,
    limit: int,
    detach: bool,
) -> tuple[int, str, str]:
    """Store the imported login (re-importing mends the same account) and remember its source.
    Call inside a database transaction, as credentials.store_account."""
    from sublane_desktop.store import account_sources
    from sublane_desktop.store.models import Account

    secret = validate_secret(login.provider, login.secret)
    identity = identity_digest(login.identity)
    named = Account.get_or_none((Account.name == name) & Account.deleted_at.is_null())
    existing = account_sources.source_of(named.id) if named is not None else None
    if existing is not None and other_account(existing.identity, identity):
        # Re-importing mends the same login; another account of the tool is a new account.
        raise CredentialError(
            f"account {name!r} was imported from another {TOOL_NAMES.get(login.kind, 'Google')} account;"
            " pass --name to add this one beside it"
        )
    account_id, verb, kind = store_account(
        secret_store, login.provider, name, group, base_url, limit, secret, replace=True
    )
    account_sources.remember(account_id, login.kind, login.location, identity, detach)
    return account_id, verb, kind


def in_step_words(login: Login, detach: bool, writable: bool) -> str:
    """What the import means for the tool it came from, in words (printed after an import)."""
    if detach:
        return (
            f"detached from {login.location}: SubLane will not read or write it again. The tool"
            " and SubLane now hold the same refresh token and whichever refreshes first signs"
            " the other out; for a token family of SubLane's own, sign in instead"
            " (`sublane account login`)."
        )
    if writable:
        return (
            f"kept in step with {login.location}: before each refresh SubLane reads it again,"
            " after each refresh it writes the new tokens back, so the tool stays logged in."
        )
    return f"imported from {login.location}."
