"""Anthropic Messages upstream (PROTOCOLS.md "Anthropic"): requests, usage, error reading."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import compression_utils

from sublane_desktop.providers import anthropic_quota

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
OAUTH_BETA = "oauth-2025-04-20"

# Client headers passed on with a request SubLane composed (a translated body): the client's
# identity and the API's own headers, nothing that describes a body we did not send.
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

# A relayed request (R-WF-1) carries every header the client sent except these, which stay on
# our side of the relay:
# - hop-by-hop headers (RFC 9110 section 7.6.1), and any the client's Connection header names;
# - what the HTTP client writes itself for the upstream connection: Host, Content-Length,
#   and Expect (100-continue is a conversation with us, not with the upstream);
# - Content-Encoding: the server hands us the body decoded, and that is what we send;
# - the client's own credential (its SubLane key): the account's goes in its place;
# - cookies (ours to the client, never an upstream's business) and what proxies say about the
#   route a request took (Forwarded, Via, X-Forwarded-*, X-Real-IP): SubLane adds none and
#   passes on none, so the upstream sees SubLane's own connection and nothing about the client.
# SubLane reads no routing header of its own from clients, so there is none to hold back.
KEPT_HERE = frozenset(
    {
        "connection",
        "keep-alive",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "expect",
        "content-encoding",
        "authorization",
        "x-api-key",
        "cookie",
        "forwarded",
        "via",
        "x-real-ip",
    }
)
KEPT_HERE_PREFIXES = ("proxy-", "x-forwarded-")

# What the relay can decode (aiohttp decodes an answer for us, so the record can read its
# usage): gzip and deflate always, br and zstd when their libraries are installed.
DECODABLE = frozenset(
    {"gzip", "x-gzip", "deflate"}
    | ({"br"} if compression_utils.HAS_BROTLI else set())
    | ({"zstd"} if compression_utils.HAS_ZSTD else set())
)


def merge_betas(*values: str | None) -> str:
    seen: list[str] = []
    for value in values:
        for part in (value or "").split(","):
            part = part.strip()
            if part and part not in seen:
                seen.append(part)
    return ",".join(seen)


def with_betas(client_value: str | None, needed: list[str]) -> str:
    """The client's anthropic-beta value as it sent it (its list, order and spelling), with
    each beta we need appended when it is not already listed."""
    text = client_value or ""
    # a beta not even in the text is not listed (the usual case: no split needed)
    listed = {part.strip() for part in text.split(",")} if any(b in text for b in needed) else ()
    missing = [beta for beta in dict.fromkeys(needed) if beta not in listed]
    if not missing:
        return client_value or ""
    return ",".join([client_value, *missing] if client_value else missing)


def accept_encoding(value: str, decodable: frozenset[str] = DECODABLE) -> str:
    """The client's Accept-Encoding unchanged when we can decode every coding it offers; else
    only the codings we can decode (in its order, with its weights): an answer in a coding we
    cannot read would be lost to the client and to the record alike."""
    parts = [part.strip() for part in value.split(",") if part.strip()]
    usable = [
        part
        for part in parts
        if (coding := part.split(";")[0].strip().lower()) in decodable or coding == "identity"
    ]
    if len(usable) == len(parts):
        return value
    return ", ".join(usable) or "identity"


# Per-request shortcuts: clients send the same two dozen header names and the same few
# Accept-Encoding values on every request, so each is judged once (bounded; tests empty these
# before each test, like the relay's pass-back verdicts, so every test runs the rule itself).
_NAME_VERDICTS: dict[str, str] = {}  # client spelling -> lower-case name, "" when kept here
_OFFERS: dict[tuple[str, frozenset[str]], str] = {}  # (Accept-Encoding, decodable) -> sent


def relayed_name(name: str) -> str:
    """The header's lower-case name when it goes upstream; "" when it stays here."""
    lower = name.lower()
    return "" if lower in KEPT_HERE or lower.startswith(KEPT_HERE_PREFIXES) else lower


