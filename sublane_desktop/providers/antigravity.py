"""Google Antigravity upstream (PROTOCOLS.md "Google Antigravity", Cloud Code Assist `v1internal`):
the request envelope, Google error bodies, project discovery, the quota read and the OAuth
refresh form. These are reverse-engineered facts that may drift, so they all live here.

Where a request goes: `{base}/v1internal:streamGenerateContent?alt=sse` (or `:generateContent`),
base = the account's `base_url`, else `SUBLANE_ANTIGRAVITY_BASE_URL` (either one is the only
host), else Google's hosts in order: generation and the model list daily first, then production
(CLIProxyAPI `antigravity_executor_request.go` antigravityBaseURLFallbackOrder,
antigravity-claude-proxy `src/constants.js` ANTIGRAVITY_ENDPOINT_FALLBACKS); project set-up
production first (both: "loadCodeAssist works better on prod for fresh accounts"). Token refresh
goes to `SUBLANE_GOOGLE_OAUTH_BASE_URL`, else https://oauth2.googleapis.com.
"""

from __future__ import annotations

import asyncio
import json
import platform
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from sublane_desktop.core.catalog import STATIC_MODELS
from sublane_desktop.core.gauges import (
    FAMILY_WINDOWS,
    Observation,
    clean_observation,
    family_of,
)
from sublane_desktop.core.numbers import finite_float, iso_seconds
from sublane_desktop.core.quota import QuotaReadError
from sublane_desktop.providers.unreachable import why_unreachable

DAILY = "https://daily-cloudcode-pa.googleapis.com"
SANDBOX = "https://daily-cloudcode-pa.sandbox.googleapis.com"
PRODUCTION = "https://cloudcode-pa.googleapis.com"
DEFAULT_BASE_URL = PRODUCTION
# Host orders (module docstring). Sandbox is in no order: CLIProxyAPI comments it out and
# antigravity-claude-proxy never had it; only Antigravity-Manager tries it first.
GENERATION_HOSTS = (DAILY, PRODUCTION)
SETUP_HOSTS = (PRODUCTION, DAILY)
# Answers after which the next host is tried: rate-limited or out of capacity on this host
# (CLIProxyAPI antigravity_executor_execute.go falls back on 429 and "no capacity").
FALLBACK_STATUSES = frozenset({429, 500, 502, 503, 504})
DEFAULT_OAUTH_BASE = "https://oauth2.googleapis.com"
TOKEN_PATH = "/token"
# The client version the user agent names (setting `antigravity.client_version`). Cloud Code
# refuses current models below 2.9.0; CLIProxyAPI internal/misc/antigravity_version.go pins
# 2.9.1 as its floor for the same `antigravity/<version> <os>/<arch>` form.
DEFAULT_CLIENT_VERSION = "2.9.1"
MIN_CLIENT_VERSION = (2, 9, 0)
TIMEOUT_SECONDS = 20.0
# onboardUser is a long-running operation: gemini-cli code_assist/setup.ts reads it every 5 s.
ONBOARD_POLL_SECONDS = 5.0
ONBOARD_MAX_POLLS = 24

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

# The names an account serves come from its `fetchAvailableModels`; this is only what the
# August 2026 lists hold (PROTOCOLS.md), used until an account's own list has been read.
KNOWN_MODELS = STATIC_MODELS["antigravity"]
# Names clients send for a model Antigravity serves under another name (the same model, never a
# different version): Gemini's preview and bare names, and Claude names without Antigravity's
# `-thinking` (Opus) or with it (Sonnet 4.6 dropped it: pi issue 1859).
MODEL_ALIASES = {
    "gemini-3.1-pro": "gemini-3.1-pro-high",
    "gemini-3.1-pro-preview": "gemini-3.1-pro-high",
    "gemini-3-flash-preview": "gemini-3-flash",
    "claude-opus-4-6": "claude-opus-4-6-thinking",
    "claude-sonnet-4-6-thinking": "claude-sonnet-4-6",
}
SERVED_PREFIXES = ("gemini-", "claude-")


def upstream_model(model: str) -> str:
    return MODEL_ALIASES.get(model, model)


def serves(model: str) -> bool:
    """Whether an Antigravity account can serve this (prefix-stripped) model at all."""
    return model.startswith(SERVED_PREFIXES)


