"""Google Antigravity upstream (PROTOCOLS.md "Google Antigravity", Cloud Code Assist `v1internal`):
the request envelope, Google error bodies, project discovery, the quota read and the OAuth
refresh form. These are reverse-engineered facts that may drift, so they all live here.

Where a request goes: `{base}/v1internal:streamGenerateContent?alt=sse` (or `:generateContent`),
base = the account's `base_url`, else `SUBLANE_ANTIGRAVITY_BASE_URL`, else production. Token
refresh goes to `SUBLANE_GOOGLE_OAUTH_BASE_URL`, else https://oauth2.googleapis.com.
"""

from __future__ import annotations

import json
import platform
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiohttp

from sublane_desktop.core.gauges import (
    FAMILY_WINDOWS,
    Observation,
    clean_observation,
    family_of,
)
from sublane_desktop.core.numbers import finite_float
from sublane_desktop.core.quota import QuotaReadError

DEFAULT_BASE_URL = "https://cloudcode-pa.googleapis.com"
DEFAULT_OAUTH_BASE = "https://oauth2.googleapis.com"
TOKEN_PATH = "/token"
VERSION = "1.11.5"
TIMEOUT_SECONDS = 20.0

# The installed-app OAuth clients of the tools whose logins we import. Google's installed-app
# flow treats these as public (RFC 8252); they ship in those tools' open source. A refresh must
# use the client that issued the token, so an import stores which one with the secret.
CLIENTS = {
    "gemini-cli": (
        "681255809395-oo8ft2oprdrnp9e3aqf6av3hmdib135j.apps.googleusercontent.com",
        "GOCSPX-4uHgMPm" + "-1o7Sk-geV6Cu5clXFsxl",
    ),
    "antigravity": (
        "1071006060591-tmhssin2h21lcre235vtolojh4g403ep.apps.googleusercontent.com",
        "GOCSPX-K58FWR486" + "LdLJ1mLB8sXC4z6qDAf",
    ),
}
DEFAULT_CLIENT = "antigravity"

# Client model names -> the name Antigravity serves (one table, PROTOCOLS.md). Names not listed
# go up as they are; Antigravity answers 404 for what it does not know.
MODEL_ALIASES = {
    "gemini-3-pro": "gemini-3-pro-high",
    "gemini-3-pro-preview": "gemini-3-pro-high",
    "gemini-3-flash-preview": "gemini-3-flash",
    "claude-opus-4-5": "claude-opus-4-5-thinking",
    "claude-opus-4-5-20251101": "claude-opus-4-5-thinking",
    "claude-sonnet-4-5-20250929": "claude-sonnet-4-5",
}
SERVED_PREFIXES = ("gemini-", "claude-")

LOAD_CODE_ASSIST = {
    "metadata": {
        "ideType": "IDE_UNSPECIFIED",
        "platform": "PLATFORM_UNSPECIFIED",
        "pluginType": "GEMINI",
    }
}


def upstream_model(model: str) -> str:
    return MODEL_ALIASES.get(model, model)


def serves(model: str) -> bool:
    """Whether an Antigravity account can serve this (prefix-stripped) model at all."""
    return model.startswith(SERVED_PREFIXES)


def base_for(account_base: str | None, default_base: str) -> str:
    return (account_base or default_base).rstrip("/")


def endpoint(base: str, stream: bool) -> str:
    if stream:
        return base.rstrip("/") + "/v1internal:streamGenerateContent?alt=sse"
    return base.rstrip("/") + "/v1internal:generateContent"


def method_url(base: str, method: str) -> str:
    return f"{base.rstrip('/')}/v1internal:{method}"


def user_agent() -> str:
    system = platform.system().lower() or "linux"
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower() or "amd64"
    )
    return f"antigravity/{VERSION} {system}/{machine}"


def upstream_headers(credential: Mapping[str, Any], *, stream: bool) -> dict[str, str]:
    return {
        "authorization": f"Bearer {credential.get('access_token', '')}",
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
        "user-agent": user_agent(),
    }


def envelope(project: str, model: str, request: dict[str, Any]) -> dict[str, Any]:
    """The v1internal wrapper around a Gemini request."""
    return {
        "project": project,
        "model": model,
        "userAgent": "antigravity",
        "requestId": f"agent-{uuid.uuid4()}",
        "request": request,
    }


# --- Google error bodies --------------------------------------------------------------------------

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def parse_duration(value: Any) -> float | None:
    """A protobuf Duration as JSON ("12s", "0.5s", "1500ms") in seconds; None when unusable."""
    if not isinstance(value, str):
        return None
    match = _DURATION.match(value)
    if match is None:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[match.group(2) or "s"]
    seconds = float(match.group(1)) * scale
    return seconds if seconds > 0 else None


@dataclass(frozen=True)
class GoogleError:
    status: str | None  # RESOURCE_EXHAUSTED, UNAUTHENTICATED, … (None: not a Google body)
    message: str
    retry_after: float | None  # RetryInfo.retryDelay, else ErrorInfo quotaResetDelay


def read_google_error(body: bytes, http_status: int) -> GoogleError:
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        payload = None
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):
        payload = payload[0]  # generateContent sometimes wraps its error in an array
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return GoogleError(
            None,
            f"the upstream answered HTTP {http_status} with a body that is not a Google error",
            None,
        )
    retry: float | None = None
    details = error.get("details")
    for detail in details if isinstance(details, list) else []:
        if not isinstance(detail, dict):
            continue
        if str(detail.get("@type", "")).endswith("RetryInfo"):
            retry = parse_duration(detail.get("retryDelay")) or retry
        metadata = detail.get("metadata")
        if retry is None and isinstance(metadata, dict):
            retry = parse_duration(metadata.get("quotaResetDelay"))
    status = error.get("status")
    message = error.get("message")
    return GoogleError(
        str(status)[:64] if status else None,
        str(message)[:500] if message else f"upstream HTTP {http_status}",
        retry,
    )


