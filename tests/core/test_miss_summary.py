"""The cache-miss summary of R-CF-2 as the history API shows it: counts, re-read tokens and each
cause's share of all input, with the per-account split for administrators only."""

from __future__ import annotations

from sublane_desktop.core.cache_miss import CAUSES
from sublane_desktop.core.history import present_misses


def group(cause, account_id, count, reread, name="work"):
    return {
        "cache_miss": cause,
        "account_id": account_id,
        "account_name": name,
        "count": count,
        "reread_tokens": reread,
    }


def test_misses_add_up_by_cause_with_shares_of_all_input():
    first, switch = CAUSES[0], CAUSES[1]
    rows = [
        group(first, 1, 2, 300),
        group(first, 2, 1, 100, name=None),
        group(switch, 1, 3, 600),
        group("not-a-cause", 1, 9, 9),
        group(switch, None, 1, None),
    ]
    out = present_misses(rows, 4000, since=10.0, until=20.0, personal=False)
    assert out["from"] == 10.0 and out["until"] == 20.0 and out["input_tokens"] == 4000
    causes = {c["cause"]: c for c in out["causes"]}
    assert [c["cause"] for c in out["causes"]] == list(CAUSES)  # every cause, in order
    assert causes[first] == {"cause": first, "count": 3, "reread_tokens": 400, "share": 0.1}
    assert causes[switch] == {"cause": switch, "count": 4, "reread_tokens": 600, "share": 0.15}
    assert causes[CAUSES[2]] == {"cause": CAUSES[2], "count": 0, "reread_tokens": 0, "share": 0.0}
    assert out["reread_tokens"] == 1000
    assert out["accounts"] == [
        {"account_id": 1, "account_name": "work", "cause": first, "count": 2, "reread_tokens": 300},
        {
            "account_id": 2,
            "account_name": "deleted",
            "cause": first,
            "count": 1,
            "reread_tokens": 100,
        },
        {
            "account_id": 1,
            "account_name": "work",
            "cause": switch,
            "count": 3,
            "reread_tokens": 600,
        },
    ]


def test_personal_summaries_have_no_account_split_and_no_input_means_no_share():
    out = present_misses([group(CAUSES[0], 1, 1, 50)], 0, since=None, until=None, personal=True)
    assert "accounts" not in out
    assert out["causes"][0] == {"cause": CAUSES[0], "count": 1, "reread_tokens": 50, "share": 0.0}
    assert present_misses([], 3, since=None, until=None, personal=True)["causes"][0]["share"] == 0.0


def test_shares_are_rounded_to_four_places():
    out = present_misses([group(CAUSES[0], 1, 1, 1)], 3, since=None, until=None, personal=True)
    assert out["causes"][0]["share"] == 0.3333


def test_missing_counts_add_nothing_and_one_token_of_input_still_has_shares():
    rows = [group(CAUSES[0], 1, None, None), group(CAUSES[0], 2, 2, 1)]
    out = present_misses(rows, 1, since=None, until=None, personal=False)
    assert out["causes"][0] == {"cause": CAUSES[0], "count": 2, "reread_tokens": 1, "share": 1.0}
    assert out["accounts"][0] == {
        "account_id": 1,
        "account_name": "work",
        "cause": CAUSES[0],
        "count": 0,
        "reread_tokens": 0,
    }
