"""OpenAI Responses upstream (PROTOCOLS.md "OpenAI / Codex"): ChatGPT-subscription (Codex) and
OpenAI API-key accounts. Pure: requests are built and signals read here; the relay sends.

Where a request goes, one rule per credential kind:

- subscription (`access_token` + `account_id`): `{base}/responses`, base = the account's
  `base_url`, else `SUBLANE_CODEX_BASE_URL`, else https://chatgpt.com/backend-api/codex;
- API key (`api_key`): `{base}/v1/responses`, base = the account's `base_url`, else
  `SUBLANE_OPENAI_BASE_URL`, else https://api.openai.com. A base that already ends in `/v1`
  is not given a second one.

Compaction adds `/compact` to either.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sublane_desktop import __version__
from sublane_desktop.core.cooldown import QuotaHit
from sublane_desktop.core.numbers import finite_float

SUBSCRIPTION_BASE_URL = "https://chatgpt.com/backend-api/codex"
API_BASE_URL = "https://api.openai.com"
ORIGINATOR = "codex_cli_rs"

# Client headers that go upstream: the conversation and turn identity Codex sends, plus the
# harmless descriptive ones. Never the client's key, cookies or hop-by-hop headers (R-PX-3).
FORWARD_HEADERS = (
    "session_id",
    "session-id",
    "thread-id",
    "conversation_id",
    "x-client-request-id",
    "x-codex-turn-state",
    "x-codex-turn-metadata",
    "x-codex-beta-features",
    "openai-beta",
    "version",
)
# Who SubLane says it is on a request it shaped (PROTOCOLS.md "Who SubLane says it is"): its
# own name, never the client's product (a translated Claude Code request is not Claude Code at
# the ChatGPT backend) nor Codex's (R-WF-2). Codex CLI's own requests keep Codex's.
USER_AGENT = f"sublane-desktop/{__version__}"
# Upstream response headers the client may see: Codex reads its quota and turn state here.
PASS_BACK = (
    "content-type",
    "retry-after",
    "x-request-id",
    "openai-model",
    "x-models-etag",
    "x-reasoning-included",
)
PASS_BACK_PREFIX = "x-codex-"

# The ChatGPT backend refuses these with 400 `{"detail":"Unsupported parameter: <name>"}` (it
# sets sampling and the output budget itself): temperature, top_p and max_output_tokens by its
# own words; the rest because both CLIProxyAPI and claude-relay-service delete them before every
# Codex request (context_management: CLIProxyAPI quotes the refusal). The platform API takes
# them, so only subscription requests lose them (docs/upstreams.md "Codex").
SUBSCRIPTION_REFUSES = (
    "temperature",
    "top_p",
    "max_output_tokens",
    "truncation",
    "user",
    "safety_identifier",
    "prompt_cache_retention",
    "context_management",
)

# What GET /v1/models lists for a group with a Codex account (routing accepts any gpt-*,
# codex-* or o<digit> name; this is only the menu).
MODELS = (
    "gpt-5.5",
    "gpt-5.4",
    "gpt-5.4-mini",
    "gpt-5.3-codex",
    "gpt-5.2-codex",
    "gpt-5.2",
    "gpt-5.1-codex-max",
    "gpt-5.1-codex-mini",
    "gpt-5",
)


def is_subscription(credential: Mapping[str, Any]) -> bool:
    return "api_key" not in credential


def base_for(
    account_base: str | None, credential: Mapping[str, Any], codex_base: str, openai_base: str
) -> str:
    if account_base:
        return account_base.rstrip("/")
    return (codex_base if is_subscription(credential) else openai_base).rstrip("/")


def endpoint(base: str, credential: Mapping[str, Any], operation: str = "responses") -> str:
    base = base.rstrip("/")
    if not is_subscription(credential) and not base.endswith("/v1"):
        base += "/v1"
    return base + ("/responses/compact" if operation == "compact" else "/responses")


# The ChatGPT backend lists only the models a Codex client of the asked version may use (each
# model has a `minimal_client_version`), so SubLane asks as a current one: the setting
# `codex.client_version`, this by default (the Codex CLI release the fidelity test runs).
DEFAULT_CLIENT_VERSION = "0.171.0"
_VERSION = re.compile(r"\d{1,4}(\.\d{1,4}){1,3}")


def valid_client_version(value: Any) -> bool:
    """A dotted release number such as 0.171.0 (it goes into a query string)."""
    return isinstance(value, str) and _VERSION.fullmatch(value) is not None


def models_call(
    base: str, credential: Mapping[str, Any], client_version: str = DEFAULT_CLIENT_VERSION
) -> tuple[str, dict[str, str]]:
    """GET …/models: model discovery, and the cheap authenticated call `verify` makes."""
    base = base.rstrip("/")
    if is_subscription(credential):
        version = client_version if valid_client_version(client_version) else DEFAULT_CLIENT_VERSION
        url = f"{base}/models?client_version={version}"
    else:
        url = (base if base.endswith("/v1") else base + "/v1") + "/models"
    headers = upstream_headers({}, credential, stream=False)
    del headers["content-type"]
    return url, headers


def upstream_headers(
    client_headers: Mapping[str, str], credential: Mapping[str, Any], *, stream: bool = True
) -> dict[str, str]:
    headers = {name: client_headers[name] for name in FORWARD_HEADERS if name in client_headers}
    headers["user-agent"] = USER_AGENT
    headers["content-type"] = "application/json"
    headers["accept"] = "text/event-stream" if stream else "application/json"
    if is_subscription(credential):
        headers["authorization"] = f"Bearer {credential.get('access_token', '')}"
        if credential.get("account_id"):
            headers["chatgpt-account-id"] = str(credential["account_id"])
        headers["originator"] = ORIGINATOR
    else:
        headers["authorization"] = f"Bearer {credential.get('api_key', '')}"
    return headers


# --- Codex CLI's own requests, relayed as sent (R-WF-1) ---------------------------------------

# Codex's own clients name themselves twice, the same way: `originator: codex_exec` and a user
# agent `codex_exec/0.171.0 (…)` (codex_cli_rs for the TUI, codex_vscode for the IDE; what
# claude-relay-service's codexCliValidator.js checks, and what Codex CLI 0.171.0 sent in our
# capture). Both must agree: an SDK that copies one header is not Codex.
CODEX_ORIGINATOR_PREFIX = "codex_"

# Never forwarded on the faithful path: hop-by-hop headers (RFC 9110 §7.6.1) and Expect, what
# the connection to the upstream owns (Host, Content-Length), Content-Encoding (the server has
# decoded a compressed body, and the decoded bytes are what goes on), the client's own
# credential and account (replaced by the account's), cookies (R-PX-3) and the WebSocket
# handshake's own headers (a socket turn goes upstream as an HTTP POST).
_NOT_FORWARDED = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
        "host",
        "content-length",
        "content-encoding",
        "authorization",
        "x-api-key",
        "chatgpt-account-id",
        "cookie",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-protocol",
    }
)


def is_codex_cli(headers: Mapping[str, str]) -> bool:
    """Whether a request comes from Codex's own client (originator and user agent agree)."""
    originator = headers.get("originator") or ""
    if not originator.startswith(CODEX_ORIGINATOR_PREFIX):
        return False
    return (headers.get("user-agent") or "").startswith(originator + "/")


