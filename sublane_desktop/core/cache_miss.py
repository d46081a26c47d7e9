"""Why a conversation turn missed the prompt cache, and what the miss cost (SPEC §13, R-CF-1).

A turn is compared with the previous turn of the same conversation. The previous turn is known
only by its facts (`PreviousTurn`: which account served it, when it ended, its total input and
the input it left warm in the provider's cache); no prompt content, digest or session id is
needed or kept. `classify_turn` decides in this order:

1. No previous turn known → `first_turn`.
2. The previous turn left nothing warm (the client does not use the cache) → no miss: there
   was nothing to lose.
3. This turn read at least half of the previous turn's total input from the cache → a hit
   (None). Exactly half is still a hit; the miss is "fell *below* half".
4. Otherwise it is a miss, and the cause is the first that holds:
   - `account_switch`: another account served the previous turn (caches are per account);
   - `ttl_expired`: more than the TTL passed between the previous turn's end and this turn's
     start (exactly the TTL is still warm);
   - `prefix_changed`: same account, within the TTL, so the client must have changed the prompt
     prefix (a new system prompt, edited history, reordered tools).

`reread_tokens` is what the miss cost: the input the previous turn had cached or written that
this turn paid for again, i.e. min(previous warm input, this input) minus this turn's cached
input, never below 0. A hit and a first turn cost 0.

The TTL comes from `cache_ttl(provider, body)`:
- Anthropic: 5 minutes, or 1 hour when any `cache_control` block of the request asks for
  `"ttl": "1h"` (the documented extended cache).
- Codex (OpenAI): 5 minutes, or 24 hours with `prompt_cache_retention: "24h"`. OpenAI documents
  that cached prefixes stay "5 to 10 minutes" after last use (up to an hour off-peak). We take
  the lower bound, so a miss *inside* the TTL really points at the prompt, and a miss after a
  6-minute pause is called an expiry rather than blamed on the client.
- Antigravity: 5 minutes. Its Claude models run on Vertex, whose prompt cache lives 5 minutes;
  Gemini's implicit cache has no documented lifetime (observed: minutes), so the same lower
  bound applies for the same reason.

`warm_tokens(provider, …)` says what a finished turn left in the cache: cache reads plus cache
writes for Anthropic (the client marks what to write); OpenAI and Gemini cache every prompt
prefix automatically, so the whole input is warm afterwards.

The simulator uses the same two calls for its cache-break metric, so simulated and recorded
numbers mean the same thing. Keep this API small and stable:
`PreviousTurn`, `Turn`, `CacheMiss`, `classify_turn`, `cache_ttl`, `warm_tokens`, `CAUSES`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FIRST_TURN = "first_turn"
ACCOUNT_SWITCH = "account_switch"
TTL_EXPIRED = "ttl_expired"
PREFIX_CHANGED = "prefix_changed"
CAUSES = (FIRST_TURN, ACCOUNT_SWITCH, TTL_EXPIRED, PREFIX_CHANGED)

DEFAULT_TTL = 300.0  # Anthropic's default ephemeral cache; the lower bound elsewhere (see above)
ANTHROPIC_LONG_TTL = 3600.0  # cache_control {"ttl": "1h"}
OPENAI_LONG_TTL = 86400.0  # prompt_cache_retention "24h"


@dataclass(frozen=True)
class PreviousTurn:
    """What is remembered of a conversation's last turn (in memory and in the affinity table)."""

    account_id: int
    ended_at: float  # wall-clock unix seconds
    input_tokens: int  # total input (Anthropic: input + cache read + cache creation)
    warm_tokens: int  # input it left in the cache: read or written


@dataclass(frozen=True)
class Turn:
    """The turn being classified."""

    account_id: int
    started_at: float  # wall-clock unix seconds
    input_tokens: int  # total input
    cached_tokens: int  # input read from the cache
    ttl: float = DEFAULT_TTL  # seconds, from cache_ttl()


@dataclass(frozen=True)
class CacheMiss:
    cause: str | None  # one of CAUSES, or None for a hit
    reread_tokens: int

    @property
    def is_miss(self) -> bool:
        return self.cause is not None


HIT = CacheMiss(None, 0)


def classify_turn(previous: PreviousTurn | None, turn: Turn) -> CacheMiss:
    """The cause of this turn's cache miss (None on a hit) and the input it read again."""
    if previous is None:
        return CacheMiss(FIRST_TURN, 0)
    if previous.warm_tokens <= 0:
        return HIT
    if 2 * turn.cached_tokens >= previous.input_tokens:
        return HIT
    reread = max(0, min(previous.warm_tokens, turn.input_tokens) - turn.cached_tokens)
    if turn.account_id != previous.account_id:
        return CacheMiss(ACCOUNT_SWITCH, reread)
    if turn.started_at - previous.ended_at > turn.ttl:
        return CacheMiss(TTL_EXPIRED, reread)
    return CacheMiss(PREFIX_CHANGED, reread)


def _blocks(value: Any) -> Iterable[Mapping[str, Any]]:
    if isinstance(value, Mapping):
        yield value
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, Mapping):
                yield item


def _asks_one_hour(body: Mapping[str, Any], raw: bytes | None = None) -> bool:
    """Whether any cache breakpoint of an Anthropic request asks for the 1-hour cache.

    `raw`, the body as sent, lets a request whose text holds no "1h" at all, written out or
    escaped, skip walking every block of a long conversation (`find`: bytes' `in` builds and
    drops a TypeError per call on CPython 3.11, as it first tries the operand as an integer)."""
    if raw is not None and raw.find(b"1h") < 0 and raw.find(b"\\u") < 0:
        return False
    places: list[Any] = [body, body.get("system"), body.get("tools")]
    messages = body.get("messages")
    if isinstance(messages, list):
        places.extend(m.get("content") for m in messages if isinstance(m, Mapping))
    for place in places:
        for block in _blocks(place):
            control = block.get("cache_control")
            if isinstance(control, Mapping) and control.get("ttl") == "1h":
                return True
    return False


def cache_ttl(provider: str, body: Mapping[str, Any], raw: bytes | None = None) -> float:
    """How long the provider keeps this request's prompt cache warm after use, in seconds."""
    if provider == "anthropic":
        return ANTHROPIC_LONG_TTL if _asks_one_hour(body, raw) else DEFAULT_TTL
    if provider == "codex" and body.get("prompt_cache_retention") == "24h":
        return OPENAI_LONG_TTL
    return DEFAULT_TTL


def warm_tokens(
    provider: str, input_tokens: int, cached_tokens: int, cache_creation: int | None = None
) -> int:
    """The input a finished turn left in the provider's cache."""
    if provider == "anthropic":
        return max(0, cached_tokens) + max(0, cache_creation or 0)
    return max(0, input_tokens)
