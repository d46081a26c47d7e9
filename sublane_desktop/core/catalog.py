"""Model discovery (R-AG-5): which models each provider serves, asked upstream and cached.

`/v1/models` lists, per client group, what the group's providers can serve. The list comes from
the upstreams themselves (a metadata operation, R-POOL-11) because the static menu ages with
every model release; an answer is kept for ten minutes, and when no answer can be had the
static menu stands in, so the route never fails because an upstream is slow or down.

This module holds only the decisions: what is fresh, what to ask, what to fall back to. The
asking is the service's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sublane_desktop.core.clock import Clock

CACHE_SECONDS = 600.0  # R-AG-5: ten minutes
# After a failed ask, wait this long before asking again: a dead upstream would otherwise be
# asked on every /v1/models call, each costing a global-cap slot.
RETRY_AFTER_FAILURE_SECONDS = 60.0

# What each provider serves when its upstream cannot be asked (the old static menu).
STATIC_MODELS: dict[str, tuple[str, ...]] = {
    "anthropic": (
        "claude-opus-4-5",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
        "claude-opus-4-1",
        "claude-fable-5",
    ),
    "codex": (
        "gpt-5.5",
        "gpt-5.4",
        "gpt-5.4-mini",
        "gpt-5.3-codex",
        "gpt-5.2-codex",
        "gpt-5.2",
        "gpt-5.1-codex-max",
        "gpt-5.1-codex-mini",
        "gpt-5",
    ),
    # What Antigravity's fetchAvailableModels lists in August 2026 (PROTOCOLS.md); an account's
    # own list replaces it once read (providers/antigravity.py, R-WF-5, R-WF-6).
    "antigravity": (
        "claude-opus-4-6-thinking",
        "claude-sonnet-4-6",
        "gemini-3.1-pro-high",
        "gemini-3.1-pro-low",
        "gemini-3-flash",
    ),
}
# The owner an OpenAI-style list names for each provider's models.
OWNERS = {"anthropic": "anthropic", "codex": "openai", "antigravity": "google"}


@dataclass
class _Entry:
    models: tuple[str, ...]
    fetched_at: float
    from_upstream: bool


@dataclass
class ModelCatalog:
    """Per-provider model lists with a ten-minute memory."""

    clock: Clock
    _entries: dict[str, _Entry] = field(default_factory=dict)

    def due(self, provider: str) -> bool:
        """Whether the upstream should be asked now for this provider's list."""
        entry = self._entries.get(provider)
        if entry is None:
            return True
        age = self.clock.now() - entry.fetched_at
        return age >= (CACHE_SECONDS if entry.from_upstream else RETRY_AFTER_FAILURE_SECONDS)

    def learn(self, provider: str, models: list[str] | None) -> None:
        """Keep an upstream answer; None (no answer, or an empty one) keeps the fallback."""
        now = self.clock.now()
        if models:
            unique = tuple(dict.fromkeys(m for m in models if isinstance(m, str) and m))
            if unique:
                self._entries[provider] = _Entry(unique, now, True)
                return
        known = self._entries.get(provider)
        if known is not None and known.from_upstream:
            # A failed refresh keeps the last good answer rather than shrinking the menu.
            self._entries[provider] = _Entry(
                known.models, now - CACHE_SECONDS + RETRY_AFTER_FAILURE_SECONDS, True
            )
            return
        self._entries[provider] = _Entry(STATIC_MODELS.get(provider, ()), now, False)

    def models(self, provider: str) -> tuple[str, ...]:
        entry = self._entries.get(provider)
        return entry.models if entry is not None else STATIC_MODELS.get(provider, ())

    def forget(self) -> None:
        """Accounts changed: the next list asks again."""
        self._entries.clear()


def model_ids(body: object) -> list[str]:
    """The model ids in an upstream list answer, whichever of the known shapes it has.

    Anthropic and the OpenAI platform answer `{"data": [{"id": …}]}`, the ChatGPT backend
    `{"models": [{"slug": …}]}`, Antigravity's fetchAvailableModels `{"models": {id: {…}}}`.
    Anything else is no answer (an empty list), never an error.
    """
    if not isinstance(body, dict):
        return []
    items = body.get("data")
    if items is None:
        items = body.get("models")
    if isinstance(items, dict):
        return [key for key in items if isinstance(key, str) and key]
    if not isinstance(items, list):
        return []
    found: list[str] = []
    for item in items:
        if isinstance(item, dict):
            name = item.get("id", item.get("slug"))
            if isinstance(name, str) and name:
                found.append(name)
    return found
