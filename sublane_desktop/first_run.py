"""First run (R-UI-9): which tool logins are on this computer, and one real test request.

The welcome window lists the logins found here (one click imports each), and ends with a test
request sent through SubLane itself — the same path a tool takes, so it shows up in the
Requests window like any other request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from sublane_desktop.credentials import LOGIN_FILES


@dataclass(frozen=True)
class LoginSource:
    which: str  # the import_login() name
    title: str


# The order the welcome window offers them in. A new import is one more line here.
LOGIN_SOURCES = (
    LoginSource("claude-code", "Claude Code"),
    LoginSource("codex", "Codex CLI"),
    LoginSource("gemini", "Gemini CLI"),
)

# A small, cheap model per provider for the test request (any client protocol reaches any pool).
TEST_MODELS = {
    "anthropic": "claude-haiku-4-5",
    "codex": "gpt-5-codex-mini",
    "openai": "gpt-5-mini",
    "antigravity": "gemini-2.5-flash",
}
TEST_PROMPT = "Reply with the single word: ready"
TEST_TIMEOUT_S = 60.0


def found_logins(home: Path | None = None) -> list[dict[str, str]]:
    """The tool logins present in this home directory, as {which, title, path}."""
    home = home or Path.home()
    found = []
    for source in LOGIN_SOURCES:
        path = home / LOGIN_FILES[source.which]
        if path.is_file():
            found.append({"which": source.which, "title": source.title, "path": str(path)})
    return found


async def send_test_request(
    http: aiohttp.ClientSession, endpoint: str, key: str, provider: str
) -> dict[str, Any]:
    """POST one tiny /v1/messages request through SubLane with a client key.

    Returns {"ok", "status", "model", "ms", "text" or "error"}; never raises for an HTTP or
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
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        return {
            "ok": False,
            "status": None,
            "model": model,
            "ms": round((time.monotonic() - started) * 1000),
            "error": f"SubLane did not answer ({type(exc).__name__})",
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
        }
    text = "".join(
        part.get("text", "") for part in data.get("content") or [] if isinstance(part, dict)
    )
    return {"ok": True, "status": status, "model": model, "ms": ms, "text": text.strip()}
