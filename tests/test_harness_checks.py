"""The test harness itself: what it checks after every test that uses it."""

from __future__ import annotations

import pytest

from tests.conftest import started_harness
from tests.record_factory import a_record


async def test_the_harness_fails_a_test_that_lost_a_request_record(
    tmp_path, secret_store, upstream
):
    """R-FT-2 is checked after every harness test: a record the store refused (no member at
    all, where one is required) makes the test fail at teardown even if its body passed."""
    with pytest.raises(AssertionError, match="1 request records were dropped"):
        async with started_harness(tmp_path, secret_store, upstream) as h:
            h.service.record(a_record(request_id="req_lost", user_id=None))


async def test_the_harness_passes_a_test_whose_records_were_all_saved(
    tmp_path, secret_store, upstream
):
    async with started_harness(tmp_path, secret_store, upstream) as h:
        h.service.record(a_record(request_id="req_kept"))
    assert h.service.request_log.dropped == 0