def serves_model(model: str, listed: tuple[str, ...] | None) -> bool:
    """Whether an account serves this client model name: its own `fetchAvailableModels` list
    when one has been read, else the known names (R-WF-6)."""
    return upstream_model(model) in (KNOWN_MODELS if listed is None else listed)


def base_for(account_base: str | None, default_base: str) -> str:
    return (account_base or default_base).rstrip("/")


def hosts(override: str | None, order: tuple[str, ...]) -> tuple[str, ...]:
    """The hosts to try in turn: an account's or the environment's base URL is the only one."""
    return (override.rstrip("/"),) if override else order


def check_client_version(value: Any) -> str:
    """A client version for the user agent: dotted numbers, at least 2.9.0. ValueError else."""
    parts = value.split(".") if isinstance(value, str) else []
    if len(parts) != 3 or not all(p.isdigit() and len(p) <= 6 for p in parts):
        raise ValueError(
            "antigravity.client_version must be a version like 2.9.1 (three dotted numbers)"
        )
    if tuple(int(p) for p in parts) < MIN_CLIENT_VERSION:
        raise ValueError(
            "antigravity.client_version must be 2.9.0 or newer: Cloud Code refuses current"
            " models to older clients"
        )
    return str(value)


def client_metadata() -> dict[str, str]:
    """Who asks, for loadCodeAssist and onboardUser: an Antigravity login says ANTIGRAVITY
    (CLIProxyAPI, antigravity-claude-proxy and Antigravity-Manager; IDE_UNSPECIFIED is Gemini
    CLI's) on this machine's platform."""
    system, machine = _platform()
    known = {("darwin", "amd64"), ("darwin", "arm64"), ("linux", "amd64"), ("linux", "arm64")}
    if (system, machine) in known:
        where = f"{system}_{machine}".upper()
    elif system == "windows" and machine == "amd64":
        where = "WINDOWS_AMD64"
    else:
        where = "PLATFORM_UNSPECIFIED"
    return {"ideType": "ANTIGRAVITY", "platform": where, "pluginType": "GEMINI"}


def endpoint(base: str, stream: bool) -> str:
    if stream:
        return base.rstrip("/") + "/v1internal:streamGenerateContent?alt=sse"
    return base.rstrip("/") + "/v1internal:generateContent"


def method_url(base: str, method: str) -> str:
    return f"{base.rstrip('/')}/v1internal:{method}"


def _platform() -> tuple[str, str]:
    system = platform.system().lower() or "linux"
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower() or "amd64"
    )
    return system, machine


def user_agent(version: str = DEFAULT_CLIENT_VERSION) -> str:
    system, machine = _platform()
    return f"antigravity/{version} {system}/{machine}"


def upstream_headers(
    credential: Mapping[str, Any], *, stream: bool, version: str = DEFAULT_CLIENT_VERSION
) -> dict[str, str]:
    return {
        "authorization": f"Bearer {credential.get('access_token', '')}",
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
        "user-agent": user_agent(version),
    }


def envelope(project: str, model: str, request: dict[str, Any]) -> dict[str, Any]:
    """The v1internal wrapper around a Gemini request. Every envelope carries `requestType`
    and `request.sessionId` (CLIProxyAPI geminiToAntigravity): the conversation's stable one
    when the request belongs to one, else a fresh one, so unrelated requests are not tied
    together (R-POOL-6)."""
    if not request.get("sessionId"):
        request = dict(request, sessionId=f"-{uuid.uuid4().int % 9_000_000_000_000_000_000}")
    return {
        "project": project,
        "model": model,
        "userAgent": "antigravity",
        "requestType": "agent",
        "requestId": f"agent-{uuid.uuid4()}",
        "request": request,
    }


# --- Google error bodies --------------------------------------------------------------------------

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,
    "\u03bcs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_TERM = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_BARE = re.compile(r"\d+(?:\.\d+)?")
MAX_DURATION_SECONDS = 400 * 86400.0  # beyond this a "duration" is garbage, not a wait


