"""Which client sent a request, and which accounts may serve it (SPEC R-WF-2).

Anthropic authorizes a subscription login (an OAuth token, `sk-ant-oat…`) for Claude Code only:
any other caller is refused upstream with 400 "This credential is only authorized for use with
Claude Code…". The production proxies get past that by dressing other callers up as Claude Code;
SubLane does not. It tells Claude Code from other clients by what Claude Code itself sends
(PROTOCOLS.md: `user-agent: claude-cli/<version> (external, …)` and `x-app: cli`, both on
every request it makes, the Agent SDK's included) and places everyone else on accounts that
accept them: Anthropic API keys and Antigravity logins.

Both marks are required: a client that sends only one is not Claude Code, and the safe side of
a wrong guess is an API-key account, never a refusal upstream.
"""

from __future__ import annotations

from collections.abc import Mapping

CLAUDE_CODE_AGENT = "claude-cli/"
CLAUDE_CODE_APP = "cli"

# The upstream's own words when it refuses a client a login does not serve (PROTOCOLS.md): the
# first for an OAuth token from any client but Claude Code; the second (second-hand, April
# 2026) when a plan sends third-party apps to extra usage instead. Neither says anything about
# the account, so neither cools it or marks it auth-failed.
REFUSAL_PHRASES = (
    ("only authorized for use with claude code", "claude_code_only"),
    ("third-party apps now draw from your extra usage", "third_party_extra_usage"),
)
CLAUDE_CODE_ONLY = "claude_code_only"


def is_claude_code(headers: Mapping[str, str]) -> bool:
    """Claude Code, by its own user agent and app header (case-insensitive names: pass the
    request's CIMultiDict or a lower-cased dict)."""
    agent = headers.get("user-agent") or headers.get("User-Agent") or ""
    app = headers.get("x-app") or headers.get("X-App") or ""
    return agent[:11].lower() == CLAUDE_CODE_AGENT and app.strip().lower() == CLAUDE_CODE_APP


def serves_client(provider: str, kind: str, claude_code: bool) -> bool:
    """Whether an account of this provider and credential kind accepts the request's client:
    an Anthropic subscription login serves Claude Code only; every other account serves all."""
    return claude_code or provider != "anthropic" or kind == "api_key"


def client_refusal(message: str | None) -> str | None:
    """The stable code of an upstream refusal of the client (not of the account), or None."""
    if not message:
        return None
    text = message.lower()
    for phrase, code in REFUSAL_PHRASES:
        if phrase in text:
            return code
    return None


def claude_code_only_message(names: list[str]) -> str:
    """What a non-Claude-Code client is told when only subscription logins could serve it."""
    listed = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
    return (
        f"Anthropic serves its subscription logins ({listed}) to Claude Code only, and this"
        " client is not Claude Code. Add an Anthropic API key account (`sublane account add"
        " --provider anthropic`) or an Antigravity account to serve it, or use Claude Code."
    )
