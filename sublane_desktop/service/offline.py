"""The service without a server: what the CLI reads and changes when no SubLane is running.

A running server owns the live pool, so the CLI then goes through its management API. With no
server the CLI still works (R-CLI-1): it opens the database and the keyring itself, through this
object, so that the CLI, like the GUI and the proxy, never touches `store/` directly. Every
write is one transaction; a server started later reads the result.

Quick commands (`key create`, `admin-token`) import only this module, the store and the keyring:
no aiohttp, no providers.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from peewee import PeeweeException

from sublane_desktop.accounts.secrets import KeyringUnavailable, SecretStore
from sublane_desktop.core.history import HistoryQuery
from sublane_desktop.service.admin import ADMIN_TOKEN, ensure_admin_token
from sublane_desktop.service.settings import SCHEDULER_SETTINGS
from sublane_desktop.store import quota as quota_store
from sublane_desktop.store import records
from sublane_desktop.store import repositories as repo
from sublane_desktop.store.connection import Store
from sublane_desktop.store.repositories import Conflict, NotFound

__all__ = ["Conflict", "DatabaseError", "KeyringUnavailable", "NotFound", "OfflineService"]

DatabaseError = PeeweeException  # any failure of the database file itself
DB_FILE = "sublane.db"
# Every transaction here begins IMMEDIATE (takes the write lock first): a running server writes
# the same database, and a deferred transaction that read before its commit fails at once with
# "database is locked" when it then writes (WAL's stale snapshot), with no busy wait.
RUN_KEY = "run-client-key"  # keyring entry: the client key `sublane run` hands to commands


class OfflineService:
    """The database and the keyring of one data directory, each opened on first use."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._store: Store | None = None
        self._secrets: SecretStore | None = None

    @property
    def db_path(self) -> Path:
        return self.data_dir / DB_FILE

    def open(self) -> Store:
        """Open (and migrate) the database now, if it is not open yet."""
        return self.store

    @property
    def store(self) -> Store:
        """The database, opened (and migrated) on first use, with its administrator user."""
        if self._store is None:
            self._store = Store(self.db_path)
            with self._store.db.atomic("IMMEDIATE"):
                repo.ensure_admin()
        return self._store

    @property
    def secrets(self) -> SecretStore:
        if self._secrets is None:
            self._secrets = SecretStore(self.data_dir)
        return self._secrets

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    # --- the administrator ----------------------------------------------------------------------

    def admin_token(self) -> str | None:
        """The management API's token if one was made (never makes one)."""
        return self.secrets.get(ADMIN_TOKEN)

    def ensure_admin_token(self) -> str:
        return ensure_admin_token(self.secrets)

    # --- accounts -------------------------------------------------------------------------------

    def add_account(
        self,
        provider: str,
        name: str,
        group: str,
        base_url: str | None,
        limit: int,
        secret: dict[str, Any],
        replace: bool = False,
    ) -> tuple[int, str, str]:
        """Store an account (secret to the keyring): (id, "added"|"updated", kind).
        Raises credentials.CredentialError with a clear message."""
        from sublane_desktop.accounts import credentials

        with self.store.db.atomic("IMMEDIATE"):
            return credentials.store_account(
                self.secrets, provider, name, group, base_url, limit, secret, replace=replace
            )

    def import_login(
        self,
        tool: str,
        file: Path | None,
        name: str,
        group: str,
        base_url: str | None,
        detach: bool = False,
    ) -> tuple[str, list[str], str | None]:
        """Import a tool's login (R-LOGIN-2/3) and remember its source: ("added …"/"updated …"
        line, further lines in words — what could not be read, how it stays in step — and the
        tool's own warning, if any). Raises credentials.CredentialError with a clear message."""
        from sublane_desktop.accounts.imports import find_login, in_step_words, store_import
        from sublane_desktop.accounts.sources import Places, source_for

        places = Places.here()
        login = find_login(tool, file, places)
        with self.store.db.atomic("IMMEDIATE"):
            account_id, verb, kind = store_import(
                self.secrets, login, name, group, base_url, 2, detach
            )
        source = source_for(login.kind, login.location, places)
        notes = list(login.unread)  # what it could not read on the way (R-LOGIN-3)
        notes.append(in_step_words(login, detach, bool(source and source.writable)))
        line = f"{verb} {login.provider} account {name} (id {account_id}, {kind})"
        return line, notes, login.warning

    def pool_view(self) -> dict[str, Any]:
        """The stored pool, built by the same service code as the live one's view."""
        from sublane_desktop.service import Service, load_account_states

        self.open()
        service = Service(self.data_dir)  # never started: no keyring, no server
        service.pool.sync_accounts(load_account_states())
        for account_id, observations in quota_store.load_observations().items():
            for obs in observations:
                service.pool.accounts[account_id].gauges.apply(obs)
        try:  # a credential gone from the keyring shows with its reason here too (R-LOGIN-4)
            secrets, trouble = self.secrets, None
        except KeyringUnavailable as exc:
            secrets, trouble = None, str(exc)
        service.credentials.note_stored(secrets, trouble)
        return service.accounts_runtime()

    def account_id(self, ref: str) -> int:
        """Raises NotFound for an unknown (or deleted) account."""
        self.open()
        return repo.find_account(ref).id

    def pause(self, ref: str, paused: bool) -> None:
        account_id = self.account_id(ref)
        with self.store.db.atomic("IMMEDIATE"):
            repo.save_runtime(account_id, paused=paused)

    def clear_cooldown(self, ref: str) -> None:
        """Cooldown and failure streak cleared; the runtime revision moves on (R-POOL-9)."""
        from sublane_desktop.store.models import AccountRuntime

        account_id = self.account_id(ref)
        with self.store.db.atomic("IMMEDIATE"):
            row = AccountRuntime.get_or_none(AccountRuntime.account == account_id)
            stored = repo.stored_holds(row)
            evidence = stored.get("evidence") if isinstance(stored, dict) else None
            fable = evidence.get("fable") if isinstance(evidence, dict) else None
            repo.save_runtime(
                account_id,
                cooldown_until=None,
                failure_streak=0,
                runtime_revision=(row.runtime_revision if row else 0) + 1,
                # families and the account's evidence go with the cooldown, as in Pool.resume
                holds={"evidence": {"fable": fable} if fable else {}, "families": {}},
            )

    def set_enabled(self, ref: str, enabled: bool) -> None:
        """Disable or enable (R-AG-6); enabling is a new lifecycle revision, disabling frees
        the account's conversations and releases its pin, as in Pool.set_enabled (a pin kept
        would show on the disabled account and come back with an enable)."""
        self.open()
        with self.store.db.atomic("IMMEDIATE"):
            account = repo.find_account(ref)
            if bool(account.enabled) != enabled:
                repo.save_lifecycle(account.id, enabled, account.revision + (1 if enabled else 0))
            if not enabled:
                repo.delete_bindings_for(account.id)
                repo.save_runtime(account.id, pinned_until=None)

    def set_limit(self, ref: str, limit: int) -> None:
        account_id = self.account_id(ref)
        if not 1 <= limit <= 8:
            raise ValueError("limit must be from 1 to 8")
        with self.store.db.atomic("IMMEDIATE"):
            repo.set_max_concurrency(account_id, limit)

    def reset_usage(self) -> None:
        with self.store.db.atomic("IMMEDIATE"):
            quota_store.clear_observations()

    # --- settings -------------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        self.open()
        return {**SCHEDULER_SETTINGS, **repo.all_settings()}

    def set_setting(self, key: str, value: Any) -> None:
        """Store one setting; the caller has validated it (`validate_settings`)."""
        with self.store.db.atomic("IMMEDIATE"):
            repo.set_setting(key, value)

    def setting(self, key: str, default: Any = None) -> Any:
        self.open()
        return repo.get_setting(key, default)

    # --- members and client keys ----------------------------------------------------------------

    def add_user(self, name: str) -> dict[str, Any]:
        """Raises Conflict when the name is taken."""
        with self.store.db.atomic("IMMEDIATE"):
            user = repo.add_user(name)
        return {"id": user.id, "name": user.name}

    def create_key(
        self, name: str, user: str | None = None, group: str = "default"
    ) -> tuple[dict[str, Any], str]:
        """A new client key, returned once, with who and where it belongs. Raises NotFound."""
        with self.store.db.atomic("IMMEDIATE"):
            owner = repo.find_user(user) if user else repo.ensure_admin()
            found = repo.find_group(group)
            row, key = repo.create_key(name, owner, found)
        return {"id": row.id, "name": row.name, "user": owner.name, "group": found.name}, key

    def list_keys(self) -> list[dict[str, Any]]:
        self.open()
        return repo.list_keys()

    def revoke_key(self, ref: str) -> dict[str, Any]:
        """Raises NotFound."""
        with self.store.db.atomic("IMMEDIATE"):
            row = repo.revoke_key(ref)
        return {"id": row.id, "name": row.name}

    def key_is_valid(self, key: str) -> bool:
        self.open()
        return repo.identify_key(key) is not None

    def run_key(self) -> str | None:
        """The client key `sublane run` keeps in the keyring, if it is still valid."""
        key = self.secrets.get(RUN_KEY)
        return key if key and self.key_is_valid(key) else None

    def keep_run_key(self, key: str) -> None:
        self.secrets.set(RUN_KEY, key)

    # --- request history ------------------------------------------------------------------------

    def _owner(self, mine: bool) -> int | None:
        return records.admin_user_id() if mine else None

    def request_page(self, query: HistoryQuery, *, mine: bool) -> dict[str, Any]:
        """One page, newest first; `mine`: the administrator's own requests."""
        store = self.store
        now = time.time()
        with store.db.atomic("IMMEDIATE"):
            records.prune(now)  # cleanup on read, as the server does
        return records.read_page(query, owner=self._owner(mine), now=now)

    def request_misses(self, query: HistoryQuery, *, mine: bool) -> dict[str, Any]:
        """Cache misses by cause over the query's window (R-CF-2)."""
        self.open()
        return records.read_misses(
            owner=self._owner(mine), since=query.since, until=query.until, now=time.time()
        )
