"""The cache-miss rule (R-CF-1): each cause, its boundaries, the re-read cost and the TTLs."""

from __future__ import annotations

import json

import pytest

from sublane_desktop.core.cache_miss import (
    ANTHROPIC_LONG_TTL,
    CAUSES,
    DEFAULT_TTL,
    OPENAI_LONG_TTL,
    CacheMiss,
    PreviousTurn,
    Turn,
    cache_ttl,
    classify_turn,
    warm_tokens,
)
from sublane_desktop.core.turn_memory import MODELS_PER_CONVERSATION, TurnMemory

T0 = 1_800_000_000.0
PREV = PreviousTurn(account_id=1, ended_at=T0, input_tokens=50_000, warm_tokens=48_000)


def turn(
    *,
    account: int = 1,
    after: float = 40.0,
    total: int = 52_000,
    cached: int = 48_000,
    ttl: float = DEFAULT_TTL,
) -> Turn:
    return Turn(
        account_id=account, started_at=T0 + after, input_tokens=total, cached_tokens=cached, ttl=ttl
    )


def test_the_four_causes_are_named_as_the_spec_names_them() -> None:
    assert CAUSES == ("first_turn", "account_switch", "ttl_expired", "prefix_changed")


def test_a_turn_with_no_known_predecessor_is_a_first_turn_that_rereads_nothing() -> None:
    assert classify_turn(None, turn(cached=0)) == CacheMiss("first_turn", 0)


def test_a_warm_follow_up_on_the_same_account_is_a_hit() -> None:
    verdict = classify_turn(PREV, turn())
    assert verdict == CacheMiss(None, 0)
    assert not verdict.is_miss


def test_moving_to_another_account_is_an_account_switch_that_rereads_the_warm_prefix() -> None:
    verdict = classify_turn(PREV, turn(account=2, cached=0))
    assert verdict == CacheMiss("account_switch", 48_000)
    assert verdict.is_miss


def test_an_account_switch_counts_only_what_the_new_account_did_not_read() -> None:
    assert classify_turn(PREV, turn(account=2, cached=10_000)) == CacheMiss(
        "account_switch", 38_000
    )


def test_a_switch_whose_cache_still_hit_is_no_miss() -> None:
    # Two API keys of one organization share a cache: the evidence says hit, so no blame.
    assert classify_turn(PREV, turn(account=2, cached=30_000)) == CacheMiss(None, 0)


def test_past_the_ttl_on_the_same_account_the_cache_expired() -> None:
    assert classify_turn(PREV, turn(after=DEFAULT_TTL + 1, cached=0)) == CacheMiss(
        "ttl_expired", 48_000
    )


def test_exactly_the_ttl_is_still_warm_so_a_miss_there_is_a_changed_prefix() -> None:
    assert classify_turn(PREV, turn(after=DEFAULT_TTL, cached=0)).cause == "prefix_changed"
    assert classify_turn(PREV, turn(after=DEFAULT_TTL + 0.001, cached=0)).cause == "ttl_expired"


def test_the_one_hour_ttl_keeps_a_ten_minute_pause_warm() -> None:
    ten_minutes = turn(after=600, cached=0, ttl=ANTHROPIC_LONG_TTL)
    assert classify_turn(PREV, ten_minutes).cause == "prefix_changed"
    assert classify_turn(PREV, turn(after=600, cached=0)).cause == "ttl_expired"
    assert (
        classify_turn(PREV, turn(after=ANTHROPIC_LONG_TTL, cached=0, ttl=ANTHROPIC_LONG_TTL)).cause
        == "prefix_changed"
    )
    assert (
        classify_turn(
            PREV, turn(after=ANTHROPIC_LONG_TTL + 1, cached=0, ttl=ANTHROPIC_LONG_TTL)
        ).cause
        == "ttl_expired"
    )


def test_within_the_ttl_a_drop_below_half_means_the_prefix_changed() -> None:
    assert classify_turn(PREV, turn(cached=24_999)) == CacheMiss("prefix_changed", 23_001)


def test_exactly_half_of_the_previous_input_cached_is_still_a_hit() -> None:
    assert classify_turn(PREV, turn(cached=25_000)) == CacheMiss(None, 0)
    odd = PreviousTurn(account_id=1, ended_at=T0, input_tokens=5, warm_tokens=5)
    assert classify_turn(odd, turn(total=6, cached=2)).cause == "prefix_changed"  # 2 < 2.5
    assert classify_turn(odd, turn(total=6, cached=3)).cause is None  # 3 ≥ 2.5


