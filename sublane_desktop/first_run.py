"""First run (R-UI-9): which tool logins are on this computer, and one real test request.

The welcome window lists the logins found here, wherever each tool keeps its own (one click
imports each), and the places it could not read, in words; it ends with a test
request sent through SubLane itself — the same path a tool takes, so it shows up in the
Requests window like any other request.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp

# The tools the welcome window offers, in its order. A new import is one more line here (and
# its places one module in accounts/sources/).
TOOL_TITLES = {
    "claude-code": "Claude Code",
    "codex": "Codex CLI",
    "antigravity": "Antigravity",
    "gemini": "Gemini CLI",
}

# A small, cheap model per provider for the test request (any client protocol reaches any pool).
TEST_MODELS = {
    "anthropic": "claude-haiku-4-5",
    "codex": "gpt-5-codex-mini",
    "openai": "gpt-5-mini",
    "antigravity": "gemini-2.5-flash",
}
TEST_PROMPT = "Reply with the single word: ready"
TEST_TIMEOUT_S = 60.0


def found_logins(
    home: Path | None = None, environ: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """What the welcome window lists (R-LOGIN-3): per tool, the first place holding its login
    ({which, title, place, path, found: True, warning}), every other place holding one ({…,
    found: False, also: True}; the import takes the first), and every place whose login could
    not be read ({…, found: False, problem} in words). Places that hold none are left out."""
    from sublane_desktop.accounts.sources import Places, survey

    places = Places(home or Path.home(), dict(os.environ if environ is None else environ))
    listed: list[dict[str, Any]] = []
    found: set[str] = set()
    for row in survey(places):
        tool = row["tool"]
        entry = {
            "which": tool,
            "title": TOOL_TITLES[tool],
            "place": row["title"],
            "path": row["location"],
            "found": row["found"],
        }
        if row["found"] and tool not in found:
            found.add(tool)
            listed.append(dict(entry, warning=row["warning"]))
        elif row["found"]:  # another login of the tool, later in its order: not imported
            listed.append(dict(entry, found=False, also=True))
        elif row["problem"]:
            listed.append(dict(entry, problem=row["problem"]))
    return listed


async def send_test_request(
    http: aiohttp.ClientSession, endpoint: str, key: str, provider: str
) -> dict[str, Any]:
    """POST one tiny /v1/messages request through SubLane with a client key.

    Returns {"ok", "status", "model", "ms", "text" or "error", "request_id"}; never raises for an HTTP or
    network failure, which is what the person needs to see.
    """
    model = TEST_MODELS.get(provider, TEST_MODELS["anthropic"])
    body = {
        "model": model,
        "max_tokens": 16,
        "messages": [{"role": "user", "content": TEST_PROMPT}],
    }
    started = time.monotonic()
    try:
        async with http.post(
            endpoint.rstrip("/") + "/v1/messages",
            json=body,
            headers={"x-api-key": key, "anthropic-version": "2023-06-01"},
            timeout=aiohttp.ClientTimeout(total=TEST_TIMEOUT_S),
        ) as response:
            data = await response.json(content_type=None)
            status = response.status
            request_id = response.headers.get("X-Request-ID")
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        # In words, never an exception class name (R-UI-16).
        if isinstance(exc, TimeoutError):
            why = "it took too long"
        elif isinstance(exc, aiohttp.ClientConnectorError):
            why = "could not connect to it"
        elif isinstance(exc, ValueError):
            why = "its answer was not JSON"
        else:
            why = "the connection broke off"
        return {
            "ok": False,
            "status": None,
            "model": model,
            "ms": round((time.monotonic() - started) * 1000),
            "error": f"SubLane did not answer: {why}",
        }
    ms = round((time.monotonic() - started) * 1000)
    if status != 200 or not isinstance(data, dict):
        error = data.get("error") if isinstance(data, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        return {
            "ok": False,
            "status": status,
            "model": model,
            "ms": ms,
            "error": message or f"HTTP {status}",
            "request_id": request_id,
        }
    text = "".join(
        part.get("text", "") for part in data.get("content") or [] if isinstance(part, dict)
    )
    return {
        "ok": True,
        "status": status,
        "model": model,
        "ms": ms,
        "text": text.strip(),
        "request_id": request_id,
    }
