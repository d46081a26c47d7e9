"""Logins found where the tools keep them (R-LOGIN-3), one module per place.

Each place is a `Source`: it knows where it looks (`location`), reads the login there in the
tool's own format (`read`, raising NotThere when there is none and CredentialError when there is
one it cannot use), and, when SubLane may keep the tool's copy in step, writes refreshed tokens
back in that format (`write`, R-LOGIN-2).

`discover` answers an import: the first place of a tool that holds a login, and why each
earlier place did not. `survey` answers the welcome window: every place, found or not, in
words. `source_for` rebuilds a remembered source for the refresh path.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, cast

from sublane_desktop.accounts.credentials import CredentialError
from sublane_desktop.accounts.sources.tool_files import NotThere

__all__ = [
    "Login",
    "NotThere",
    "Places",
    "Source",
    "discover",
    "source_for",
    "sources_of",
    "survey",
]

SECURITY_ENV = "SUBLANE_SECURITY_COMMAND"  # the macOS `security` command (tests: a fake)


@dataclass(frozen=True)
class Places:
    """What decides where the tools keep their logins: the home directory, the environment
    (CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_CONFIG_HOME, APPDATA), the platform, and the seams to the
    OS stores (the `security` command, the keyring)."""

    home: Path
    environ: Mapping[str, str]
    platform: str = sys.platform
    keyring: Callable[[], Any] | None = field(default=None, compare=False)

    @classmethod
    def here(cls) -> Places:
        return cls(Path.home(), dict(os.environ), sys.platform)

    def security(self) -> str | None:
        """The Keychain's command: the override (tests put a fake there), macOS's own, or
        elsewhere a `security` on PATH (none on Linux or Windows unless a test put one)."""
        override = self.environ.get(SECURITY_ENV)
        if override:
            return override
        if self.platform == "darwin":
            return "/usr/bin/security"
        return shutil.which("security", path=self.environ.get("PATH", ""))

    def os_keyring(self) -> Any:
        if self.keyring is not None:
            return self.keyring()
        import keyring

        return keyring.get_keyring()


@dataclass(frozen=True)
class Login:
    """A login read from a tool's store: the credential as SubLane keeps it, and what it needs
    to keep the tool's copy in step."""

    kind: str  # the source's name, e.g. "claude-code-file"
    location: str  # where it was read: a path or a keychain item
    provider: str  # anthropic | codex | antigravity
    secret: dict[str, Any] = field(repr=False)
    identity: str | None = field(default=None, repr=False)  # the account the source names
    warning: str | None = None  # a plain word the person must hear (Gemini CLI)
    unread: tuple[str, ...] = ()  # places looked at first whose login could not be read


class Source(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def tool(self) -> str: ...  # the import it answers: claude-code | codex | antigravity | gemini
    @property
    def title(self) -> str: ...  # where, in words: "Claude Code's login file"
    @property
    def location(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def writable(self) -> bool: ...  # SubLane may write refreshed tokens back (R-LOGIN-2)

    def read(self) -> Login: ...

    def write(self, credential: dict[str, Any]) -> None: ...


def sources_of(tool: str, places: Places) -> list[Source]:
    """The places `tool` keeps its login, in the order the tool itself reads them."""
    from sublane_desktop.accounts.sources import (
        antigravity_keyring,
        antigravity_state_db,
        antigravity_token_file,
        claude_code_file,
        claude_keychain,
        claude_setup_token,
        codex_file,
        codex_keyring,
        gemini_cli,
    )

    found: list[Source] = []
    if tool == "claude-code":
        keychain = claude_keychain.ClaudeKeychain.of(places)
        if keychain is not None:  # macOS: the Keychain first, the file is Claude Code's fallback
            found.append(keychain)
        found.append(claude_code_file.ClaudeCodeFile.of(places))
        found.append(claude_setup_token.SetupToken.of(places))
    elif tool == "codex":
        # Codex keeps one or the other (saving to the keyring deletes auth.json)
        found.append(codex_file.CodexFile.of(places))
        found.append(codex_keyring.CodexKeyring.of(places))
    elif tool == "antigravity":
        found.append(antigravity_keyring.AntigravityKeyring.of(places))
        found.extend(antigravity_token_file.AntigravityTokenFile.all(places))
        found.append(antigravity_state_db.AntigravityStateDb.of(places))
    elif tool == "gemini":
        found.append(gemini_cli.GeminiCliFile.of(places))
    else:
        raise CredentialError(f"unknown login source {tool!r}")
    return found


TOOLS = ("claude-code", "codex", "antigravity", "gemini")


def discover(tool: str, places: Places) -> tuple[Login, list[str]]:
    """The first login `tool` keeps, and why each place before it held none (in words).

    Raises CredentialError naming every place looked at when none holds a usable login.
    """
    passed: list[str] = []
    unread: list[str] = []
    for source in sources_of(tool, places):
        try:
            return replace(source.read(), unread=tuple(unread)), passed
        except NotThere as exc:
            passed.append(str(exc))
        except CredentialError as exc:
            passed.append(str(exc))
            unread.append(f"could not read {source.title}: {exc}")
    raise CredentialError("; ".join(passed) + _how_to_log_in(tool))


def _how_to_log_in(tool: str) -> str:
    return {
        "claude-code": " (run `claude` and log in, or `sublane account login claude`)",
        "codex": " (run `codex login`, or `sublane account login codex`)",
        "antigravity": " (sign in to Antigravity, pass --file with an exported account, or "
        "`sublane account login antigravity`)",
        "gemini": " (run `gemini` and sign in with Google first)",
    }[tool]


def source_for(kind: str, location: str, places: Places) -> Source | None:
    """The remembered source `kind` at `location`, rebuilt for a re-read (None: unknown)."""
    for tool in TOOLS:
        for source in sources_of(tool, places):
            if source.kind == kind:
                moved: Source = replace(cast(Any, source), location=location)
                return moved
    return None


def survey(places: Places) -> list[dict[str, Any]]:
    """Every place each tool keeps a login, for the welcome window: {tool, title, location,
    found, problem, warning}. A place with no login says so; one it could not read says why."""
    rows: list[dict[str, Any]] = []
    for tool in TOOLS:
        for source in sources_of(tool, places):
            row: dict[str, Any] = {
                "tool": tool,
                "kind": source.kind,
                "title": source.title,
                "location": source.location,
                "found": False,
                "problem": None,
                "warning": None,
            }
            try:
                login = source.read()
            except NotThere:
                pass
            except CredentialError as exc:
                row["problem"] = str(exc)
            else:
                row["found"] = True
                row["warning"] = login.warning
            rows.append(row)
    return rows