def faithful(client_headers: Mapping[str, str], credential: Mapping[str, Any]) -> bool:
    """Codex CLI to a ChatGPT-login account: relayed as sent, not reshaped."""
    return is_subscription(credential) and is_codex_cli(client_headers)


def passthrough_headers(
    client_headers: Mapping[str, str],
    credential: Mapping[str, Any],
    *,
    socket: bool = False,
    turn: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """Every header Codex CLI sent, in its order and spelling, except those above; the
    account's token and ChatGPT account id in place of the client's.

    A socket turn (`socket`, its `response.create` message `turn`) goes as Codex sends the same
    request over HTTP: not the WebSocket beta Codex announces in `openai-beta`, and a header
    the upgrade request carried once for the connection (`x-codex-turn-metadata`,
    `x-codex-window-id`) with the value this turn's `client_metadata` gives it, which is the
    value Codex puts in that header on an HTTP request."""
    per_turn = turn.get("client_metadata") if turn is not None else None
    per_turn = per_turn if isinstance(per_turn, dict) else {}
    headers = {}
    for name, value in client_headers.items():
        lower = name.lower()
        if lower in _NOT_FORWARDED:
            continue
        if socket and lower == "openai-beta" and "websocket" in value.lower():
            continue
        if socket and isinstance(per_turn.get(lower), str):
            value = per_turn[lower]
        headers[name] = value
    if socket:  # what Codex sends with the same request over HTTP (the upgrade had no body)
        lowered = {name.lower() for name in headers}
        if "content-type" not in lowered:
            headers["content-type"] = "application/json"
        if "accept" not in lowered:
            headers["accept"] = "text/event-stream"
    headers["authorization"] = f"Bearer {credential.get('access_token', '')}"
    if credential.get("account_id"):
        headers["chatgpt-account-id"] = str(credential["account_id"])
    return headers


# `client_metadata` keys Codex adds only on a socket (its send time there); over HTTP it sends
# none of them (Codex CLI 0.171.0 captured both ways).
SOCKET_ONLY_METADATA = "x-codex-ws-"


def socket_turn_body(message: Mapping[str, Any]) -> bytes:
    """The HTTP body for one socket turn of Codex CLI, as Codex itself sends the same request
    over HTTP: the `response.create` message's fields in their order (the socket layer has taken
    out `type` and expanded a continuation), `"stream": true` after the model, no socket-only
    metadata, written compactly and unescaped as Codex writes JSON."""
    body: dict[str, Any] = {}
    for name, value in message.items():
        if name == "stream":
            continue
        if name == "client_metadata" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if not k.startswith(SOCKET_ONLY_METADATA)}
        body[name] = value
        if name == "model":
            body["stream"] = True
    body.setdefault("stream", True)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def shape_body(body: dict[str, Any], credential: Mapping[str, Any], model: str) -> dict[str, Any]:
    """The body as the upstream takes it: always streamed (the relay folds a non-streaming
    answer from the terminal event); for subscriptions also what the ChatGPT backend insists
    on where the public API is lenient: unstored, `input` a list, `instructions` present
    (400 "Instructions are required"), none of the parameters it refuses."""
    shaped = dict(body, model=model, stream=True)
    if is_subscription(credential):
        shaped["store"] = False
        for name in SUBSCRIPTION_REFUSES:
            shaped.pop(name, None)
        if isinstance(shaped.get("input"), str):
            shaped["input"] = [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": shaped["input"]}],
                }
            ]
        if not shaped.get("instructions"):
            _hoist_instructions(shaped)
        _system_as_developer(shaped)
    return shaped


