"""The simulator (SPEC §12) on hand-sized traces: exact numbers, conservation, determinism."""

from __future__ import annotations

import json

import pytest

from sublane_desktop.core.simulation import (
    PLANS,
    Simulation,
    Trace,
    Turn,
    build_accounts,
    generate,
    run_trace,
)
from sublane_desktop.core.simulation.metrics import JSON_FIELDS
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


def test_json_has_exactly_the_spec_fields():
    result = run_trace(generate("solo", 1, days=0.5), ["score"])[0]
    assert (
        list(result.to_json())
        == list(JSON_FIELDS)
        == [
            "trace",
            "policy",
            "seed",
            "requests",
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
            "input_tokens": None,
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