def relayed_headers(
    client_headers: Mapping[str, str],
    credential: Mapping[str, Any],
    *,
    extra_betas: list[str],
    decodable: frozenset[str] = DECODABLE,
) -> dict[str, str]:
    """Headers for a relayed request (R-WF-1): the client's, as it spelled them, less what
    stays here (KEPT_HERE), with the account's credential and the betas its kind needs."""
    named = _named_by_connection(client_headers)
    verdicts = _NAME_VERDICTS
    if len(verdicts) > 512:
        verdicts.clear()
    headers: dict[str, str] = {}
    spelled: dict[str, str] = {}  # lower-case name -> the client's spelling
    for name, value in client_headers.items():
        lower = verdicts.get(name)
        if lower is None:
            lower = verdicts[name] = relayed_name(name)
        if (
            not lower
            or (named and lower in named)
            or not (value.isascii() or _is_text(value))  # unsendable; no beta rides on it
        ):
            continue
        if lower in spelled:  # a repeated field: one line, its values in order (RFC 9110 5.3)
            headers[spelled[lower]] += ", " + value
        else:
            spelled[lower] = name
            headers[name] = value
    if "anthropic-version" not in spelled:
        headers["anthropic-version"] = API_VERSION
    if "content-type" not in spelled:
        headers["content-type"] = "application/json"
    if "accept-encoding" in spelled:
        name = spelled["accept-encoding"]
        key = (headers[name], decodable)
        offer = _OFFERS.get(key)
        if offer is None:
            if len(_OFFERS) > 64:
                _OFFERS.clear()
            offer = _OFFERS[key] = accept_encoding(*key)
        headers[name] = offer
    betas = _with_credential(headers, credential, extra_betas)
    beta_name = spelled.get("anthropic-beta", "anthropic-beta")
    beta = with_betas(headers.get(beta_name), betas)
    if beta:
        headers[beta_name] = beta
    return headers


def _with_credential(
    headers: dict[str, str], credential: Mapping[str, Any], extra_betas: list[str]
) -> list[str]:
    """Put the account's credential on the headers; the betas the request then needs (an
    OAuth token is read only with the oauth beta)."""
    if "api_key" in credential:
        headers["x-api-key"] = str(credential["api_key"])
        return list(extra_betas)
    headers["authorization"] = f"Bearer {credential.get('access_token', '')}"
    return [*extra_betas, OAUTH_BETA]


def _named_by_connection(headers: Mapping[str, str]) -> frozenset[str]:
    """Headers the client's Connection header makes hop-by-hop (besides its own options)."""
    values = _all_values(headers, "connection")
    if not values:
        return frozenset()
    tokens = {token.strip().lower() for value in values for token in value.split(",")}
    return frozenset(tokens - {"keep-alive", "close", ""})


def _is_text(value: str) -> bool:
    """Header bytes that are not UTF-8 arrive as lone surrogates."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _all_values(headers: Mapping[str, str], name: str) -> list[str]:
    getall = getattr(headers, "getall", None)  # a multidict keeps repeated fields
    if getall is not None:
        return list(getall(name, []))
    return [v for k, v in headers.items() if k.lower() == name]


def upstream_headers(
    client_headers: Mapping[str, str], credential: Mapping[str, Any], *, extra_betas: list[str]
) -> dict[str, str]:
    """Headers for a request SubLane composed (a translated body, a metadata call)."""
    headers = {name: client_headers[name] for name in FORWARD_HEADERS if name in client_headers}
    headers.setdefault("anthropic-version", API_VERSION)
    headers["content-type"] = "application/json"
    betas = _with_credential(headers, credential, extra_betas)
    client_betas = client_headers.get("anthropic-beta")
    # The usual request brings no betas of its own and needs one: nothing to merge.
    beta = merge_betas(client_betas, *betas) if client_betas or len(betas) > 1 else "".join(betas)
    if beta:
        headers["anthropic-beta"] = beta
    return headers


def models_call(base: str, credential: Mapping[str, Any]) -> tuple[str | None, dict[str, str]]:
    """GET /v1/models, for model discovery: API keys only. The model list refuses an OAuth
    (subscription) token whatever its betas (401 "OAuth authentication is currently not
    supported."), so such a login has no model-list call: (None, {})."""
    if "api_key" not in credential:
        return None, {}
    headers = upstream_headers({}, credential, extra_betas=[])
    del headers["content-type"]
    return f"{base.rstrip('/')}/v1/models?limit=1000", headers


def verify_call(base: str, credential: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """The cheap authenticated GET `verify` makes: the model list for an API key, the usage
    endpoint (`GET /api/oauth/usage`, the call Claude Code makes with its login) for an OAuth
    token."""
    url, headers = models_call(base, credential)
    if url is not None:
        return url, headers
    headers = upstream_headers({}, credential, extra_betas=[])
    del headers["content-type"]
    return anthropic_quota.usage_url(base), headers


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
