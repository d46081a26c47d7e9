"""Queries and writes, as plain functions. Callers decide the thread (Store.read/write or CLI)."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from peewee import IntegrityError

from sublane_desktop.core.ids import KeyIdentity
from sublane_desktop.core.names import check_name
from sublane_desktop.store.models import (
    Account,
    AccountGroup,
    AccountRuntime,
    AffinityBinding,
    ClientKey,
    Group,
    Setting,
    User,
)

KEY_PREFIX = "sl-"


class NotFound(LookupError):
    pass


class Conflict(ValueError):
    pass


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class AccountRow:
    id: int
    provider: str
    name: str
    kind: str
    base_url: str | None
    enabled: bool
    max_concurrency: int
    revision: int
    group_ids: tuple[int, ...]


# --- users and groups -------------------------------------------------------------------------


def ensure_admin(name: str = "admin") -> User:
    """First run creates the administrator."""
    admin = User.select().where(User.is_admin == True).order_by(User.id).first()
    if admin is None:
        admin = User.create(name=name, is_admin=True, created_at=time.time())
    return admin


def add_user(name: str) -> User:
    check_name(name, "user")
    try:
        return User.create(name=name, is_admin=False, created_at=time.time())
    except IntegrityError as exc:
        raise Conflict(f"user {name!r} already exists") from exc


def find_user(name: str) -> User:
    user = User.get_or_none(User.name == name)
    if user is None:
        raise NotFound(f"unknown user {name!r}")
    return user


def get_or_create_group(name: str) -> Group:
    group, _ = Group.get_or_create(name=name)
    return group


def find_group(name: str) -> Group:
    group = Group.get_or_none(Group.name == name)
    if group is None:
        raise NotFound(f"unknown group {name!r}")
    return group


# --- client keys ------------------------------------------------------------------------------


def create_key(name: str, user: User, group: Group) -> tuple[ClientKey, str]:
    """Returns the row and the key itself, which exists only in this return value."""
    check_name(name, "key")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    row = ClientKey.create(
        name=name,
        user=user,
        group=group,
        prefix=key[:10],
        key_hash=hash_key(key),
        created_at=time.time(),
    )
    return row, key


def identify_key(key: str) -> KeyIdentity | None:
    row = (
        ClientKey.select(ClientKey, User)
        .join(User)
        .where((ClientKey.key_hash == hash_key(key)) & (ClientKey.revoked_at.is_null()))
        .first()
    )
    if row is None:
        return None
    return KeyIdentity(row.id, row.user_id, row.group_id, bool(row.user.is_admin))


def list_keys() -> list[dict[str, Any]]:
    rows = ClientKey.select(ClientKey, User, Group).join(User).switch(ClientKey).join(Group)
    return [
        {
            "id": r.id,
            "name": r.name,
            "prefix": r.prefix,
            "user": r.user.name,
            "group": r.group.name,
            "created_at": r.created_at,
            "revoked": r.revoked_at is not None,
        }
        for r in rows.order_by(ClientKey.id)
    ]


def revoke_key(ref: str) -> ClientKey:
    row = None
    if ref.isdigit():
        row = ClientKey.get_or_none(ClientKey.id == int(ref))
    if row is None:
        row = ClientKey.select().where(ClientKey.name == ref).order_by(ClientKey.id.desc()).first()
    if row is None:
        raise NotFound(f"unknown key {ref!r}")
    if row.revoked_at is None:
        row.revoked_at = time.time()
        row.save()
    return row


# --- accounts ---------------------------------------------------------------------------------


def add_account(
    provider: str,
    name: str,
    kind: str,
    group: Group,
    base_url: str | None = None,
    max_concurrency: int = 2,
) -> Account:
    if Account.get_or_none(Account.name == name) is not None:
        raise Conflict(f"account {name!r} already exists")
    account = Account.create(
        provider=provider,
        name=name,
        kind=kind,
        base_url=base_url,
        max_concurrency=max_concurrency,
        created_at=time.time(),
    )
    AccountGroup.create(account=account, group=group)
    AccountRuntime.create(account=account)
    return account


def find_account(ref: str | int) -> Account:
    account = None
    if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
        account = Account.get_or_none((Account.id == int(ref)) & Account.deleted_at.is_null())
    if account is None and isinstance(ref, str):
        account = Account.get_or_none((Account.name == ref) & Account.deleted_at.is_null())
    if account is None:
        raise NotFound(f"unknown account {ref!r}")
    return account


def account_rows() -> list[AccountRow]:
    memberships: dict[int, list[int]] = {}
    for m in AccountGroup.select():
        memberships.setdefault(m.account_id, []).append(m.group_id)
    return [
        AccountRow(
            id=a.id,
            provider=a.provider,
            name=a.name,
            kind=a.kind,
            base_url=a.base_url,
            enabled=bool(a.enabled),
            max_concurrency=a.max_concurrency,
            revision=a.revision,
            group_ids=tuple(sorted(memberships.get(a.id, ()))),
        )
        for a in Account.select().where(Account.deleted_at.is_null()).order_by(Account.id)
    ]


def account_names() -> dict[int, str]:
    """Every account ever made, deleted ones included (records still point at them)."""
    return {a.id: a.name for a in Account.select(Account.id, Account.name)}


def set_max_concurrency(account_id: int, limit: int) -> None:
    Account.update(max_concurrency=limit).where(Account.id == account_id).execute()


def runtime_rows() -> dict[int, AccountRuntime]:
    return {r.account_id: r for r in AccountRuntime.select()}


def stored_holds(row: AccountRuntime | None) -> Any:
    """A runtime row's cooldown evidence as stored (None when absent or unreadable)."""
    if row is None or not row.holds:
        return None
    try:
        return json.loads(row.holds)
    except ValueError:
        return None


