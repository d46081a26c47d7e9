"""core.json_edit: one top-level string value changes, every other byte stays (R-WF-1)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sublane_desktop.core.json_edit import replace_top_level_string


def test_only_the_value_bytes_change():
    raw = b'{"model" : "codex/gpt-5.5",\n "input":[{"model":"inner"}], "x":"\\u00e9/\\/"}'
    out = replace_top_level_string(raw, "model", "gpt-5.5")
    assert out == b'{"model" : "gpt-5.5",\n "input":[{"model":"inner"}], "x":"\\u00e9/\\/"}'


def test_non_ascii_and_duplicate_keys():
    raw = '{"model":"a","t":"héllo ☃","model":"b"}'.encode()
    out = replace_top_level_string(raw, "model", "c")
    assert out == '{"model":"c","t":"héllo ☃","model":"c"}'.encode()
    assert json.loads(out)["model"] == "c"


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"[1]", "not a JSON object"),
        (b'{"model":1}', "top-level 'model' is not a string"),
        (b'{"other":"x"}', "no top-level 'model'"),
        (b"{}", "no top-level 'model'"),
        (b" { } ", "no top-level 'model'"),
        (b'{"model":"x"', "malformed JSON object"),
        (b'{"model" "x"}', "malformed JSON object"),
        (b'{model:"x"}', "malformed JSON object"),
        (b'{"model":"x";}', "malformed JSON object"),
    ],
)
def test_what_cannot_be_edited_says_so(raw, why):
    """The caller falls back to re-serialising on any of these; the reason is for its log."""
    with pytest.raises(ValueError) as caught:
        replace_top_level_string(raw, "model", "y")
    assert str(caught.value) == why


def test_a_body_that_ends_in_a_newline_is_edited():
    """Clients end a body with a newline (or not): the object still ends at its brace."""
    assert replace_top_level_string(b'{"model":"a"}\n', "model", "b") == b'{"model":"b"}\n'


def test_a_body_with_an_escaped_lone_surrogate_is_edited_too():
    """JSON may carry a lone surrogate as an escape (and some clients send its raw UTF-8
    bytes); the edit keeps every other byte, whatever they are."""
    raw = b'{"t":"\\ud800 ' + b"\xed\xa0\x80" + b'","model":"a"}'
    assert replace_top_level_string(raw, "model", "b") == raw.replace(b'"a"', b'"b"')


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


@given(
    st.dictionaries(st.text(max_size=6), _values, max_size=5),
    st.text(max_size=12),
    st.sampled_from([(",", ":"), (", ", ": ")]),
    st.booleans(),
)
def test_edit_equals_a_parse_and_change(body, model, separators, ascii_only):
    body = dict(body, model="old")
    raw = json.dumps(body, separators=separators, ensure_ascii=ascii_only).encode()
    out = replace_top_level_string(raw, "model", model)
    assert json.loads(out) == dict(body, model=model)
    # the bytes before the value are the client's own
    head = raw[: raw.index(b'"model"')]
    assert out.startswith(head)