# --- project discovery ----------------------------------------------------------------------------


class ProjectUnknown(Exception):
    """loadCodeAssist named no Cloud project for this login (a clear, secret-free reason);
    `status` is its HTTP status when it answered one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def project_of(body: Any) -> str | None:
    project = body.get("cloudaicompanionProject") if isinstance(body, dict) else None
    if isinstance(project, dict):
        project = project.get("id")
    return project if isinstance(project, str) and project else None


async def _post(
    http: aiohttp.ClientSession, url: str, credential: Mapping[str, Any], body: dict[str, Any]
) -> tuple[int, Any]:
    async with http.post(
        url,
        json=body,
        headers=upstream_headers(credential, stream=False),
        timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS),
    ) as resp:
        try:
            return resp.status, await resp.json(content_type=None)
        except ValueError:
            return resp.status, None


async def discover_project(
    http: aiohttp.ClientSession, base: str, credential: Mapping[str, Any]
) -> str:
    """The Cloud project Antigravity bills this login to (`v1internal:loadCodeAssist`)."""
    try:
        status, body = await _post(
            http, method_url(base, "loadCodeAssist"), credential, LOAD_CODE_ASSIST
        )
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise ProjectUnknown(f"could not reach loadCodeAssist ({type(exc).__name__})") from None
    if status != 200:
        raise ProjectUnknown(f"loadCodeAssist answered HTTP {status}", status)
    project = project_of(body)
    if project is None:
        raise ProjectUnknown(
            "this Google login has no Code Assist project yet; sign in once "
            "with Gemini CLI or Antigravity, or give project_id with the secret"
        )
    return project


# --- quota (R-AG-4) -------------------------------------------------------------------------------


def _iso(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()  # 3.11 reads a trailing Z
    except ValueError:
        return None


def quota_observations(body: Any, now: float) -> list[Observation]:
    """Per-family gauges from `fetchAvailableModels`: a family reads as its tightest model
    (utilization = 1 − remainingFraction), resetting when that model resets."""
    models = body.get("models") if isinstance(body, dict) else None
    if not isinstance(models, dict):
        return []
    tightest: dict[str, tuple[float, float | None]] = {}
    for model_id, info in models.items():
        family = family_of(str(model_id))
        quota = info.get("quotaInfo") if isinstance(info, dict) else None
        if family is None or not isinstance(quota, dict):
            continue
        remaining = finite_float(quota.get("remainingFraction"))
        if remaining is None:
            # An exhausted model may omit the fraction and keep only its reset time.
            remaining = 0.0 if quota.get("resetTime") else None
        if remaining is None or not 0.0 <= remaining <= 1.0:
            continue
        used = 1.0 - remaining
        if family not in tightest or used > tightest[family][0]:
            tightest[family] = (used, _iso(quota.get("resetTime")))
    found = []
    for family in FAMILY_WINDOWS:
        if family in tightest:
            used, resets = tightest[family]
            obs = clean_observation(family, used, resets, now, "poll", rejected=used >= 1.0)
            if obs is not None:
                found.append(obs)
    return found


async def read_quota(
    http: aiohttp.ClientSession, base: str, credential: Mapping[str, Any], now: float
) -> list[Observation]:
    """One `v1internal:fetchAvailableModels`. Raises QuotaReadError (with the endpoint's own
    retry delay on a 429, so the refresher leaves it alone meanwhile)."""
    try:
        status, body = await _post(
            http,
            method_url(base, "fetchAvailableModels"),
            credential,
            {"project": credential.get("project_id") or ""},
        )
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise QuotaReadError(f"fetchAvailableModels unreachable ({type(exc).__name__})") from None
    if status == 429:
        retry = read_google_error(json.dumps(body).encode(), status).retry_after
        raise QuotaReadError("fetchAvailableModels rate-limited", retry_after=retry or 600.0)
    if status != 200:
        raise QuotaReadError(f"fetchAvailableModels answered HTTP {status}")
    return quota_observations(body, now)


def models_call(
    base: str, credential: Mapping[str, Any]
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """(url, headers, JSON body) of the one cheap authenticated call that lists what this
    login can use: model discovery and verify (a POST, unlike the other providers' lists)."""
    return (
        method_url(base, "fetchAvailableModels"),
        upstream_headers(credential, stream=False),
        {"project": credential.get("project_id") or ""},
    )


def available_models(body: Any) -> list[str]:
    """Model ids a `fetchAvailableModels` answer lists (for model discovery)."""
    models = body.get("models") if isinstance(body, dict) else None
    return sorted(str(m) for m in models) if isinstance(models, dict) else []


# --- OAuth refresh --------------------------------------------------------------------------------


def refresh_form(credential: Mapping[str, Any]) -> dict[str, str]:
    """The token-endpoint form for a refresh, with the client that issued the login."""
    default_id, default_secret = CLIENTS[DEFAULT_CLIENT]
    client_id = credential.get("client_id") or default_id
    client_secret = credential.get("client_secret")
    if not client_secret:
        client_secret = next(
            (secret for cid, secret in CLIENTS.values() if cid == client_id), default_secret
        )
    return {
        "grant_type": "refresh_token",
        "refresh_token": str(credential["refresh_token"]),
        "client_id": str(client_id),
        "client_secret": str(client_secret),
    }
