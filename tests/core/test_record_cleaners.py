"""The cleaners every stored or shown string goes through (R-REC-2, R-FT-10, R-FT-2): an error
code is an identifier or it is replaced whole; text is made storable, never rejected."""

from __future__ import annotations

import pytest

from sublane_desktop.core.records import (
    ERROR_CODE_MAX,
    MODEL_MAX,
    clean_text,
    sanitize_code,
)
from tests.record_factory import a_record

LONGEST = ("ab_" * ERROR_CODE_MAX)[:ERROR_CODE_MAX]


@pytest.mark.parametrize(
    ("code", "kept"),
    [
        ("rate_limit_error", "rate_limit_error"),
        ("  http_529 ", "http_529"),
        ("a.b-c_d9", "a.b-c_d9"),
        ("ask-me", "ask-me"),  # "sk-" inside a word is not a key prefix
        (LONGEST, LONGEST),
        ("x" + "1a" * 11, "x" + "1a" * 11),  # 23 alphanumerics in a row: still a name
        (529, "529"),
    ],
)
def test_identifiers_are_kept(code, kept):
    assert sanitize_code(code) == kept


@pytest.mark.parametrize(
    "code",
    [
        None,
        "",
        "Overloaded, try again",
        "_leading",
        LONGEST + "b",
        "sk-ant-api03-abc",
        "my_sk-proj-1",
        "sl-abc",
        "rt-refresh",
        "sla-x",
        "token_eyJhbGciOiJI",
        "abcdefghijklmnopqrstuvwx",  # a long random run: credential-shaped
        "café",
    ],
)
def test_anything_else_is_replaced_whole(code):
    assert sanitize_code(code) == "error"
    assert sanitize_code(code, "http_500") == "http_500"


def test_text_is_made_storable():
    assert clean_text("a\x00b\x00") == "ab"
    assert clean_text("a\udcffb") == "a\ufffdb"
    assert clean_text("café ☕") == "café ☕"
    assert clean_text(42) == "42"


def test_a_record_cleans_what_it_is_given():
    record = a_record(model="m\x00" + "x" * 500)
    assert record.model == "m" + "x" * (MODEL_MAX - 1)
    record.error_code = "Bearer sk-ant-oat01-secret"
    assert record.error_code == "error"
    record.error_code = None
    assert record.error_code is None
