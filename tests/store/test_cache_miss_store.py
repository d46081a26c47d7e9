"""Cache-miss forensics in the store (R-CF-1): the migration, and the last-turn facts that
outlive a freed binding."""

from __future__ import annotations

from peewee import SqliteDatabase

from sublane_desktop.core.history import HistoryQuery
from sublane_desktop.store import migrations
from sublane_desktop.store import repositories as repo
from sublane_desktop.store.connection import Store
from sublane_desktop.store.records import read_page

STEP = next(n for n, sql in migrations.STEPS.items() if any("cache_miss" in s for s in sql))


def test_rows_recorded_before_the_migration_read_null(tmp_path):
    path = tmp_path / "old.db"
    db = SqliteDatabase(str(path))
    migrations.migrate(db, path, upto=STEP - 1)
    db.execute_sql(
        "INSERT INTO request_records (request_id, user_id, key_id, group_id, provider, model,"
        " protocol, operation, started_at, outcome, input_tokens, cached_tokens)"
        " VALUES ('req_old', 1, 1, 1, 'anthropic', 'm', 'anthropic', 'messages', ?, 'success',"
        " 100, 0)",
        (1_800_000_000.0,),
    )
    db.execute_sql("INSERT INTO accounts (provider, name, created_at) VALUES ('anthropic', 'a', 0)")
    db.execute_sql(
        "INSERT INTO affinity_bindings (scope, group_id, digest, account_id,"
        " created_at) VALUES ('auto', 1, 'd1', 1, 0)"
    )
    db.close()
    store = Store(path)
    try:
        [item] = read_page(HistoryQuery(), owner=None, now=1_800_000_100.0)["items"]
        assert item["request_id"] == "req_old"
        assert (item["cache_miss"], item["reread_tokens"]) == (None, None)
        # An existing binding stays bound, with no last turn known.
        assert repo.load_bindings() == {(1, "d1"): 1}
        assert repo.load_turns() == {}
    finally:
        store.close()


def test_a_freed_binding_keeps_its_last_turns_and_rebinding_keeps_them_too(tmp_path):
    store = Store(tmp_path / "sublane.db")
    try:
        group = repo.get_or_create_group("default")
        a = repo.add_account("anthropic", "a", "oauth", group).id
        b = repo.add_account("anthropic", "b", "oauth", group).id
        facts = {
            "claude-opus-4-1": (a, 1_800_000_000.0, 40_000, 39_000),
            "claude-haiku-4-5": (a, 1_800_000_001.5, 900, 0),
        }
        repo.save_binding(group.id, "d1", a)
        repo.save_turn(group.id, "d1", a, facts)
        repo.delete_bindings_for(a)
        assert repo.load_bindings() == {}
        assert repo.load_turns() == {(group.id, "d1"): facts}
        repo.save_binding(group.id, "d1", b)  # re-placed: the facts are not wiped
        assert repo.load_bindings() == {(group.id, "d1"): b}
        assert repo.load_turns() == {(group.id, "d1"): facts}
        # A turn saved before its binding's own write lands creates the row unbound.
        repo.save_turn(group.id, "d2", b, {"m": (b, 1_800_000_010.0, 5, 5)})
        assert (group.id, "d2") not in repo.load_bindings()
        repo.save_binding(group.id, "d2", b)
        assert repo.load_turns()[(group.id, "d2")] == {"m": (b, 1_800_000_010.0, 5, 5)}
        # A damaged row reads as no facts rather than breaking the start-up.
        store.db.execute_sql(
            "UPDATE affinity_bindings SET last_turns = '{\"m\": 7}' WHERE digest = 'd2'"
        )
        assert (group.id, "d2") not in repo.load_turns()
    finally:
        store.close()
