"""core.json_text.load reads JSON exactly as json.loads does: values and errors alike."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sublane_desktop.core import json_text


def outcome(read, raw: bytes) -> tuple[str, str]:
    try:
        return "value", repr(read(raw))
    except Exception as exc:  # the same type and message, whatever it is
        return type(exc).__name__, str(exc)


EDGES = [
    b'{"model": "claude-sonnet-4-5", "max_tokens": 16}',
    b'{"a": 1} ',  # trailing whitespace: json.loads takes it
    b'{"a": 1}}',  # extra data
    b'{"a": 1} x',
    b"{",
    b"{}",
    b'{"a": "\\ud800"}',  # an escaped lone surrogate
    b'{"a": "\xed\xa0\x80"}',  # an encoded one (json.loads decodes with surrogatepass)
    b'{"a": "\xff"}',  # not UTF-8
    b'{"a": NaN, "b": 1E400, "c": 18446744073709551616}',
    b'{\x00"\x00}\x00',  # UTF-16-LE sniffed from the NUL byte
    '{"a": 1}'.encode("utf-16-le"),
    b'\xef\xbb\xbf{"a": 1}',  # a UTF-8 BOM
    b' {"a": 1}',
    b"[1, 2]",
    b"",
    b"{" * 5000 + b"}" * 5000,  # deeper than the parser goes
]


@pytest.mark.parametrize("raw", EDGES)
def test_every_edge_reads_as_json_loads_reads_it(raw: bytes) -> None:
    assert outcome(json_text.load, raw) == outcome(json.loads, raw)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSON, st.sampled_from(["", " ", "\n", "x", "}", "{}"]), st.binary(max_size=3))
def test_any_document_reads_as_json_loads_reads_it(value, tail: str, noise: bytes) -> None:
    raw = json.dumps(value).encode() + tail.encode()
    assert outcome(json_text.load, raw) == outcome(json.loads, raw)
    assert outcome(json_text.load, raw + noise) == outcome(json.loads, raw + noise)
    mangled = noise + raw
    assert outcome(json_text.load, mangled) == outcome(json.loads, mangled)


DEEP = '{"a":' * 100_000 + "1" + "}" * 100_000  # far deeper than the parser recurses


def test_parse_says_too_deep_as_bad_json_not_as_a_recursion_error():
    """Text a person or client hands us: every caller already handles ValueError."""
    with pytest.raises(json_text.TooDeep) as info:
        json_text.parse(DEEP)
    assert isinstance(info.value, ValueError) and str(info.value) == "nested too deeply"
    assert json_text.parse('{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    with pytest.raises(ValueError):
        json_text.parse("{not json")


def test_a_user_id_nested_too_deeply_names_no_conversation_and_raises_nothing():
    from sublane_desktop.core.affinity import conversation_key

    assert conversation_key({}, {"metadata": {"user_id": DEEP}}) is None
    shallow = '{"session_id": "s-1"}'
    assert conversation_key({}, {"metadata": {"user_id": shallow}}) is not None