def _system_as_developer(body: dict[str, Any]) -> None:
    """The backend refuses `role: "system"` anywhere in `input` (400 "System messages are not
    allowed"); `developer` is the role Codex itself gives its instructions and carries the same
    authority, so a system item past the leading ones (which became `instructions`) keeps its
    place and text with that role, as CLIProxyAPI does."""
    items = body.get("input")
    if not isinstance(items, list):
        return
    body["input"] = [
        dict(item, role="developer")
        if isinstance(item, dict) and item.get("role") == "system"
        else item
        for item in items
    ]


DEFAULT_INSTRUCTIONS = "You are a helpful assistant."


def _hoist_instructions(body: dict[str, Any]) -> None:
    """Leading system/developer messages become `instructions` (a default when there are
    none): the subscription backend wants the system prompt there, not in `input`."""
    items = body.get("input") if isinstance(body.get("input"), list) else []
    texts: list[str] = []
    while (
        items
        and isinstance(items[0], dict)
        and items[0].get("role") in ("system", "developer")
        and items[0].get("type", "message") == "message"
    ):
        content = items[0].get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(
                c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)
            )
        items = items[1:]
    body["input"] = items
    body["instructions"] = "\n\n".join(t for t in texts if t) or DEFAULT_INSTRUCTIONS