def save_runtime(account_id: int, revision: int | None = None, **fields: Any) -> None:
    """`revision`: the account's lifecycle revision the fields were taken under. An auth
    failure belongs to the credential it was seen with: when another process (the CLI's
    `--replace`, an import) stored a new credential meanwhile, the running pool's save must not
    write the old failure over the repair before the pool reloads the account."""
    if revision is not None and fields.get("auth_failed"):
        stored = Account.select(Account.revision).where(Account.id == account_id).scalar()
        if stored is not None and stored != revision:
            del fields["auth_failed"]
    if "holds" in fields and fields["holds"] is not None:
        fields["holds"] = json.dumps(fields["holds"], separators=(",", ":"))
    fields["updated_at"] = time.time()
    updated = AccountRuntime.update(**fields).where(AccountRuntime.account == account_id).execute()
    if not updated:
        AccountRuntime.insert(account=account_id, **fields).on_conflict_ignore().execute()


def save_lifecycle(account_id: int, enabled: bool, revision: int) -> None:
    """Disable/enable (R-AG-6): the flag and the lifecycle revision change together."""
    Account.update(enabled=enabled, revision=revision).where(Account.id == account_id).execute()


# --- affinity ---------------------------------------------------------------------------------


def load_bindings(scope: str = "auto") -> dict[tuple[int, str], int]:
    return {
        (b.group_id, b.digest): b.account_id
        for b in AffinityBinding.select().where(
            (AffinityBinding.scope == scope) & (AffinityBinding.bound == True)
        )
    }


def save_binding(group_id: int, digest: str, account_id: int, scope: str = "auto") -> None:
    # An upsert, not a replace: re-binding a freed conversation keeps its last turn's facts.
    AffinityBinding.insert(
        scope=scope, group_id=group_id, digest=digest, account=account_id, created_at=time.time()
    ).on_conflict(
        conflict_target=[AffinityBinding.scope, AffinityBinding.group_id, AffinityBinding.digest],
        update={
            AffinityBinding.account: account_id,
            AffinityBinding.bound: True,
            AffinityBinding.created_at: time.time(),
        },
    ).execute()


def delete_bindings_for(account_id: int) -> int:
    """Free the account's conversations; their rows stay (unbound) for the cache-miss facts."""
    return (
        AffinityBinding.update(bound=False)
        .where((AffinityBinding.account == account_id) & (AffinityBinding.bound == True))
        .execute()
    )


TurnFacts = tuple[int, float, int, int]  # account id, ended at, total input, warm input


def load_turns(scope: str = "auto") -> dict[tuple[int, str], dict[str, TurnFacts]]:
    """Each conversation's last turn per model; a row whose JSON is damaged reads as none."""
    turns: dict[tuple[int, str], dict[str, TurnFacts]] = {}
    query = AffinityBinding.select().where(
        (AffinityBinding.scope == scope) & AffinityBinding.last_turns.is_null(False)
    )
    for b in query:
        try:
            models = {
                str(model): (int(f[0]), float(f[1]), int(f[2]), int(f[3]))
                for model, f in json.loads(b.last_turns or "").items()
            }
        except (ValueError, TypeError, AttributeError, IndexError, KeyError):
            continue
        if models:
            turns[(b.group_id, b.digest)] = models
    return turns


def save_turn(
    group_id: int, digest: str, account_id: int, turns: dict[str, TurnFacts], scope: str = "auto"
) -> None:
    """Store a conversation's last turns; `account_id` (the one serving it now) is used only
    if this write lands before the binding's own: the row is then created unbound, and the
    binding's upsert binds it without touching the facts."""
    text = json.dumps({model: list(facts) for model, facts in turns.items()}, separators=(",", ":"))
    AffinityBinding.insert(
        scope=scope,
        group_id=group_id,
        digest=digest,
        account=account_id,
        created_at=time.time(),
        bound=False,
        last_turns=text,
    ).on_conflict(
        conflict_target=[AffinityBinding.scope, AffinityBinding.group_id, AffinityBinding.digest],
        update={AffinityBinding.last_turns: text},
    ).execute()


# --- settings ---------------------------------------------------------------------------------


def get_setting(key: str, default: Any = None) -> Any:
    row = Setting.get_or_none(Setting.key == key)
    return default if row is None else json.loads(row.value)


def set_setting(key: str, value: Any) -> None:
    Setting.insert(key=key, value=json.dumps(value)).on_conflict_replace().execute()


def all_settings() -> dict[str, Any]:
    return {s.key: json.loads(s.value) for s in Setting.select()}
