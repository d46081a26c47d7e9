"""The one HTTP read both quota endpoints share (Anthropic `oauth/usage`, Codex `wham/usage`)."""

from __future__ import annotations

from typing import Any

import aiohttp

from sublane_desktop.core.numbers import finite_float
from sublane_desktop.core.quota import QuotaReadError
from sublane_desktop.providers.unreachable import why_unreachable

DEFAULT_BACKOFF_SECONDS = 600.0


def _seconds(value: Any) -> float | None:
    number = finite_float(value)
    return number if number is not None and number > 0 else None


async def fetch_usage(http: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> Any:
    """The endpoint's JSON body. Raises QuotaReadError, carrying the endpoint's own retry-after
    on a 429 (these endpoints rate-limit hard and must be left alone meanwhile)."""
    try:
        async with http.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=20)) as resp:
            if resp.status == 429:
                raise QuotaReadError(
                    "usage endpoint rate-limited",
                    retry_after=_seconds(resp.headers.get("retry-after"))
                    or DEFAULT_BACKOFF_SECONDS,
                )
            if resp.status != 200:
                raise QuotaReadError(f"usage endpoint answered HTTP {resp.status}")
            try:
                return await resp.json(content_type=None)
            except ValueError:
                raise QuotaReadError("usage endpoint sent invalid JSON") from None
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise QuotaReadError(f"usage endpoint unreachable: {why_unreachable(exc)}") from None