def compact_body(body: dict[str, Any], model: str) -> dict[str, Any]:
    shaped = dict(body, model=model)
    shaped.pop("stream", None)
    return shaped


# --- signals from responses -----------------------------------------------------------------------


@dataclass(frozen=True)
class QuotaWindow:
    utilization: float  # fraction 0..1 (the header says percent)
    window_minutes: int | None
    resets_at: float | None  # unix seconds


@dataclass(frozen=True)
class LimitReading:
    """One per-model limit family of a response (`x-<limit>-primary-*`), by its limit id."""

    limit_id: str
    windows: tuple[QuotaWindow, ...]


@dataclass(frozen=True)
class QuotaObservation:
    """The rate-limit headers of one response. The account-wide windows are named by their
    length, never by slot (R-WF-4): Codex dropped its 5-hour window for a while, and some plans
    report the week as primary. `five_hour_absent`: windows were reported and none is 5 h."""

    five_hour: QuotaWindow | None
    seven_day: QuotaWindow | None
    observed_at: float
    families: tuple[LimitReading, ...] = ()
    five_hour_absent: bool = False


FIVE_HOUR_MINUTES = (240, 360)  # 300, with room for a backend that rounds
SEVEN_DAY_MINUTES = (9000, 11000)  # 10080
ACCOUNT_LIMIT = "codex"  # the header family of the account-wide limit


def window_by_length(minutes: float | None) -> str | None:
    """five_hour | seven_day for a window of that length; None for any other (or none)."""
    if minutes is None:
        return None
    if FIVE_HOUR_MINUTES[0] <= minutes <= FIVE_HOUR_MINUTES[1]:
        return "five_hour"
    if SEVEN_DAY_MINUTES[0] <= minutes <= SEVEN_DAY_MINUTES[1]:
        return "seven_day"
    return None


def limit_id(name: str) -> str:
    """A limit's id as openai/codex normalises it (lower case, `_` for `-`), anything else
    that is not a letter or digit made `_` too (it names a gauge)."""
    return _NOT_ID.sub("_", name.strip().lower())


_NOT_ID = re.compile(r"[^a-z0-9_]")


def _window(headers: Mapping[str, str], prefix: str, slot: str) -> QuotaWindow | None:
    used = finite_float(headers.get(f"{prefix}-{slot}-used-percent"))
    if used is None or used < 0:
        return None
    minutes = finite_float(headers.get(f"{prefix}-{slot}-window-minutes"))
    reset = finite_float(headers.get(f"{prefix}-{slot}-reset-at"))
    return QuotaWindow(
        used / 100.0,
        int(minutes) if minutes and minutes > 0 else None,
        reset if reset and reset > 0 else None,
    )


def _windows(headers: Mapping[str, str], limit: str) -> tuple[QuotaWindow, ...]:
    prefix = "x-" + limit.replace("_", "-")
    found = (_window(headers, prefix, "primary"), _window(headers, prefix, "secondary"))
    return tuple(w for w in found if w is not None)


def active_limit(headers: Mapping[str, str]) -> str | None:
    """The limit this request counted against (`x-codex-active-limit`), when it is a
    per-model one rather than the account's."""
    value = headers.get("x-codex-active-limit")  # aiohttp's headers: any case; ours: lower
    if not value:
        return None
    active = limit_id(value)
    return active if active and active != ACCOUNT_LIMIT else None


