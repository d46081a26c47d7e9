"""Times and numbers read from untrusted wire text never crash and never guess."""

import pytest

from sublane_desktop.core.numbers import iso_seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2027-01-15T09:00:00Z", 1_800_003_600.0),  # Google's resetTime, RFC 3339 with Z
        ("2027-01-15T10:00:00+01:00", 1_800_003_600.0),  # Anthropic's resets_at, an offset
        ("2027-01-15T09:00:00.500000Z", 1_800_003_600.5),
    ],
)
def test_an_iso_time_is_read_as_unix_seconds(text, seconds):
    assert iso_seconds(text) == seconds


@pytest.mark.parametrize("value", [None, "", "soon", "2027-13-45T00:00:00Z", 1_799_917_200, []])
def test_anything_else_is_no_time(value):
    assert iso_seconds(value) is None
