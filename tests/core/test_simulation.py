"""The simulator (SPEC §12) on hand-sized traces: exact numbers, conservation, determinism."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sublane_desktop.core import cache_miss
from sublane_desktop.core.policies.cost_aware import warm_chance
from sublane_desktop.core.simulation import (
    PLANS,
    Simulation,
    Trace,
    Turn,
    build_accounts,
    generate,
    run_trace,
)
from sublane_desktop.core.simulation.metrics import JSON_FIELDS, is_cache_break
from sublane_desktop.core.simulation.traces import EPOCH, from_records
from sublane_desktop.core.simulation.upstream import WEEK, SimAccount, Window

H = 3600.0
T0 = EPOCH


def account(name: str, five_cap: float, week_cap: float = 1e6) -> SimAccount:
    return SimAccount(
        name,
        {
            "five_hour": Window("five_hour", five_cap, 5 * H, T0 + H),
            "seven_day": Window("seven_day", week_cap, WEEK, T0 + 3 * 86400),
            "fable": Window("fable", 100_000, WEEK, T0 + 3 * 86400),
        },
    )


def turn(
    at: float,
    stream: str,
    prefix: int,
    new: int,
    out: int,
    *,
    keyed: bool = True,
    fable: bool = False,
) -> Turn:
    return Turn(T0 + at, stream, keyed, fable, prefix, new, out, 10.0)


def test_two_accounts_two_hours_by_hand():
    """A (5h: 10k units) and B (5h: 50k), both resetting at 1 h; round robin placement.

    c1 fills A on its first turn (10k); its second turn meets a full window: 429 with
    retry-after 300 (A cools), then a poll shows A exhausted: two pool refusals (retry after
    120 s, then after 1 s once the reading is stale), then a probe: 429 again, and the client
    gives the turn up after four tries. c2 on B hits its cache (9k of 10.2k prefix cached:
    2.2k fresh + 0.9k cached + 1k for output = 4.1k). At 1 h B resets with 35.9k unused while
    traffic had been turned away: wasted. c3 goes to A again (its window reset): 6k.
    """
    trace = Trace(
        "hand",
        1,
        T0,
        T0 + 2 * H,
        (
            turn(0, "c1", 8_000, 1_000, 200),
            turn(10, "c2", 8_000, 1_000, 200),
            turn(100, "c1", 9_200, 1_000, 200),
            turn(200, "c2", 10_200, 1_000, 200),
            turn(4000, "c3", 6_000, 0, 0),
        ),
    )
    result = Simulation(trace, "round_robin", [account("A", 10_000), account("B", 50_000)]).run()
    assert (result.requests, result.served, result.given_up) == (5, 4, 1)
    assert (result.http_429, result.refused) == (2, 2)
    assert result.refusals == {"quota_exhausted": 2}
    assert (result.cache_breaks, result.reread_tokens) == (0, 0)
    assert result.ledger["A"]["five_hour"] == {
        "offered": 20_000,
        "used": 16_000,
        "wasted": 0,
        "left": 4_000,
    }
    assert result.ledger["B"]["five_hour"] == {
        "offered": 100_000,
        "used": 14_100,
        "wasted": 35_900,
        "left": 50_000,
    }
    assert result.ledger["A"]["seven_day"]["used"] == 16_000
    assert result.ledger["B"]["seven_day"]["used"] == 14_100
    assert result.quota_used == pytest.approx(30_100 / 2e6, abs=1e-4)
    assert result.quota_wasted == 0.0  # the week windows did not reset in these two hours


def test_a_move_within_the_ttl_is_a_cache_break_that_rereads_the_previous_prompt():
    """c1 fills 95% of A's 5h window, then the rest; the headers of its second turn show A
    over its ceiling. cost_aware moves the third turn (10 s after the second ended) to B: one
    cache break, re-reading the 8.8k tokens the second turn had cached. round_robin keeps it
    on A, which is full: a 429 and no break."""
    trace = Trace(
        "hand",
        1,
        T0,
        T0 + H,
        (
            turn(0, "c1", 8_000, 500, 200),
            turn(20, "c1", 8_700, 100, 0),
            turn(40, "c1", 8_800, 100, 0),
        ),
    )
    sim = Simulation(trace, "cost_aware", [account("A", 10_000), account("B", 50_000)])
    moved = sim.run()
    # The turns went where the relay puts them: the memory cost_aware asks, keyed by model.
    last = sim.pool.scheduler.conversations.previous(1, "c1", "claude-sonnet-4-5")
    assert last is not None and (last.account_id, last.warm_tokens) == (2, 8_900)
    assert (moved.cache_breaks, moved.reread_tokens, moved.http_429) == (1, 8_800, 0)
    assert moved.ledger["B"]["five_hour"]["used"] == 8_900
    stayed = Simulation(trace, "round_robin", [account("A", 10_000), account("B", 50_000)]).run()
    assert (stayed.cache_breaks, stayed.reread_tokens) == (0, 0)
    assert stayed.http_429 >= 1


@pytest.mark.parametrize("name", ["solo", "team", "bursty", "fable-heavy"])
def test_conservation_used_plus_wasted_plus_left_is_capacity(name):
    trace = generate(name, seed=3, days=1.5)
    plan = PLANS[name]
    for result in run_trace(trace, ["score", "cost_aware"], seed=3):
        fresh = build_accounts(plan, trace.start, 3)
        for sim in fresh:
            for window in sim.windows.values():
                window.roll(trace.end)
        for sim in fresh:
            for window_name, window in sim.windows.items():
                row = result.ledger[sim.name][window_name]
                assert row["offered"] == pytest.approx(window.offered)
                assert row["used"] + row["wasted"] + row["left"] == pytest.approx(row["offered"])
                assert min(row["used"], row["wasted"], row["left"]) >= 0
        assert result.quota_used + result.quota_wasted <= 1.0


def test_same_seed_same_json_other_seed_other_traffic():
    def run(seed: int) -> str:
        return json.dumps(
            [
                r.to_json()
                for r in run_trace(
                    generate("bursty", seed, days=1),
                    ["round_robin", "score", "cost_aware"],
                    seed=seed,
                )
            ]
        )

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_json_has_exactly_the_spec_fields_and_served():
    """R-SIM-1's fields, and `served` (R-OBS-4): the turns a person got answered."""
    result = run_trace(generate("solo", 1, days=0.5), ["score"])[0]
    assert result.to_json()["served"] == result.served > 0
    assert (
        list(result.to_json())
        == list(JSON_FIELDS)
        == [
            "trace",
            "policy",
            "seed",
            "requests",
            "served",
            "quota_used",
            "quota_wasted",
            "http_429",
            "refused",
            "cache_breaks",
            "reread_tokens",
        ]
    )


