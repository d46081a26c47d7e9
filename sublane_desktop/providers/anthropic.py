"""Anthropic Messages upstream (PROTOCOLS.md "Anthropic"): requests, usage, error reading."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
OAUTH_BETA = "oauth-2025-04-20"

# Client headers we pass on; everything else (hop-by-hop, the client's own key, cookies,
# forwarding headers) stays on our side of the proxy (R-PX-3).
FORWARD_HEADERS = (
    "anthropic-beta",
    "anthropic-version",
    "accept",
    "user-agent",
    "x-stainless-lang",
    "x-stainless-package-version",
    "x-stainless-os",
    "x-stainless-arch",
    "x-stainless-runtime",
    "x-stainless-runtime-version",
    "x-app",
)


def merge_betas(*values: str | None) -> str:
    seen: list[str] = []
    for value in values:
        for part in (value or "").split(","):
            part = part.strip()
            if part and part not in seen:
                seen.append(part)
    return ",".join(seen)


def upstream_headers(
    client_headers: Mapping[str, str], credential: Mapping[str, Any], *, extra_betas: list[str]
) -> dict[str, str]:
    headers = {name: client_headers[name] for name in FORWARD_HEADERS if name in client_headers}
    headers.setdefault("anthropic-version", API_VERSION)
    headers["content-type"] = "application/json"
    betas = list(extra_betas)
    if "api_key" in credential:
        headers["x-api-key"] = str(credential["api_key"])
    else:
        headers["authorization"] = f"Bearer {credential.get('access_token', '')}"
        betas.append(OAUTH_BETA)
    client_betas = client_headers.get("anthropic-beta")
    # The usual request brings no betas of its own and needs one: nothing to merge.
    beta = merge_betas(client_betas, *betas) if client_betas or len(betas) > 1 else "".join(betas)
    if beta:
        headers["anthropic-beta"] = beta
    return headers


def models_call(base: str, credential: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """GET /v1/models: model discovery, and the cheap authenticated call `verify` makes."""
    headers = upstream_headers({}, credential, extra_betas=[])
    del headers["content-type"]
    return f"{base.rstrip('/')}/v1/models?limit=1000", headers


def _count(value: Any, before: int | None) -> int | None:
    """A token count as sent, or the count we had: a missing or malformed one changes nothing."""
    return value if type(value) is int and value >= 0 else before


@dataclass
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read: int | None = None
    cache_creation: int | None = None

    def absorb(self, usage: Any) -> None:
        """Take counts from a usage object; message_delta counts are cumulative."""
        if not isinstance(usage, dict):
            return
        self.input_tokens = _count(usage.get("input_tokens"), self.input_tokens)
        self.output_tokens = _count(usage.get("output_tokens"), self.output_tokens)
        self.cache_read = _count(usage.get("cache_read_input_tokens"), self.cache_read)
        self.cache_creation = _count(usage.get("cache_creation_input_tokens"), self.cache_creation)

    @property
    def total_input(self) -> int | None:
        """Anthropic's input_tokens excludes cache reads and writes (R-REC-5)."""
        if self.input_tokens is None:
            return None
        return self.input_tokens + (self.cache_read or 0) + (self.cache_creation or 0)


def error_type_of(body: bytes) -> str | None:
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    error = payload.get("error") if isinstance(payload, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return str(kind)[:64] if kind else None