def test_a_switch_is_named_before_an_expiry() -> None:
    # The spec's ttl_expired means "same account"; another account's cache was never warm.
    assert classify_turn(PREV, turn(account=2, after=3 * DEFAULT_TTL, cached=0)).cause == (
        "account_switch"
    )


def test_a_shorter_turn_rereads_at_most_its_own_input() -> None:
    # A compacted conversation: 6k input, none cached, after 48k were warm.
    assert classify_turn(PREV, turn(account=2, total=6_000, cached=0)) == CacheMiss(
        "account_switch", 6_000
    )


def test_a_previous_turn_that_left_nothing_warm_cannot_cause_a_miss() -> None:
    cold = PreviousTurn(account_id=1, ended_at=T0, input_tokens=50_000, warm_tokens=0)
    assert classify_turn(cold, turn(account=2, cached=0)) == CacheMiss(None, 0)


@pytest.mark.parametrize(
    ("body", "ttl"),
    [
        ({}, DEFAULT_TTL),
        (
            {"system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]},
            DEFAULT_TTL,
        ),
        (
            {
                "system": [
                    {
                        "type": "text",
                        "text": "s",
                        "cache_control": {"type": "ephemeral", "ttl": "1h"},
                    }
                ]
            },
            ANTHROPIC_LONG_TTL,
        ),
        (
            {"tools": [{"name": "t", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]},
            ANTHROPIC_LONG_TTL,
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "text",
                                "text": "hi",
                                "cache_control": {"type": "ephemeral", "ttl": "1h"},
                            }
                        ],
                    }
                ]
            },
            ANTHROPIC_LONG_TTL,
        ),
        ({"cache_control": {"type": "ephemeral", "ttl": "1h"}}, ANTHROPIC_LONG_TTL),
        ({"messages": [{"role": "user", "content": "plain"}], "system": "plain"}, DEFAULT_TTL),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "text",
                                "text": "hi",
                                "cache_control": {"type": "ephemeral", "ttl": "5m"},
                            }
                        ],
                    }
                ]
            },
            DEFAULT_TTL,
        ),
    ],
)
def test_anthropic_ttl_is_five_minutes_or_one_hour_when_asked(body: dict, ttl: float) -> None:
    assert cache_ttl("anthropic", body) == ttl
    # The same answer when the proxy also hands over the body as the client sent it, written
    # out plainly or with every character escaped (a JSON encoder may write "1h" as
    # "\u0031\u0068"): the raw text only lets a body without "1h" skip the walk.
    assert cache_ttl("anthropic", body, json.dumps(body).encode()) == ttl
    escaped = json.dumps(body).replace('"1h"', '"\\u0031\\u0068"')
    assert json.loads(escaped) == body
    assert cache_ttl("anthropic", body, escaped.encode()) == ttl


def test_a_body_without_1h_in_its_text_is_not_walked() -> None:
    """The raw text is what decides when it has no "1h" anywhere: a long conversation is not
    walked block by block on every request."""
    asks = {"cache_control": {"type": "ephemeral", "ttl": "1h"}}
    assert cache_ttl("anthropic", asks, b'{"cache_control": {"ttl": "5m"}}') == DEFAULT_TTL


def test_codex_and_antigravity_ttls() -> None:
    assert cache_ttl("codex", {}) == DEFAULT_TTL == 300.0
    assert cache_ttl("codex", {"prompt_cache_retention": "24h"}) == OPENAI_LONG_TTL
    assert cache_ttl("codex", {"prompt_cache_retention": "in_memory"}) == DEFAULT_TTL
    assert cache_ttl("antigravity", {}) == DEFAULT_TTL
    # A 1h breakpoint means nothing to a provider that does not read cache_control.
    assert cache_ttl("codex", {"cache_control": {"ttl": "1h"}}) == DEFAULT_TTL


def test_warm_tokens_are_reads_plus_writes_for_anthropic_and_the_whole_input_elsewhere() -> None:
    assert warm_tokens("anthropic", 50_000, 40_000, 8_000) == 48_000
    assert warm_tokens("anthropic", 50_000, 0, None) == 0
    assert warm_tokens("codex", 50_000, 40_000) == 50_000
    assert warm_tokens("antigravity", 7_000, 0) == 7_000


# --- the per-conversation memory the rule reads from (core.turn_memory) ----------------------