def test_traces_have_their_shape():
    team = generate("team", 1, days=7)
    assert len(team.turns) > 10_000
    hours = {int(((t.at - T0) % 86400) // H) for t in team.turns if t.keyed}
    assert hours >= set(range(8, 23))  # two time zones cover the European and American day
    assert not any(t.fable for t in team.turns)
    heavy = generate("fable-heavy", 1, days=2)
    assert sum(t.fable for t in heavy.turns) > len(heavy.turns) / 3
    bursty = generate("bursty", 1, days=2)
    assert any(not t.keyed for t in bursty.turns)
    with pytest.raises(ValueError, match="unknown trace"):
        generate("nightly", 1)


def test_from_records_groups_a_keys_requests_into_conversations():
    rows = [
        {
            "id": 1,
            "started_at": 1000.0,
            "key_id": 7,
            "model": "claude-fable-5",
            "duration_ms": 4000,
            "input_tokens": 12_000,
            "output_tokens": 300,
        },
        {
            "id": 2,
            "started_at": 1030.0,
            "key_id": 7,
            "model": "claude-fable-5",
            "duration_ms": 4000,
            "input_tokens": 13_500,
            "output_tokens": 100,
        },
        {
            "id": 3,
            "started_at": 1040.0,
            "key_id": 8,
            "model": "claude-sonnet-4-5",
            "duration_ms": None,
            "input_tokens": 5_000,
            "output_tokens": None,
        },
        {
            "id": 4,
            "started_at": 1030.0 + 3600,
            "key_id": 7,
            "model": "claude-sonnet-4-5",
            "duration_ms": 1000,
            "input_tokens": 9_000,
            "output_tokens": 50,
        },
    ]
    trace = from_records(rows)
    streams = [t.stream for t in trace.turns]
    assert streams[0] == streams[1] != streams[2] != streams[3] != streams[0]
    second = trace.turns[1]
    assert (second.prefix_tokens, second.new_tokens, second.fable) == (12_300 - 0, 1_200, True)
    assert trace.turns[3].prefix_tokens == 0  # an hour of silence: a new conversation
    with pytest.raises(ValueError, match="no request records"):
        from_records([])


def test_accounts_option_sizes_the_pool_and_more_accounts_refuse_less():
    trace = generate("team", 1, days=2)
    [small] = run_trace(trace, ["score"], accounts=1)
    [large] = run_trace(trace, ["score"], accounts=6)
    assert list(small.ledger) == ["acct-a"]
    assert list(large.ledger) == [f"acct-{c}" for c in "abcdef"]
    assert large.served > small.served and large.refused < small.refused


def test_the_simulator_is_pure_core_even_while_running():
    """R-ARCH-1 for §12: a run loads no Qt, aiohttp or peewee (no GUI, network client, DB)."""
    import subprocess
    import sys

    code = (
        "import sys; from sublane_desktop.core.simulation import run_builtin; "
        "run_builtin('solo', ['cost_aware'], days=0.2); print('\\n'.join(sys.modules))"
    )
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    for framework in ("PySide6", "aiohttp", "peewee", "qasync", "sqlite3"):
        assert framework not in loaded, framework


def record(at: float, tokens: int | None, *, key: int = 7, out: int = 300, **extra) -> dict:
    return {
        "id": int(at),
        "started_at": at,
        "key_id": key,
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "operation": "messages",
        "duration_ms": 4000,
        "input_tokens": tokens,
        "output_tokens": None if tokens is None else out,
        "outcome": "success" if tokens else "rejected",
        **extra,
    }


def test_from_records_replays_a_rejected_attempt_as_a_retry_of_its_turn():
    """A 429 or a pool refusal is recorded without tokens. It is an attempt of the turn the
    client then retried, not a 0-token turn: the retried turn keeps its 20k-token prefix and
    arrives when its first attempt did; the simulator's client does the retrying."""
    trace = from_records(
        [
            record(1000.0, 20_000),
            record(1030.0, None, outcome="error", upstream_status=429),
            # refused by the pool: never a turn, whatever counts the record holds
            record(1032.0, 20_500, outcome="rejected", error_code="account_busy"),
            record(1040.0, 21_000),  # the retry that went through
            record(1060.0, 21_500),
        ]
    )
    assert [(t.at, t.prefix_tokens, t.new_tokens) for t in trace.turns] == [
        (1000.0, 0, 20_000),
        (1030.0, 20_300, 700),
        (1060.0, 21_300, 200),
    ]
    assert len({t.stream for t in trace.turns}) == 1


def test_from_records_replays_a_turn_given_up_as_resending_its_prefix():
    trace = from_records(
        [record(1000.0, 20_000), record(1030.0, None), record(1035.0, None), record(9000.0, 5_000)]
    )
    assert [(t.at, t.prefix_tokens, t.new_tokens) for t in trace.turns] == [
        (1000.0, 0, 20_000),
        (1030.0, 20_300, 0),  # the person gave up; the client had sent the whole prefix
        (9000.0, 0, 5_000),  # silent for over RECORD_GAP: a new conversation
    ]


def test_from_records_keeps_each_records_provider():
    """Codex and Gemini records are replayed as requests to those providers (served by a
    Codex and an Antigravity account the replay adds), never as Claude turns; a key's turns
    to another provider are another conversation; count_tokens is no turn."""
    rows = [
        record(1000.0, 20_000),
        record(1010.0, 30_000, provider="codex", model="gpt-5"),
        record(1020.0, 8_000, provider="antigravity", model="gemini-2.5-pro"),
        record(1025.0, 500, operation="count_tokens"),
        record(1030.0, 21_000),
        record(1040.0, 31_000, provider="codex", model="gpt-5"),
        record(1050.0, 6_000, key=8, provider="antigravity", model="claude-sonnet-4-5"),
    ]
    trace = from_records(rows)
    assert [t.model for t in trace.turns] == [
        "claude-sonnet-4-5",
        "gpt-5",
        "gemini-2.5-pro",
        "claude-sonnet-4-5",
        "gpt-5",
        "antigravity/claude-sonnet-4-5",  # Antigravity served it: asked of Antigravity again
    ]
    streams = [t.stream for t in trace.turns]
    assert streams[0] == streams[3] != streams[1] == streams[4] != streams[2]
    assert trace.turns[4].prefix_tokens == 30_300  # the GPT conversation's own prefix
    [result] = run_trace(trace, ["score"])
    assert result.served == 6 and result.spilled == 0
    ledger = result.ledger
    # 30k fresh + 300 out x5; then 1k fresh, 30k from cache at a tenth, 300 out x5
    assert ledger["codex-a"]["seven_day"]["used"] == pytest.approx(31_500 + 5_500)
    assert ledger["ag-a"]["gemini_pro"]["used"] == 8_000 + 1_500
    assert ledger["ag-a"]["claude"]["used"] == 6_000 + 1_500
    claude_used = sum(rows["seven_day"]["used"] for name, rows in ledger.items() if "acct" in name)
    assert claude_used == pytest.approx(21_500 + 4_500)


def antigravity(name: str, claude_cap: float) -> SimAccount:
    return SimAccount(
        name,
        {
            family: Window(family, claude_cap if family == "claude" else 1e6, 5 * H, T0 + 2 * H)
            for family in ("claude", "gemini_pro", "gemini_flash")
        },
        provider="antigravity",
        models=("claude-sonnet-4-5", "gemini-2.5-pro", "gemini-2.5-flash"),
    )


def test_claude_turns_spill_to_antigravity_only_for_models_it_serves():
    """R-AG-3 / R-WF-6 in the account model: once the one Anthropic account's 5h window is
    spent (c1's second turn meets a 429 and the account cools), a new Sonnet conversation is
    served by the Antigravity account (from its Claude family quota); a Haiku one (not on
    Antigravity's list) and a Fable one (Anthropic's own) are not."""
    trace = Trace(
        "hand",
        1,
        T0,
        T0 + H,
        (
            turn(0, "c1", 9_000, 500, 100),  # fills A's 5h window
            turn(30, "c1", 9_600, 100, 0),  # 429: A cools
            replace(turn(60, "c2", 5_000, 0, 0), model="claude-sonnet-4-5"),
            replace(turn(70, "c3", 5_000, 0, 0), model="claude-haiku-4-5"),
            turn(80, "c4", 5_000, 0, 0, fable=True),
        ),
    )
    result = Simulation(trace, "score", [account("A", 10_000), antigravity("G", 50_000)]).run()
    assert result.served == 2 and result.spilled == 1
    assert result.ledger["G"]["claude"]["used"] == 5_000
    assert result.refusals.get("quota_exhausted", 0) + result.http_429 > 0


def test_an_antigravity_family_spent_rests_only_that_family():
    """Google's QUOTA_EXHAUSTED for the Claude family: the account keeps serving Gemini."""
    trace = Trace(
        "hand",
        1,
        T0,
        T0 + H,
        (
            replace(turn(0, "g1", 4_000, 0, 0), model="gemini-2.5-pro"),
            replace(turn(10, "c1", 4_000, 0, 0), model="claude-sonnet-4-5"),
            replace(turn(20, "c2", 4_000, 0, 0), model="claude-sonnet-4-5"),
            replace(turn(30, "g2", 4_000, 0, 0), model="gemini-2.5-pro"),
        ),
    )
    sim = Simulation(trace, "score", [antigravity("G", 4_000)])
    result = sim.run()
    assert result.served == 3  # g1, c1, g2; c2 meets a spent Claude family
    assert result.http_429 == 1
    state = sim.pool.accounts[1]
    assert state.cooldown_until is None  # no account-wide cooldown
    assert "claude" in state.family_cooldowns


@pytest.mark.parametrize(("gap", "cached"), [(299.0, 10_000), (301.0, 0)])
def test_the_prompt_cache_lives_five_minutes_after_the_answer(gap, cached):
    """The cache TTL is 5 minutes (R-SIM-3, R-CF-1): a turn 299 s after the previous answer
    ended reads the prefix from cache (a tenth of the price), one at 301 s pays it in full,
    and moving a conversation counts as a cache break only within those 5 minutes."""
    trace = Trace(
        "hand",
        1,
        T0,
        T0 + H,
        (turn(0, "c1", 10_000, 0, 0), turn(10 + gap, "c1", 10_000, 0, 0)),
    )
    result = Simulation(trace, "score", [account("A", 1e6)]).run()
    second = 10_000 - cached + 0.1 * cached
    assert result.ledger["A"]["five_hour"]["used"] == pytest.approx(10_000 + second)
    previous = cache_miss.PreviousTurn(1, T0 + 10, 10_000, 10_000)
    moved = cache_miss.Turn(2, T0 + 10 + gap, 10_000, 0)
    miss = cache_miss.classify_turn(previous, moved)
    assert is_cache_break(previous, moved, miss) is bool(cached)
    # and cost_aware prices a move by the same five minutes
    assert warm_chance(previous, 1, T0 + 10 + gap) == (1.0 if cached else 0.0)
