"""JSON text to Python, exactly as `json.loads` reads it, with the usual object's path shortened.

Every proxied request parses its body and its upstream answer. `json.loads` on bytes first
sniffs the encoding (BOMs, NUL bytes), decodes, then matches whitespace around the document
with a regular expression twice; for text that starts with `{` and a non-NUL byte, that is
always UTF-8 and nothing comes before the object. Anything else, including an object
followed by more text, goes through `json.loads` itself, so results and errors are the same.

`parse` is `json.loads` for text a person or a client handed us (a login file, stdin, a
header): JSON nested deeper than Python's parser goes raises `TooDeep`, a ValueError like any
other unreadable JSON, where `json.loads` raises a RecursionError that reaches the person as a
traceback.
"""

from __future__ import annotations

import json
from typing import Any

_decoder = json.JSONDecoder()


def load(raw: bytes) -> Any:
    if raw[:1] == b"{" and raw[1:2] != b"\x00":
        text = raw.decode("utf-8", "surrogatepass")  # what json.loads decodes with
        value, end = _decoder.raw_decode(text)
        if end == len(text):
            return value
    return json.loads(raw)


class TooDeep(ValueError):
    """JSON nested deeper than the parser goes (thousands of levels: no real document)."""

    def __init__(self) -> None:
        super().__init__("nested too deeply")


def parse(text: str | bytes) -> Any:
    """`json.loads`, with too deep a document a ValueError (`TooDeep`) like any bad JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep() from None
