"""The store's queries and writes on a real SQLite file: users, client keys, accounts, settings
and conversation facts, as the service and the CLI rely on them."""

from __future__ import annotations

import time

import pytest

from sublane_desktop.store import repositories as repo
from sublane_desktop.store.connection import Store
from sublane_desktop.store.models import Account, AffinityBinding


@pytest.fixture
def store(tmp_path):
    opened = Store(tmp_path / "sublane.db")
    yield opened
    opened.close()


def test_users_are_unique_and_unknown_ones_are_named(store):
    admin = repo.ensure_admin()
    assert repo.ensure_admin("other") == admin  # first run only
    alice = repo.add_user("alice")
    assert not alice.is_admin and repo.find_user("alice") == alice
    with pytest.raises(repo.Conflict, match="user 'alice' already exists"):
        repo.add_user("alice")
    with pytest.raises(repo.NotFound, match="unknown user 'bob'"):
        repo.find_user("bob")
    with pytest.raises(repo.NotFound, match="unknown group 'ops'"):
        repo.find_group("ops")


def test_keys_are_listed_without_their_secret_and_revoked_by_id_or_name(store):
    admin = repo.ensure_admin()
    team = repo.get_or_create_group("team")
    first, key1 = repo.create_key("laptop", admin, team)
    second, key2 = repo.create_key("laptop", admin, team)
    assert key1.startswith(repo.KEY_PREFIX) and first.prefix == key1[:10]
    listed = repo.list_keys()
    assert listed == [
        {
            "id": row.id,
            "name": "laptop",
            "prefix": row.prefix,
            "user": "admin",
            "group": "team",
            "created_at": row.created_at,
            "revoked": False,
        }
        for row in (first, second)
    ]
    assert key1 not in str(listed) and key2 not in str(listed)

    assert repo.revoke_key("laptop").id == second.id  # the newest of that name
    assert repo.identify_key(key2) is None and repo.identify_key(key1) is not None
    revoked = repo.revoke_key(str(first.id))
    assert revoked.id == first.id and repo.identify_key(key1) is None
    when = revoked.revoked_at
    assert repo.revoke_key(str(first.id)).revoked_at == when  # revoking again changes nothing
    assert [k["revoked"] for k in repo.list_keys()] == [True, True]
    with pytest.raises(repo.NotFound, match="unknown key 'desk'"):
        repo.revoke_key("desk")
    with pytest.raises(repo.NotFound, match="unknown key '999'"):
        repo.revoke_key("999")


def test_accounts_are_found_by_id_or_name_until_deleted(store):
    team = repo.get_or_create_group("team")
    work = repo.add_account("anthropic", "work", "oauth", team)
    digits = repo.add_account("codex", "2024", "api_key", team)
    with pytest.raises(repo.Conflict, match="account 'work' already exists"):
        repo.add_account("anthropic", "work", "oauth", team)
    assert repo.find_account(work.id) == work
    assert repo.find_account(str(work.id)) == work
    assert repo.find_account("work") == work
    assert repo.find_account("2024") == digits  # a numeric name that is no id
    Account.update(deleted_at=time.time()).where(Account.id == work.id).execute()
    with pytest.raises(repo.NotFound, match="unknown account 'work'"):
        repo.find_account("work")
    with pytest.raises(repo.NotFound):
        repo.find_account(work.id)
    assert [r.name for r in repo.account_rows()] == ["2024"]
    assert repo.account_names() == {work.id: "work", digits.id: "2024"}  # records still name it


def test_settings_round_trip_as_json(store):
    assert repo.get_setting("pool.cap") is None
    assert repo.get_setting("pool.cap", 4) == 4
    repo.set_setting("pool.cap", 5)
    repo.set_setting("pool.cap", 6)  # replaced, not duplicated
    repo.set_setting("ui.theme", {"dark": True})
    assert repo.get_setting("pool.cap", 4) == 6
    assert repo.all_settings() == {"pool.cap": 6, "ui.theme": {"dark": True}}


def test_conversation_facts_survive_and_a_damaged_row_reads_as_none(store):
    team = repo.get_or_create_group("team")
    work = repo.add_account("anthropic", "work", "oauth", team)
    repo.save_turn(team.id, "d1", work.id, {"claude-x": (work.id, 10.0, 500, 400)})
    repo.save_turn(team.id, "d2", work.id, {"claude-x": (work.id, 11.0, 10, 0)})
    AffinityBinding.update(last_turns="{not json").where(AffinityBinding.digest == "d2").execute()
    assert repo.load_turns() == {(team.id, "d1"): {"claude-x": (work.id, 10.0, 500, 400)}}
    assert repo.load_bindings() == {}  # facts alone bind nothing
    repo.save_binding(team.id, "d1", work.id)
    assert repo.load_bindings() == {(team.id, "d1"): work.id}
    assert repo.load_turns()[(team.id, "d1")]["claude-x"][2] == 500  # the facts were kept
    assert repo.delete_bindings_for(work.id) == 1
    assert repo.load_bindings() == {}


def test_a_key_identifies_its_owner_and_only_an_admins_key_is_an_admins(store):
    admin = repo.ensure_admin()
    alice = repo.add_user("alice")
    team = repo.get_or_create_group("team")
    admin_row, admin_key = repo.create_key("desk", admin, team)
    alice_row, alice_key = repo.create_key("laptop", alice, repo.get_or_create_group("ops"))
    assert len(admin_key) == len(repo.KEY_PREFIX) + 43  # 32 random bytes, URL-safe
    assert repo.identify_key(admin_key) == repo.KeyIdentity(admin_row.id, admin.id, team.id, True)
    found = repo.identify_key(alice_key)
    assert (found.key_id, found.user_id, found.is_admin) == (alice_row.id, alice.id, False)
    listed = repo.list_keys()
    assert [(k["id"], k["user"], k["group"]) for k in listed] == [
        (admin_row.id, "admin", "team"),
        (alice_row.id, "alice", "ops"),
    ]


def test_account_writes_touch_only_their_own_account(store):
    team = repo.get_or_create_group("team")
    one = repo.add_account("anthropic", "one", "oauth", team)
    two = repo.add_account("anthropic", "two", "oauth", team)
    assert one.max_concurrency == 2  # the default slot count
    repo.set_max_concurrency(one.id, 5)
    repo.save_lifecycle(one.id, False, 3)
    repo.save_runtime(one.id, failure_streak=4)
    rows = {a.id: a for a in Account.select()}
    assert (rows[one.id].max_concurrency, rows[one.id].enabled, rows[one.id].revision) == (
        5,
        False,
        3,
    )
    assert (rows[two.id].max_concurrency, rows[two.id].enabled, rows[two.id].revision) == (
        2,
        True,
        two.revision,
    )
    runtime = repo.runtime_rows()
    assert (runtime[one.id].failure_streak, runtime[two.id].failure_streak) == (4, 0)
    assert runtime[one.id].updated_at is not None


def test_runtime_is_saved_for_an_account_that_has_no_runtime_row_yet(store):
    from sublane_desktop.store.models import AccountRuntime

    team = repo.get_or_create_group("team")
    one = repo.add_account("anthropic", "one", "oauth", team)
    AccountRuntime.delete().where(AccountRuntime.account == one.id).execute()
    repo.save_runtime(one.id, failure_streak=2)
    assert repo.runtime_rows()[one.id].failure_streak == 2


def test_a_setting_is_read_by_its_own_key(store):
    repo.set_setting("a", 1)
    repo.set_setting("b", 2)
    assert (repo.get_setting("a"), repo.get_setting("b"), repo.get_setting("c", 9)) == (1, 2, 9)
