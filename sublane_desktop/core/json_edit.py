"""Edit one value in JSON bytes and leave every other byte as it was (R-WF-1).

A client's request body goes upstream byte for byte; where a model name must change (an alias,
a provider prefix), only that value's bytes change. Re-serialising would reorder nothing in
Python but would still change whitespace, escapes and number spellings, which an upstream may
read (prompt caching hashes the prefix) and which the fidelity tests compare.
"""

from __future__ import annotations

import json

_decoder = json.JSONDecoder()
_SPACE = " \t\n\r"


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def replace_top_level_string(raw: bytes, key: str, value: str) -> bytes:
    """`raw` with the string value of the top-level `key` replaced by `value` (JSON-escaped).

    Every top-level occurrence is replaced (a parser takes the last of duplicate keys; none is
    left saying otherwise). Raises ValueError when `raw` is not a JSON object or `key` is not
    a top-level string there: the caller decides what to do then, nothing is guessed.
    """
    text = raw.decode("utf-8", "surrogatepass")
    at = _skip_space(text, 0)
    if text[at : at + 1] != "{":
        raise ValueError("not a JSON object")
    spans: list[tuple[int, int]] = []
    at = _skip_space(text, at + 1)
    if text[at : at + 1] == "}":
        raise ValueError(f"no top-level {key!r}")
    while True:
        if text[at : at + 1] != '"':
            raise ValueError("malformed JSON object")
        name, at = _decoder.raw_decode(text, at)  # a JSON string: the member's name
        at = _skip_space(text, at)
        if text[at : at + 1] != ":":
            raise ValueError("malformed JSON object")
        start = _skip_space(text, at + 1)
        found, end = _decoder.raw_decode(text, start)
        if name == key:
            if not isinstance(found, str):
                raise ValueError(f"top-level {key!r} is not a string")
            spans.append((start, end))
        at = _skip_space(text, end)
        if text[at : at + 1] == ",":
            at = _skip_space(text, at + 1)
            continue
        if text[at : at + 1] == "}":
            break
        raise ValueError("malformed JSON object")
    if not spans:
        raise ValueError(f"no top-level {key!r}")
    encoded = json.dumps(value)
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append(encoded)
        last = end
    pieces.append(text[last:])
    return "".join(pieces).encode("utf-8", "surrogatepass")