def quota_from_headers(headers: Mapping[str, str], now: float) -> QuotaObservation | None:
    """None when the response carried no Codex quota headers (API-key accounts, errors).

    Header families follow openai/codex `codex-api/src/rate_limits.rs`: `x-codex-*` is the
    account's limit, `x-<limit>-primary-*` each per-model limit. When `x-codex-active-limit`
    names a per-model limit, the `x-codex-*` numbers are that limit's (the active one), so
    they are not read as the account's windows then.
    """
    lowered = {k.lower(): v for k, v in headers.items() if k[:2].lower() == "x-"}
    if not lowered:
        return None
    five = week = None
    lengths = set()  # the account's windows the upstream has, readable or not
    if active_limit(lowered) is None:
        for slot in ("primary", "secondary"):
            name = window_by_length(finite_float(lowered.get(f"x-codex-{slot}-window-minutes")))
            if name is None:
                continue
            lengths.add(name)
            window = _window(lowered, "x-codex", slot)
            if name == "five_hour" and five is None:
                five = window
            elif name == "seven_day" and week is None:
                week = window
    families = []
    for name in lowered:
        if name.endswith("-primary-used-percent"):
            family = limit_id(name[2 : -len("-primary-used-percent")])
            if family != ACCOUNT_LIMIT:
                windows = _windows(lowered, family)
                if windows:
                    families.append(LimitReading(family, windows))
    if five is None and week is None and not families and not lengths:
        return None
    absent = bool(lengths) and "five_hour" not in lengths
    return QuotaObservation(five, week, now, tuple(families), absent)


def named_window(
    headers: Mapping[str, str], resets_in: float | None, now: float
) -> QuotaHit | None:
    """The quota window a Codex 429 names (R-OBS-3), or None: the 429 is pacing.

    `resets_in`: the `usage_limit_reached` body's wait (None: no such body). A window is named
    by its `x-codex-*` reading at 100%; with the body but no such window, the window whose
    reset the body gives; with neither, a usage limit without a window.
    """
    quota = quota_from_headers(headers, now)
    windows = [
        (name, slot)
        for name, slot in (
            (("five_hour", quota.five_hour), ("seven_day", quota.seven_day)) if quota else ()
        )
        if slot is not None
    ]
    body_reset = now + resets_in if resets_in is not None else None
    spent = [(name, slot) for name, slot in windows if slot.utilization >= 1.0]
    if spent:
        name, slot = max(spent, key=lambda w: w[1].resets_at or 0.0)
        return QuotaHit(name, slot.resets_at if slot.resets_at is not None else body_reset)
    if body_reset is None:
        return None
    for name, slot in windows:
        if slot.resets_at is not None and abs(slot.resets_at - body_reset) <= 60.0:
            return QuotaHit(name, body_reset)
    return QuotaHit(None, body_reset)


def usage_limit_retry_after(body: bytes, now: float) -> float | None:
    """Seconds until a 429 `usage_limit_reached` lifts, from its body (unverified shape:
    `{"error":{"type":"usage_limit_reached","resets_in_seconds":…,"resets_at":…}}`)."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return None
    if error.get("type") != "usage_limit_reached" and error.get("code") != "usage_limit_reached":
        return None
    seconds = finite_float(error.get("resets_in_seconds"))
    if seconds is None:
        resets_at = finite_float(error.get("resets_at"))
        seconds = resets_at - now if resets_at is not None else None
    return seconds if seconds is not None and seconds > 0 else None


def usage_of_json(body: bytes) -> tuple[int | None, int | None, int | None]:
    """(input incl. cached, output, cached) from a JSON answer such as a compaction."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None, None, None
    usage = payload.get("usage") if isinstance(payload, dict) else None
    if not isinstance(usage, dict):
        return None, None, None
    details = usage.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None

    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return count(usage.get("input_tokens")), count(usage.get("output_tokens")), count(cached)