def test_the_memory_classifies_against_the_last_turn_and_saves_each_turn() -> None:
    saved: list[tuple[int, str, dict[str, PreviousTurn]]] = []
    memory = TurnMemory(save=lambda g, d, turns: saved.append((g, d, turns)))
    first = memory.settle(
        1, "d", turn(cached=0), ended_at=T0 + 41, warm_tokens=52_000, model="opus"
    )
    assert first.cause == "first_turn"
    second = Turn(account_id=2, started_at=T0 + 80, input_tokens=53_000, cached_tokens=0)
    assert memory.settle(
        1, "d", second, ended_at=T0 + 81, warm_tokens=53_000, model="opus"
    ) == CacheMiss("account_switch", 52_000)
    assert saved[-1] == (1, "d", {"opus": PreviousTurn(2, T0 + 81, 53_000, 53_000)})
    assert memory.previous(2, "d", "opus") is None  # another group's conversation
    assert memory.previous(1, "d", "haiku") is None


def test_another_model_in_the_same_conversation_neither_blames_nor_hides_a_miss() -> None:
    memory = TurnMemory()
    memory.settle(1, "d", turn(cached=0), ended_at=T0 + 41, warm_tokens=52_000, model="opus")
    # A small Haiku request of the same session: its own first turn, not a changed prefix.
    haiku = Turn(account_id=1, started_at=T0 + 50, input_tokens=2_000, cached_tokens=0)
    assert (
        memory.settle(1, "d", haiku, ended_at=T0 + 51, warm_tokens=0, model="haiku").cause
        == "first_turn"
    )
    assert memory.previous(1, "d") == PreviousTurn(1, T0 + 51, 2_000, 0)  # latest on any model
    # The main model's next miss is measured against the main model's last turn.
    moved = Turn(account_id=2, started_at=T0 + 60, input_tokens=53_000, cached_tokens=0)
    assert memory.settle(
        1, "d", moved, ended_at=T0 + 61, warm_tokens=53_000, model="opus"
    ) == CacheMiss("account_switch", 52_000)


def test_after_a_restart_the_loaded_facts_explain_the_next_turn() -> None:
    memory = TurnMemory()
    memory.load({(1, "d"): {"opus": PreviousTurn(1, T0, 50_000, 48_000)}})
    assert memory.settle(
        1, "d", turn(account=2, cached=0), ended_at=T0 + 41, warm_tokens=52_000, model="opus"
    ) == CacheMiss("account_switch", 48_000)


def test_the_memory_forgets_the_oldest_conversation_and_model_beyond_its_bounds() -> None:
    memory = TurnMemory(capacity=2)
    memory.load(
        {
            (1, "old"): {"m": PreviousTurn(1, T0 - 100, 10, 10)},
            (1, "mid"): {"m": PreviousTurn(1, T0 - 50, 10, 10)},
            (1, "new"): {"m": PreviousTurn(1, T0, 10, 10)},
        }
    )
    assert memory.previous(1, "old", "m") is None and len(memory) == 2
    memory.settle(1, "newest", turn(), ended_at=T0 + 41, warm_tokens=10, model="m")
    assert memory.previous(1, "mid", "m") is None and memory.previous(1, "new", "m") is not None
    for n in range(MODELS_PER_CONVERSATION + 1):
        memory.settle(1, "new", turn(), ended_at=T0 + 50 + n, warm_tokens=10, model=f"model-{n}")
    assert memory.previous(1, "new", "m") is None  # the least recently used model went
    assert memory.previous(1, "new", f"model-{MODELS_PER_CONVERSATION}") is not None


def test_conversations_still_going_are_counted_per_account_by_their_latest_turn() -> None:
    memory = TurnMemory()
    now = T0 + 1_000

    def end(digest: str, account: int, ago: float, model: str = "m") -> None:
        memory.settle(
            1,
            digest,
            Turn(account, now - ago - 1, 100, 0),
            ended_at=now - ago,
            warm_tokens=100,
            model=model,
        )

    end("old", 3, 500)  # long settled: not going
    end("edge", 2, 60)  # exactly the bound ago: no longer going
    end("two-models", 1, 400, model="haiku")
    end("two-models", 1, 5, model="opus")  # its latest turn is recent: going
    end("fresh", 1, 10)
    end("other", 2, 59)
    assert memory.active(now, 60) == {1: 2, 2: 1}
    assert memory.active(now, 1) == {}
