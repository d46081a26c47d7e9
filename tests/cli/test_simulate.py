"""`sublane simulate` through the real command (SPEC §12, §2): table, JSON, plot, records."""

from __future__ import annotations

import time

from sublane_desktop.core.records import RequestRecord
from sublane_desktop.store import records as store_records
from sublane_desktop.store.connection import Store

FIELDS = [
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


def test_table_has_one_row_per_policy(sublane):
    out = sublane.ok(
        "simulate",
        "--trace",
        "solo",
        "--days",
        "1",
        "--policy",
        "round_robin",
        "score",
        "cost_aware",
    ).stdout.splitlines()
    assert out[0].split()[:4] == ["trace", "policy", "requests", "served"]
    assert [line.split()[1] for line in out[1:4]] == ["round_robin", "score", "cost_aware"]
    assert all(line.split()[0] == "solo" for line in out[1:4])
    assert out[4].startswith("best: ")


def test_json_is_the_spec_array_and_the_same_seed_gives_the_same_numbers(sublane):
    args = (
        "simulate",
        "--trace",
        "bursty",
        "--days",
        "0.5",
        "--seed",
        "4",
        "--json",
        "--policy",
        "score",
        "cost_aware",
    )
    first = sublane.json(*args)
    assert [list(row) for row in first] == [FIELDS, FIELDS]
    assert [(r["trace"], r["policy"], r["seed"]) for r in first] == [
        ("bursty", "score", 4),
        ("bursty", "cost_aware", 4),
    ]
    for row in first:
        assert 0 <= row["quota_used"] <= 1 and 0 <= row["quota_wasted"] <= 1
        assert all(isinstance(row[k], int) for k in FIELDS[3:] if "quota" not in k)
    assert sublane.json(*args) == first


def test_plot_writes_a_png(sublane, tmp_path):
    target = tmp_path / "yield.png"
    result = sublane.ok(
        "simulate", "--trace", "team", "--days", "1", "--policy", "score", "--plot", str(target)
    )
    assert f"plot: {target}" in result.stdout
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000


def test_bad_input_is_one_line_and_exit_1(sublane, tmp_path):
    for args, says in [
        (("--policy", "fastest"), "--policy: unknown fastest"),
        (("--accounts", "0"), "--accounts must be from 1 to 26"),
        (("--days", "-1"), "--days must be"),
        (("--plot", str(tmp_path / "x.jpg")), "--plot needs a .png"),
        (("--plot", str(tmp_path / "missing" / "x.png"), "--days", "0.2"), "cannot write"),
    ]:
        result = sublane.run("simulate", *args)
        assert result.returncode == 1, (args, result.stderr)
        assert result.stderr.count("\n") == 1 and says in result.stderr, result.stderr
    assert not (tmp_path / "x.jpg").exists()


def test_from_records_replays_the_stored_history(sublane):
    sublane.ok("key", "list")  # creates the data dir and database
    store = Store(sublane.data_dir / "sublane.db")
    now = time.time() - 3 * 3600
    rows = []
    for i in range(40):  # two keys, each a conversation of turns ~20 s apart
        rows.append(
            RequestRecord(
                request_id=f"req_{i:024x}",
                user_id=1,
                key_id=1 + i % 2,
                group_id=1,
                provider="anthropic",
                model="claude-fable-5" if i % 2 else "claude-sonnet-4-5",
                protocol="anthropic",
                operation="messages",
                started_at=now + 10 * i,
                account_id=None,
                duration_ms=3000,
                outcome="success",
                upstream_status=200,
                input_tokens=20_000 + 500 * i,
                output_tokens=300,
                cached_tokens=15_000,
            )
        )
    with store.db.atomic():
        store_records.insert_records(rows, time.time())
    store.close()
    [row] = sublane.json("simulate", "--from-records", "--policy", "score", "--json")
    assert row["trace"] == "records" and row["requests"] == 40
    assert row["quota_used"] > 0


def test_from_records_without_records_says_so(sublane):
    result = sublane.run("simulate", "--from-records")
    assert result.returncode == 1
    assert "no request records" in result.stderr


def test_explain_prints_the_scripted_day_decision_by_decision(sublane):
    """The scripted day of the retired `python -m sublane_desktop.simulate`, now a flag."""
    out = sublane.ok("simulate", "--explain").stdout.splitlines()
    assert out[0] == "time   | event / lane  | account   | decision"
    assert "11:00  | ** switch team" in out
    assert "11:00  | main          | team      score      -  manual pin" in out
    assert out[-2].startswith("24:00  | fable") and out[-1].startswith("       | gauges")
    two = sublane.ok("simulate", "--explain", "--days", "0.25", "--policy", "score", "round_robin")
    assert two.stdout.splitlines()[0] == "== score" and "== round_robin" in two.stdout
    bad = sublane.run("simulate", "--explain", "--json")
    assert bad.returncode == 1 and "--explain prints a scripted day" in bad.stderr
