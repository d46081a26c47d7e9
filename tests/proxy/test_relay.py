"""The relay's own rules, checked without a server: how an upstream status reads for the
account, which headers may go on the wire, and how SSE frames are written."""

from __future__ import annotations

import json

import pytest

from sublane_desktop.core.pool import Outcome
from sublane_desktop.proxy.relay import data_frame, named_frame, outcome_for_status, sendable


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, Outcome.SUCCESS),
        (399, Outcome.SUCCESS),
        (400, Outcome.NEUTRAL),  # the client's mistake says nothing about the account
        (404, Outcome.NEUTRAL),
        (499, Outcome.NEUTRAL),
        (401, Outcome.AUTH_FAILURE),
        (429, Outcome.FAILURE),
        (500, Outcome.FAILURE),
        (529, Outcome.FAILURE),
    ],
)
def test_an_upstream_status_reads_as_the_accounts_outcome(status, outcome):
    assert outcome_for_status(status) == outcome


def test_a_header_that_is_not_valid_text_is_dropped_not_a_crash():
    headers = {"x-good": "fine", "x-bad": "caf\udcff", "x-also": "ok"}
    assert sendable(headers) == {"x-good": "fine", "x-also": "ok"}


def test_sse_frames_are_named_after_their_type_or_carry_data_verbatim():
    payload = {"type": "message_stop", "n": 1}
    assert named_frame(payload) == f"event: message_stop\ndata: {json.dumps(payload)}\n\n".encode()
    assert data_frame({"a": 1}) == b'data: {"a": 1}\n\n'
    assert data_frame("[DONE]") == b"data: [DONE]\n\n"
