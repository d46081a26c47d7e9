"""The environment that points Claude Code, Codex CLI and the SDKs at SubLane (`sublane env`).

PROTOCOLS.md, "Pointing clients at SubLane": Claude Code and the anthropic SDK want the bare
origin (no `/v1`) and send ANTHROPIC_AUTH_TOKEN as a Bearer token; the openai SDK wants `/v1`;
Codex CLI's `[model_providers.sublane]` reads the key from SUBLANE_KEY.
"""

from __future__ import annotations

import sys

SHELLS = ("sh", "fish", "powershell")
# A server bound to every interface is still reached on loopback by local tools.
_WILDCARD = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def default_shell() -> str:
    return "powershell" if sys.platform == "win32" else "sh"


def base_url(host: str, port: int) -> str:
    host = _WILDCARD.get(host, host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


# Claude Code keeps some first-party behaviour (its billing block's `cch` hash, tool search)
# only for an api.anthropic.com base URL unless this variable is set (read in Claude Code
# 2.1.197's own code; SPEC R-WF-8, README "Claude Code's first-party features"). It holds
# behind SubLane: a Claude Code request to an Anthropic account reaches api.anthropic.com with
# its body bytes unchanged (R-WF-1), so the hash it carries stays true.
FIRST_PARTY = {"_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL": "1"}


def client_variables(url: str, key: str) -> dict[str, str]:
    url = url.rstrip("/")
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_AUTH_TOKEN": key,
        "OPENAI_BASE_URL": f"{url}/v1",
        "OPENAI_API_KEY": key,
        "SUBLANE_KEY": key,
        **FIRST_PARTY,
    }


def render(variables: dict[str, str], shell: str) -> str:
    """Assignments in that shell's syntax, one a line, safe to eval/source."""
    if shell == "sh":
        lines = [f"export {name}={_sh_quote(value)}" for name, value in variables.items()]
    elif shell == "fish":
        lines = [f"set -gx {name} {_fish_quote(value)}" for name, value in variables.items()]
    elif shell == "powershell":
        lines = [f"$env:{name} = {_powershell_quote(value)}" for name, value in variables.items()]
    else:
        raise ValueError(f"unknown shell {shell!r} (choose from {', '.join(SHELLS)})")
    return "\n".join(lines) + "\n"


def load_hint(shell: str) -> str:
    """How to apply `sublane env` to the current shell."""
    return {
        "sh": 'eval "$(sublane env)"',
        "fish": "sublane env --shell fish | source",
        "powershell": "sublane env --shell powershell | Out-String | Invoke-Expression",
    }[shell]


def _sh_quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def _fish_quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _powershell_quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
