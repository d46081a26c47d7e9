"""Cache-hit rate display (R-REC-5): cached input ÷ total input, at most one decimal."""

from __future__ import annotations

import pytest

from sublane_desktop.core.records import cache_hit_rate
from tests.record_factory import a_record


@pytest.mark.parametrize(
    ("input_tokens", "cached_tokens", "shown"),
    [
        (100, 0, "0%"),  # a reported zero with positive input is a real 0%
        (3, 1, "33.3%"),  # at most one decimal
        (3, 2, "66.7%"),  # rounded, not truncated
        (13, 6, "46.2%"),  # 46.15...: rounded once, to one decimal (not 46.15 -> 46.1)
        (100, 50, "50%"),  # no trailing ".0"
        (1000, 125, "12.5%"),
        (100, 100, "100%"),
        (10_000, 9_996, "99.9%"),  # not rounded up to a full cache
        (10_000, 4, "0.1%"),  # not rounded down to none
        (50, 30 + 0, "60%"),  # Anthropic: total input already holds cache read + creation
        (None, 10, "—"),  # missing counts
        (100, None, "—"),
        (None, None, "—"),
        (0, 0, "—"),  # zero input
        (10, 11, "—"),  # cached more than the total: inconsistent counts
        (10, -1, "—"),
    ],
)
def test_cache_hit_rate(input_tokens, cached_tokens, shown):
    assert cache_hit_rate(input_tokens, cached_tokens) == shown


def test_never_more_than_one_decimal():
    for total in range(1, 400):
        for cached in (1, total // 3, total // 7, total - 1):
            if 0 < cached <= total:
                text = cache_hit_rate(total, cached)
                number = text.rstrip("%")
                assert text.endswith("%") and (len(number.partition(".")[2]) <= 1), text


def test_a_records_row_has_its_fields_but_never_an_id_it_has_not_been_given():
    record = a_record(key_id=2, group_id=3, model="claude-x", started_at=10.0, id=77)
    row = record.to_row()
    assert "id" not in row and row["request_id"] == "req_1" and row["key_id"] == 2
    assert row["model"] == "claude-x" and row["started_at"] == 10.0