def parse_duration(value: Any) -> float | None:
    """A wait in seconds from a Google duration: a protobuf Duration as JSON ("12s", "0.5s") or
    a Go duration as `quotaResetDelay` carries it ("4h54m56.87563923s", "479.417207ms"; Go's
    time.ParseDuration, as CLIProxyAPI reads it). A bare number is seconds. None when the text
    is not a positive, finite duration."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _BARE.fullmatch(text):
        seconds = float(text)
    else:
        seconds, at = 0.0, 0
        for match in _TERM.finditer(text):
            if match.start() != at:
                return None
            seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
            at = match.end()
        if at == 0 or at != len(text):
            return None
    return seconds if 0 < seconds <= MAX_DURATION_SECONDS else None


@dataclass(frozen=True)
class GoogleError:
    status: str | None  # RESOURCE_EXHAUSTED, UNAUTHENTICATED, … (None: not a Google body)
    message: str
    retry_after: float | None  # RetryInfo.retryDelay, else ErrorInfo quotaResetDelay
    # A spent per-model quota (ErrorInfo reason QUOTA_EXHAUSTED): the model it names, if any.
    quota_exhausted: bool = False
    model: str | None = None


def quota_reset_in(metadata: Mapping[str, Any], now: float | None) -> float | None:
    """Seconds until a spent quota resets: `quotaResetDelay` (a Go duration), else
    `quotaResetTimeStamp` (RFC 3339) against `now`."""
    delay = parse_duration(metadata.get("quotaResetDelay"))
    if delay is not None or now is None:
        return delay
    stamp = iso_seconds(metadata.get("quotaResetTimeStamp"))
    return stamp - now if stamp is not None and stamp > now else None


def read_google_error(body: bytes, http_status: int, now: float | None = None) -> GoogleError:
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
    exhausted, model = False, None
    details = error.get("details")
    for detail in details if isinstance(details, list) else []:
        if not isinstance(detail, dict):
            continue
        if str(detail.get("@type", "")).endswith("RetryInfo"):
            retry = parse_duration(detail.get("retryDelay")) or retry
        metadata = detail.get("metadata")
        if not isinstance(metadata, dict):
            continue
        if detail.get("reason") == "QUOTA_EXHAUSTED":
            exhausted = True
            named = metadata.get("model")
            model = str(named)[:128] if isinstance(named, str) and named else None
        if retry is None:
            retry = quota_reset_in(metadata, now)
    status = error.get("status")
    message = error.get("message")
    return GoogleError(
        str(status)[:64] if status else None,
        str(message)[:500] if message else f"upstream HTTP {http_status}",
        retry,
        exhausted,
        model,
    )


# --- project discovery ----------------------------------------------------------------------------


class ProjectUnknown(Exception):
    """No Cloud project for this login (a clear, secret-free reason); `status` is the HTTP
    status that said so, if one did. `permanent`: Google answered and the login has no project
    even after onboarding, so it cannot be served until it is set up (`auth_failed`, R-WF-5);
    otherwise the asking failed and a later request may ask again."""

    def __init__(self, message: str, status: int | None = None, *, permanent: bool = False):
        super().__init__(message)
        self.status = status
        self.permanent = permanent


NO_PROJECT = (
    "Google gave this login no Code Assist project, even after onboarding it; open Antigravity"
    " once with this Google account (or give project_id with the secret), then add it again"
)


def project_of(body: Any) -> str | None:
    project = body.get("cloudaicompanionProject") if isinstance(body, dict) else None
    if isinstance(project, dict):
        project = project.get("id")
    return project if isinstance(project, str) and project else None


def default_tier(body: Any) -> str | None:
    """The tier to onboard to: the allowedTiers entry marked isDefault (gemini-cli setup.ts)."""
    tiers = body.get("allowedTiers") if isinstance(body, dict) else None
    for tier in tiers if isinstance(tiers, list) else []:
        if isinstance(tier, dict) and tier.get("isDefault") and isinstance(tier.get("id"), str):
            return str(tier["id"])
    return None


async def _call(
    http: aiohttp.ClientSession,
    method: str,
    url: str,
    credential: Mapping[str, Any],
    body: dict[str, Any] | None,
    version: str,
) -> tuple[int, Any]:
    async with http.request(
        method,
        url,
        json=body,
        headers=upstream_headers(credential, stream=False, version=version),
        timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS),
    ) as resp:
        try:
            return resp.status, await resp.json(content_type=None)
        except ValueError:
            return resp.status, None


async def _post_first(
    http: aiohttp.ClientSession,
    bases: tuple[str, ...],
    method: str,
    credential: Mapping[str, Any],
    body: dict[str, Any],
    version: str,
) -> tuple[str, int, Any]:
    """POST one v1internal method to the first host that answers it (hosts in order; a host
    that is unreachable, rate-limited or out of capacity hands over to the next). Returns the
    host that answered with its status and body; raises the last network error."""
    failure: Exception | None = None
    answer: tuple[str, int, Any] | None = None
    for base in bases:
        try:
            status, payload = await _call(
                http, "POST", method_url(base, method), credential, body, version
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            failure = exc
            continue
        answer = (base, status, payload)
        if status not in FALLBACK_STATUSES:
            return answer
    if answer is not None:
        return answer
    assert failure is not None
    raise failure


async def discover_project(
    http: aiohttp.ClientSession,
    bases: tuple[str, ...],
    credential: Mapping[str, Any],
    version: str = DEFAULT_CLIENT_VERSION,
) -> str:
    """The Cloud project Antigravity bills this login to: `loadCodeAssist`, and for a login
    that has none yet `onboardUser` to its default tier, read until the operation is done
    (gemini-cli code_assist/setup.ts). Raises ProjectUnknown."""
    metadata = client_metadata()
    try:
        base, status, body = await _post_first(
            http, bases, "loadCodeAssist", credential, {"metadata": metadata}, version
        )
        if status != 200:
            raise ProjectUnknown(f"loadCodeAssist answered HTTP {status}", status)
        project = project_of(body)
        if project is not None:
            return project
        tier = default_tier(body)
        if tier is None:
            raise ProjectUnknown(NO_PROJECT, permanent=True)
        request = {"tierId": tier, "metadata": metadata}
        status, operation = await _call(
            http, "POST", method_url(base, "onboardUser"), credential, request, version
        )
        for _ in range(ONBOARD_MAX_POLLS):
            if status != 200 or not isinstance(operation, dict):
                raise ProjectUnknown(f"onboardUser answered HTTP {status}", status)
            if operation.get("done"):
                break
            await asyncio.sleep(ONBOARD_POLL_SECONDS)
            name = operation.get("name")
            if isinstance(name, str) and re.fullmatch(r"operations/[\w.-]+", name):
                url = f"{base.rstrip('/')}/v1internal/{name}"
                status, operation = await _call(http, "GET", url, credential, None, version)
            else:  # no operation to read: ask again, as antigravity-claude-proxy does
                status, operation = await _call(
                    http, "POST", method_url(base, "onboardUser"), credential, request, version
                )
        else:
            raise ProjectUnknown("onboarding this login did not finish; try again later")
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise ProjectUnknown(f"could not reach Code Assist: {why_unreachable(exc)}") from None
    response = operation.get("response") if isinstance(operation, dict) else None
    project = project_of(response)
    if project is None:
        raise ProjectUnknown(NO_PROJECT, permanent=True)
    return project


# --- quota (R-AG-4) -------------------------------------------------------------------------------


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
            tightest[family] = (used, iso_seconds(quota.get("resetTime")))
    found = []
    for family in FAMILY_WINDOWS:
        if family in tightest:
            used, resets = tightest[family]
            obs = clean_observation(family, used, resets, now, "poll", rejected=used >= 1.0)
            if obs is not None:
                found.append(obs)
    return found


async def read_available(
    http: aiohttp.ClientSession,
    bases: tuple[str, ...],
    credential: Mapping[str, Any],
    now: float,
    version: str = DEFAULT_CLIENT_VERSION,
) -> tuple[list[Observation], list[str]]:
    """One `v1internal:fetchAvailableModels`: the family gauges and the names this login is
    served. Raises QuotaReadError (with the endpoint's own retry delay on a 429, so the
    refresher leaves it alone meanwhile)."""
    try:
        _, status, body = await _post_first(
            http,
            bases,
            "fetchAvailableModels",
            credential,
            {"project": credential.get("project_id") or ""},
            version,
        )
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise QuotaReadError(f"fetchAvailableModels unreachable: {why_unreachable(exc)}") from None
    if status == 429:
        retry = read_google_error(json.dumps(body).encode(), status, now).retry_after
        raise QuotaReadError("fetchAvailableModels rate-limited", retry_after=retry or 600.0)
    if status != 200:
        raise QuotaReadError(f"fetchAvailableModels answered HTTP {status}")
    return quota_observations(body, now), available_models(body)


def models_call(
    base: str, credential: Mapping[str, Any], version: str = DEFAULT_CLIENT_VERSION
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """(url, headers, JSON body) of the one cheap authenticated call that lists what this
    login can use: model discovery and verify (a POST, unlike the other providers' lists)."""
    return (
        method_url(base, "fetchAvailableModels"),
        upstream_headers(credential, stream=False, version=version),
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
