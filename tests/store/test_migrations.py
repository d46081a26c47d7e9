"""Upgrading an existing database keeps credentials' accounts, groups and keys (R-ST-1)."""

from __future__ import annotations

from peewee import SqliteDatabase

from sublane_desktop.core.gauges import Observation
from sublane_desktop.store import migrations
from sublane_desktop.store import quota as quota_store
from sublane_desktop.store import repositories as repo
from sublane_desktop.store.connection import Store

KEY = "sl-test-key-0123456789abcdef"


def version_1_database(path) -> None:
    """A database as the first release left it: raw SQL, no models."""
    db = SqliteDatabase(str(path))
    migrations.migrate(db, path, upto=1)
    db.execute_sql(
        "INSERT INTO users (name, is_admin, created_at) VALUES ('admin', 1, 0), ('alice', 0, 0)"
    )
    db.execute_sql("INSERT INTO groups (name) VALUES ('team')")
    db.execute_sql(
        "INSERT INTO client_keys (name, user_id, group_id, prefix, key_hash, created_at)"
        " VALUES ('laptop', 2, 2, ?, ?, 0)",
        (KEY[:10], repo.hash_key(KEY)),
    )
    db.execute_sql(
        "INSERT INTO accounts (provider, name, kind, created_at, revision)"
        " VALUES ('anthropic', 'work', 'oauth', 0, 3), ('codex', 'gpt', 'api_key', 0, 1)"
    )
    db.execute_sql("INSERT INTO account_groups VALUES (1, 1), (1, 2), (2, 2)")
    db.execute_sql("INSERT INTO settings VALUES ('pool.cap', '5')")
    db.close()


def test_upgrading_keeps_keys_groups_accounts_and_settings_and_runs_in_wal(tmp_path):
    path = tmp_path / "sublane.db"
    version_1_database(path)
    store = Store(path)
    try:
        assert migrations.current_version(store.db) == migrations.LATEST
        assert store.db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
        identity = repo.identify_key(KEY)  # the old key still signs in, as alice, in team
        assert identity is not None
        assert repo.find_user("alice").id == identity.user_id
        assert repo.find_group("team").id == identity.group_id
        rows = {r.name: r for r in repo.account_rows()}
        assert set(rows) == {"work", "gpt"}
        assert rows["work"].provider == "anthropic" and rows["work"].revision == 3
        assert rows["work"].group_ids == (1, 2) and rows["gpt"].group_ids == (2,)
        assert rows["gpt"].kind == "api_key"
        assert rows["work"].max_concurrency == 2  # the new column's default
        assert repo.get_setting("pool.cap") == 5
        # The later tables work on the upgraded file.
        assert quota_store.save_observations(
            1, 3, [Observation("five_hour", 0.5, None, 10.0, "poll")]
        )
        assert quota_store.load_observations()[1][0].utilization == 0.5
    finally:
        store.close()
    backups = list(tmp_path.glob("sublane.db.v1.*.bak"))
    assert len(backups) == 1  # copied aside before the first step ran


def test_a_current_database_is_left_alone(tmp_path):
    path = tmp_path / "sublane.db"
    Store(path).close()
    store = Store(path)
    try:
        assert migrations.current_version(store.db) == migrations.LATEST
    finally:
        store.close()
    assert list(tmp_path.glob("*.bak")) == []  # nothing to upgrade, nothing copied


def test_observations_of_an_older_revision_never_load(tmp_path):
    """R-GAUGE-4: readings carry the account's lifecycle revision; a re-auth voids them."""
    store = Store(tmp_path / "sublane.db")
    try:
        group = repo.get_or_create_group("default")
        account = repo.add_account("anthropic", "work", "oauth", group)
        obs = Observation("seven_day", 0.8, None, 10.0, "poll")
        assert quota_store.save_observations(account.id, account.revision, [obs])
        assert quota_store.save_observations(account.id, account.revision + 1, [obs]) is False
        assert quota_store.load_observations() == {account.id: [obs]}
        account.revision += 1
        account.save()
        assert quota_store.load_observations() == {}
        # An older reading never overwrites a newer stored one of the same revision.
        newer = Observation("seven_day", 0.9, None, 20.0, "headers")
        assert quota_store.save_observations(account.id, account.revision, [newer])
        assert quota_store.save_observations(account.id, account.revision, [obs])
        assert quota_store.load_observations() == {account.id: [newer]}
        assert quota_store.clear_observations() == 1
        assert quota_store.load_observations() == {}
    finally:
        store.close()


def test_a_saved_poll_floor_is_given_its_accounts_present_revision_on_upgrade(tmp_path):
    """Step 14 ties the poll floor to a revision (R-OBS-2); a floor saved before it counts as
    taken under the revision its account has now, so an upgrade does not void every floor."""
    path = tmp_path / "sublane.db"
    version_1_database(path)  # `work` is at revision 3
    db = SqliteDatabase(str(path))
    migrations.migrate(db, path, upto=13)
    db.execute_sql("INSERT INTO quota_polls VALUES (1, 100.0, 4000.0)")
    db.close()
    store = Store(path)
    try:
        assert quota_store.load_polls() == {1: (100.0, 4000.0, 3)}
    finally:
        store.close()
