"""Conversation keys (R-POOL-4): what makes a request part of a conversation, and its digest.

Only the digest is ever stored; the session id itself never leaves the request.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from sublane_desktop.core import json_text

SESSION_HEADERS = ("session_id", "session-id", "x-claude-code-session-id")
_LEGACY_SESSION = re.compile(r"_session_([0-9A-Za-z-]+)$")


def _session_from_user_id(user_id: object) -> str | None:
    if not isinstance(user_id, str) or not user_id:
        return None
    if user_id.lstrip().startswith("{"):
        try:
            parsed = json_text.parse(user_id)
        except ValueError:
            return None
        session = parsed.get("session_id") if isinstance(parsed, dict) else None
        return session if isinstance(session, str) and session else None
    match = _LEGACY_SESSION.search(user_id)
    return match.group(1) if match else None


def _text(value: object) -> str | None:
    """A usable identity: nonempty text that is valid UTF-8. Header bytes that are not UTF-8
    (they arrive as lone surrogates) are ignored for affinity, never a 500 (R-FT-3)."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value.strip()


def conversation_key(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """The raw conversation identity, or None for an independent request."""
    for name in SESSION_HEADERS:
        value = headers.get(name)
        if value is not None and (value := _text(value)):
            return "s:" + value
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        session = _text(_session_from_user_id(metadata.get("user_id")))
        if session:
            return "s:" + session
    cache_key = body.get("prompt_cache_key")
    if isinstance(cache_key, str) and cache_key and _text(cache_key):
        return "c:" + cache_key
    return None


def conversation_digest(key: str, provider: str) -> str:
    # The provider is part of the digest: one conversation may use a Claude and a GPT model,
    # and each side binds to an account that can serve it.
    return hashlib.sha256(f"{provider}\0{key}".encode()).hexdigest()[:32]
