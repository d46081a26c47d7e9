"""The exact lines that point a tool at SubLane (PROTOCOLS.md, "Pointing clients at SubLane").

Pure text, no Qt: the "Set up a tool…" dialog shows these with copy buttons.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sublane_desktop.client_env import FIRST_PARTY

KEY_PLACEHOLDER = "<your sl- key>"


@dataclass(frozen=True)
class Tool:
    id: str  # also the name of the client key created for it
    title: str


TOOLS = (
    Tool("claude-code", "Claude Code"),
    Tool("codex", "Codex CLI"),
    Tool("sdk", "SDKs"),
)


@dataclass(frozen=True)
class Snippet:
    title: str
    text: str


def _openai_base(endpoint: str) -> str:
    return endpoint.rstrip("/") + "/v1"


def snippets(tool: str, endpoint: str, key: str | None) -> list[Snippet]:
    key = key or KEY_PLACEHOLDER
    base = endpoint.rstrip("/")
    if tool == "claude-code":
        # The first-party variable: see client_env.FIRST_PARTY (R-WF-8).
        first_party = {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_AUTH_TOKEN": key, **FIRST_PARTY}
        settings = json.dumps({"env": first_party}, indent=2)
        return [
            Snippet(
                "Shell (bash, zsh)",
                "\n".join(f"export {name}={value}" for name, value in first_party.items()),
            ),
            Snippet(
                "fish",
                "\n".join(f"set -gx {name} {value}" for name, value in first_party.items()),
            ),
            Snippet(
                "PowerShell",
                "\n".join(f'$env:{name} = "{value}"' for name, value in first_party.items()),
            ),
            Snippet("or in ~/.claude/settings.json", settings),
        ]
    if tool == "codex":
        return [
            Snippet(
                "~/.codex/config.toml (model_provider goes above any [table])",
                'model_provider = "sublane"\n'
                "\n"
                "[model_providers.sublane]\n"
                'name = "SubLane"\n'
                f'base_url = "{_openai_base(base)}"\n'
                'env_key = "SUBLANE_KEY"\n'
                'wire_api = "responses"',
            ),
            Snippet("Shell (bash, zsh)", f"export SUBLANE_KEY={key}"),
            Snippet("PowerShell", f'$env:SUBLANE_KEY = "{key}"'),
        ]
    if tool == "sdk":
        return [
            # One argument a line: on one line the key's string wrapped in the middle of
            # its quotes in the dialog (issue 25, fault 17).
            Snippet(
                "anthropic (Python)",
                "import anthropic\n\n"
                "client = anthropic.Anthropic(\n"
                f'    base_url="{base}",\n'
                f'    api_key="{key}",\n'
                ")",
            ),
            Snippet(
                "openai (Python)",
                "from openai import OpenAI\n\n"
                "client = OpenAI(\n"
                f'    base_url="{_openai_base(base)}",\n'
                f'    api_key="{key}",\n'
                ")",
            ),
            Snippet(
                "or through the environment (both SDKs read these)",
                f"export ANTHROPIC_BASE_URL={base}\n"
                f"export ANTHROPIC_API_KEY={key}\n"
                f"export OPENAI_BASE_URL={_openai_base(base)}\n"
                f"export OPENAI_API_KEY={key}",
            ),
        ]
    raise ValueError(f"unknown tool {tool!r}")
