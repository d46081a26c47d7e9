"""History query parameters (R-REC-6) and the record shape (R-REC-2, SPEC §7), checked before
any SQL: what every surface (API, CLI, Requests window) accepts and shows."""

from __future__ import annotations

import pytest

from sublane_desktop.core.cache_miss import CAUSES
from sublane_desktop.core.history import (
    MAX_AGE_SECONDS,
    NUMBER_MAX,
    HistoryQuery,
    InvalidQuery,
    parse_query,
    present,
    retention_cutoff,
)


def bad(pairs, admin=True) -> tuple[str, str]:
    with pytest.raises(InvalidQuery) as err:
        parse_query(pairs, admin=admin)
    return err.value.param, err.value.message


def test_every_filter_is_read():
    q = parse_query(
        {
            "cursor": "51",
            "outcome": "error",
            "model": "claude-sonnet-4-5",
            "key_id": "3",
            "request_id": "req_abc",
            "from": "100",
            "until": "200.5",
            "user_id": "2",
            "account_id": "4",
            "cache_miss": CAUSES[0],
        },
        admin=True,
    )
    assert q == HistoryQuery(
        cursor=51,
        outcome="error",
        model="claude-sonnet-4-5",
        key_id=3,
        request_id="req_abc",
        since=100.0,
        until=200.5,
        user_id=2,
        account_id=4,
        cache_miss=CAUSES[0],
    )


def test_empty_values_and_the_zero_cursor_mean_no_filter():
    q = parse_query([("cursor", "0"), ("outcome", ""), ("model", "  "), ("from", "")], admin=False)
    assert q == HistoryQuery()


def test_a_personal_query_cannot_widen_itself():
    q = parse_query(
        {"user_id": "1", "account_id": "2", "scope": "all", "outcome": "success"}, admin=False
    )
    assert q == HistoryQuery(outcome="success")
    assert parse_query({"user_id": "x"}, admin=False) == HistoryQuery()  # not even read


def test_values_are_trimmed_and_models_bounded_like_records():
    q = parse_query({"model": "  " + "m" * 300 + " ", "request_id": " req_1 "}, admin=False)
    assert q.model == "m" * 128 and q.request_id == "req_1"


@pytest.mark.parametrize(
    ("pairs", "param", "message"),
    [
        (
            [("outcome", "success"), ("outcome", "error")],
            "outcome",
            "outcome is given more than once",
        ),
        (
            {"outcome": "fine"},
            "outcome",
            "outcome must be one of success, incomplete, error, canceled, rejected",
        ),
        (
            {"cache_miss": "nope"},
            "cache_miss",
            "cache_miss must be one of " + ", ".join((*CAUSES, "any")),
        ),
        ({"request_id": "r" * 129}, "request_id", "request_id is longer than 128 characters"),
        ({"cursor": "-1"}, "cursor", "cursor must be a whole number"),
        ({"cursor": "1.5"}, "cursor", "cursor must be a whole number"),
        ({"cursor": "1" * 21}, "cursor", "cursor must be a whole number"),
        ({"key_id": "0"}, "key_id", f"key_id must be from 1 to {NUMBER_MAX}"),
        ({"user_id": str(NUMBER_MAX + 1)}, "user_id", f"user_id must be from 1 to {NUMBER_MAX}"),
        ({"account_id": "a"}, "account_id", "account_id must be a whole number"),
        ({"from": "yesterday"}, "from", "from must be unix seconds (e.g. 1767225600)"),
        ({"until": "1."}, "until", "until must be unix seconds (e.g. 1767225600)"),
        ({"until": "1" * 33}, "until", "until must be unix seconds (e.g. 1767225600)"),
        ({"from": str(NUMBER_MAX + 1)}, "from", f"from must be from 0 to {NUMBER_MAX}"),
        ({"from": "20", "until": "10"}, "from", "from must not be later than until"),
    ],
)
def test_bad_input_names_the_parameter_and_says_what_is_wrong(pairs, param, message):
    assert bad(pairs) == (param, message)


def test_edges_that_are_fine():
    q = parse_query(
        {
            "cursor": str(NUMBER_MAX),
            "key_id": "1",
            "from": "10",
            "until": "10",
            "request_id": "r" * 128,
            "cache_miss": "any",
        },
        admin=True,
    )
    assert (q.cursor, q.key_id, q.since, q.until) == (NUMBER_MAX, 1, 10.0, 10.0)
    assert len(q.request_id) == 128 and q.cache_miss == "any"
    assert parse_query({"from": "0", "until": "0.25"}, admin=False).until == 0.25
    # 20 digits are still read as a number (then found too large); 21 are not a number
    assert bad({"cursor": "1" * 20}) == ("cursor", f"cursor must be from 0 to {NUMBER_MAX}")
    assert parse_query({"from": "1" * 15 + ".5"}, admin=False).since == float("1" * 15 + ".5")


def test_retention_is_seven_days():
    assert MAX_AGE_SECONDS == 7 * 86400
    assert retention_cutoff(1_000_000.0) == 1_000_000.0 - 7 * 86400


ROW = {
    "id": 9,
    "request_id": "req_1",
    "user_id": 2,
    "key_id": 3,
    "group_id": 1,
    "account_id": 5,
    "account_name": "work",
    "provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "protocol": "anthropic",
    "operation": "messages",
    "started_at": 100.0,
    "duration_ms": 80,
    "first_token_ms": 20,
    "outcome": "success",
    "error_code": None,
    "upstream_status": 200,
    "input_tokens": 200,
    "output_tokens": 7,
    "cached_tokens": 50,
    "cache_miss": "account_switch",
    "reread_tokens": 150,
    "previous_account_id": 4,
    "previous_account_name": "home",
    "idle_seconds": 12.5,
}


def test_an_administrator_sees_every_field_with_names_and_the_rate():
    assert present(ROW, personal=False) == {
        **{k: v for k, v in ROW.items()},
        "cache_hit_rate": "25%",
    }


def test_a_personal_view_blanks_the_accounts():
    shown = present(ROW, personal=True)
    assert shown["account_id"] is None and shown["account_name"] == ""
    assert shown["previous_account_id"] is None and shown["previous_account_name"] == ""
    assert shown["request_id"] == "req_1" and shown["cache_hit_rate"] == "25%"


def test_deleted_and_missing_accounts_read_as_such():
    gone = present({**ROW, "account_deleted": True, "previous_account_name": None}, personal=False)
    assert gone["account_name"] == "deleted" and gone["account_id"] == 5
    assert gone["previous_account_name"] == "deleted"
    nameless = present({**ROW, "account_name": None}, personal=False)
    assert nameless["account_name"] == "deleted"
    unplaced = present({**ROW, "account_id": None, "previous_account_id": None}, personal=False)
    assert unplaced["account_name"] == "" and unplaced["previous_account_name"] == ""
    old = {
        k: v
        for k, v in ROW.items()
        if k
        not in (
            "cache_miss",
            "reread_tokens",
            "previous_account_id",
            "previous_account_name",
            "idle_seconds",
        )
    }
    shown = present(old, personal=False)
    assert shown["cache_miss"] is None and shown["previous_account_name"] == ""


def test_more_edges_of_numbers_and_scope():
    assert parse_query([("user_id", "1"), ("user_id", "2")], admin=False) == HistoryQuery()
    assert parse_query({"account_id": "1"}, admin=True).account_id == 1
    exactly_32 = "1" * 15 + "." + "1" * 16
    assert parse_query({"from": exactly_32}, admin=False).since == float(exactly_32)
    assert parse_query({"until": str(NUMBER_MAX)}, admin=False).until == float(NUMBER_MAX)
