"""Model routing (R-PX-4) and the Fable family test (R-PX-5). Pure functions."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

PROVIDERS = ("anthropic", "codex", "antigravity")
BETA_1M = "context-1m-2025-08-07"
_SUFFIX = re.compile(r"\[[^\]]*\]$")
_O_SERIES = re.compile(r"^o\d")


@dataclass(frozen=True)
class ModelRoute:
    provider: str
    upstream_model: str  # prefix and [..] suffix stripped
    explicit_provider: bool
    long_context: bool
    fable: bool
    # Providers that may take the request when no account of `provider` is eligible
    # (R-AG-3, R-POOL-5 "across providers"), in order of preference.
    spill: tuple[str, ...] = ()


def _split(model: str) -> tuple[str | None, str, str | None]:
    prefix = None
    head, sep, rest = model.partition("/")
    if sep and head in PROVIDERS:
        prefix, model = head, rest
    suffix = None
    match = _SUFFIX.search(model)
    if match:
        suffix = match.group(0)[1:-1]
        model = model[: match.start()]
    return prefix, model, suffix


def provider_for(model: str) -> str | None:
    if model.startswith("claude-"):
        return "anthropic"
    if model.startswith(("gpt-", "codex-")) or _O_SERIES.match(model):
        return "codex"
    if model.startswith("gemini-"):
        return "antigravity"
    return None


def spill_providers(provider: str, explicit: bool, fable: bool) -> tuple[str, ...]:
    """Antigravity also serves Claude models, so it is the overflow for Anthropic accounts.

    An explicit `provider/` prefix means exactly that provider; Fable models are Anthropic's own
    (no other provider serves them).
    """
    if provider == "anthropic" and not explicit and not fable:
        return ("antigravity",)
    return ()


def is_fable_model(model: str) -> bool:
    _, bare, _ = _split(model)
    return "fable" in bare.split("-")


def route_model(model: object) -> ModelRoute | None:
    """Where a requested model goes, or None when no provider serves it."""
    if not isinstance(model, str) or not model or len(model) > 256:
        return None
    return _route(model)


@functools.lru_cache(maxsize=512)  # asked per request, of a handful of names; routes are frozen
def _route(model: str) -> ModelRoute | None:
    prefix, bare, suffix = _split(model.strip())
    if not bare:
        return None
    provider = prefix or provider_for(bare)
    if provider is None:
        return None
    fable = is_fable_model(model)
    return ModelRoute(
        provider=provider,
        upstream_model=bare,
        explicit_provider=prefix is not None,
        long_context=(suffix or "").lower() == "1m",
        fable=fable,
        spill=spill_providers(provider, prefix is not None, fable),
    )
