"""The words every surface uses for a cache miss (R-CF-2, R-CF-3)."""

from __future__ import annotations

from sublane_desktop.core.miss_words import (
    SWITCH_WARN_TOKENS,
    compact_tokens,
    explain,
    idle_words,
    reread_today,
    reread_today_by_account,
    summary_lines,
    switch_warning,
    switched_today,
)


def test_the_spec_sentence_for_an_account_switch() -> None:
    record = {
        "cache_miss": "account_switch",
        "reread_tokens": 48_213,
        "idle_seconds": 40.2,
        "account_name": "lab-pro",
        "previous_account_name": "work-max",
    }
    assert explain(record) == (
        "moved from work-max to lab-pro 40 s after the previous turn: 48,213 tokens read again"
    )


def test_personal_views_without_account_names_still_explain() -> None:
    record = {
        "cache_miss": "account_switch",
        "reread_tokens": 1_500,
        "idle_seconds": 5,
        "account_name": "",
        "previous_account_name": "",
    }
    assert explain(record) == (
        "moved to another account 5 s after the previous turn: 1,500 tokens read again"
    )


def test_each_cause_has_its_own_words_and_a_hit_has_none() -> None:
    base = {"reread_tokens": 30_000, "idle_seconds": 420, "account_name": "work-max"}
    assert explain({**base, "cache_miss": "ttl_expired"}) == (
        "the prompt cache expired: 7 min after the previous turn on work-max, longer than it"
        " lives: 30,000 tokens read again"
    )
    assert explain({**base, "cache_miss": "prefix_changed", "idle_seconds": 12}) == (
        "the client changed the start of its prompt 12 s after the previous turn on work-max:"
        " 30,000 tokens read again"
    )
    assert explain({**base, "cache_miss": "first_turn"}).startswith("first turn")
    assert explain({**base, "cache_miss": None}) == ""
    assert explain({"cache_miss": "bogus"}) == ""


def test_compact_numbers_and_durations() -> None:
    assert [compact_tokens(n) for n in (0, 950, 1_000, 48_213, 310_400, 999_600, 1_250_000)] == [
        "0",
        "950",
        "1k",
        "48k",
        "310k",
        "1M",
        "1.2M",
    ]
    assert [idle_words(s) for s in (0, 40.4, 89, 420, 3600, 3900)] == [
        "0 s",
        "40 s",
        "89 s",
        "7 min",
        "1 h",
        "1 h 5 min",
    ]


def test_the_tray_warns_only_above_the_threshold() -> None:
    assert switch_warning(SWITCH_WARN_TOKENS) is None
    assert switch_warning(0) is None
    assert switch_warning(310_000) == "switching re-read 310k tokens today"


def test_the_misses_summary_table() -> None:
    summary = {
        "input_tokens": 1_000_000,
        "reread_tokens": 60_000,
        "causes": [
            {"cause": "first_turn", "count": 3, "reread_tokens": 0, "share": 0.0},
            {"cause": "account_switch", "count": 1, "reread_tokens": 48_000, "share": 0.048},
            {"cause": "ttl_expired", "count": 1, "reread_tokens": 12_000, "share": 0.012},
            {"cause": "prefix_changed", "count": 0, "reread_tokens": 0, "share": 0.0},
        ],
    }
    lines = summary_lines(summary)
    assert lines[2].split() == ["account", "switch", "1", "48,000", "4.8%"]
    assert lines[5].split() == ["all", "misses", "5", "60,000", "6.0%"]
    assert lines[-1] == "of 1,000,000 input tokens in the window"


def test_token_counts_in_a_few_characters_at_every_edge() -> None:
    assert [
        compact_tokens(n)
        for n in (999, 1_000, 999_499, 999_500, 1_000_000, 1_000_001, 1_050_000, 2_000_000)
    ] == ["999", "1k", "999k", "1M", "1M", "1M", "1.1M", "2M"]
    assert compact_tokens(10_000_000) == "10M"  # a round ten keeps its zero


SUMMARY = {
    "causes": [
        {"cause": "first_turn", "count": 2, "reread_tokens": 0},
        {"cause": "account_switch", "count": 3, "reread_tokens": 48_213},
        {"cause": "ttl_expired", "count": 1, "reread_tokens": 1_250_000},
        {"cause": "prefix_changed", "count": 0, "reread_tokens": 0},
    ],
    "accounts": [
        {"account_name": "work", "cause": "account_switch", "count": 3, "reread_tokens": 48_213},
        {"account_name": "lab", "cause": "ttl_expired", "count": 1, "reread_tokens": 1_250_000},
        {"account_name": "idle", "cause": "first_turn", "count": 2, "reread_tokens": 0},
        {"account_name": "new", "cause": "future_cause", "count": 1, "reread_tokens": 5},
    ],
}


def test_the_accounts_window_line_and_its_tooltip() -> None:
    assert reread_today(SUMMARY) == (
        "Prompt tokens read again, not from cache, today: 48k after switching accounts"
        " · 1.2M after the cache expired"
    )
    assert reread_today(None) == "" and reread_today({}) == ""
    assert reread_today({"causes": SUMMARY["causes"][:1]}) == (
        "Every repeated prompt was read from cache today"
    )
    assert reread_today_by_account(SUMMARY) == (
        "lab: 1.2M after the cache expired (1 request)\n"
        "work: 48k after switching accounts (3 requests)\n"
        "new: 5 future_cause (1 request)"
    )
    assert reread_today_by_account(None) == ""


def test_switch_tokens_today() -> None:
    assert switched_today(SUMMARY) == 48_213
    assert switched_today({"causes": [{"cause": "account_switch"}]}) == 0
    assert switched_today(None) == 0 and switched_today({"causes": SUMMARY["causes"][:1]}) == 0


def test_the_cli_table_of_misses_in_full() -> None:
    summary = {
        "input_tokens": 200_000,
        "reread_tokens": 50_000,
        "causes": [
            {"cause": "account_switch", "count": 3, "reread_tokens": 48_000, "share": 0.24},
            {"cause": "future_cause", "count": 1, "reread_tokens": 2_000, "share": 0.01},
        ],
    }
    assert summary_lines(summary) == [
        "CAUSE             COUNT      RE-READ  SHARE OF INPUT",
        "account switch        3       48,000           24.0%",
        "future_cause          1        2,000            1.0%",
        "all misses            4       50,000           25.0%",
        "of 200,000 input tokens in the window",
    ]
    assert summary_lines({}) == [
        "CAUSE             COUNT      RE-READ  SHARE OF INPUT",
        "all misses            0            0            0.0%",
        "of 0 input tokens in the window",
    ]
