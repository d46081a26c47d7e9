"""Quota readings in SQLite: saved only at the account's revision (R-GAUGE-4), freshest wins,
and the history the usage chart draws from, thinned and trimmed to its window."""

from __future__ import annotations

import pytest

from sublane_desktop.core.gauges import Observation
from sublane_desktop.store import quota
from sublane_desktop.store import repositories as repo
from sublane_desktop.store.connection import Store
from sublane_desktop.store.models import Account

T0 = 1_800_000_000.0


@pytest.fixture
def accounts(tmp_path):
    store = Store(tmp_path / "sublane.db")
    team = repo.get_or_create_group("team")
    work = repo.add_account("anthropic", "work", "oauth", team)
    home = repo.add_account("anthropic", "home", "oauth", team)
    Account.update(revision=4).where(Account.id == home.id).execute()
    yield work.id, home.id
    store.close()


def obs(at: float, util: float = 0.5, window: str = "five_hour", **kw) -> Observation:
    return Observation(window, util, kw.pop("resets_at", None), at, "poll", **kw)


def test_a_reading_is_saved_only_at_the_accounts_revision(accounts):
    work, home = accounts
    assert not quota.save_observations(home, 1, [obs(T0)])  # home is at revision 4
    assert quota.save_observations(home, 4, [obs(T0, 0.3, resets_at=T0 + 60, rejected=True)])
    assert quota.save_observations(work, 1, [obs(T0, 0.9)])
    loaded = quota.load_observations()
    assert loaded[home] == [obs(T0, 0.3, resets_at=T0 + 60, rejected=True)]
    assert loaded[work] == [obs(T0, 0.9)]  # one account's reading never lands on another's


def test_the_freshest_reading_wins(accounts):
    work, _ = accounts
    quota.save_observations(work, 1, [obs(T0 + 10, 0.5), obs(T0 + 10, 0.2, "seven_day")])
    quota.save_observations(work, 1, [obs(T0, 0.1), obs(T0 + 20, 0.4, "seven_day")])
    stored = {o.window: o.utilization for o in quota.load_observations()[work]}
    assert stored == {"five_hour": 0.5, "seven_day": 0.4}  # the stale one skipped, not the rest
    quota.save_observations(work, 1, [obs(T0 + 10, 0.6)])  # the same instant: the later word
    assert {o.window: o.utilization for o in quota.load_observations()[work]}["five_hour"] == 0.6


def test_history_keeps_a_row_a_minute_or_a_real_move(accounts):
    work, home = accounts
    for at, util in [
        (T0, 0.5),
        (T0 + 30, 0.505),  # too soon and too small: skipped
        (T0 + 40, 0.51),  # a whole step: kept
        (T0 + 100, 0.51),  # a minute after the last kept one: kept
        (T0 + 100, 0.9),  # not newer than the last kept one: skipped
        (T0 + 90, 0.9),  # older: skipped
    ]:
        quota.save_observations(work, 1, [obs(at, util)])
    quota.save_observations(home, 4, [obs(T0 + 130, 0.51, "seven_day")])  # others' rows apart
    quota.save_observations(work, 1, [obs(T0 + 130, 0.51, "seven_day")])
    quota.save_observations(work, 1, [obs(T0 + 150, 0.51)])  # 50 s after the newest: skipped
    history = quota.load_history(0)
    assert history[work]["five_hour"] == [(T0, 0.5), (T0 + 40, 0.51), (T0 + 100, 0.51)]
    assert history[work]["seven_day"] == [(T0 + 130, 0.51)]
    assert quota.load_history(0, home) == {home: {"seven_day": [(T0 + 130, 0.51)]}}


def test_history_older_than_its_window_is_trimmed_per_account(accounts):
    work, home = accounts
    keep = quota.HISTORY_RETENTION_S
    quota.save_observations(home, 4, [obs(T0 - 3 * keep)])
    quota.save_observations(work, 1, [obs(T0 - 2 * keep)])
    quota.save_observations(work, 1, [obs(T0 - keep, 0.1)])
    quota.save_observations(work, 1, [obs(T0, 0.2)])  # exactly the window after the last
    history = quota.load_history(0)
    assert history[work]["five_hour"] == [(T0 - keep, 0.1), (T0, 0.2)]
    assert history[home]["five_hour"] == [(T0 - 3 * keep, 0.5)]  # another account's rows stay
