"""The account catalog: stored accounts and client keys as the live pool sees them.

Accounts are added here (the Add-account dialog and the API; the CLI shares
`sublane_desktop.accounts.credentials`), re-read when another process committed, and client keys are
answered from a short-lived memory so the request path takes no database round trip.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sublane_desktop.accounts import problems
from sublane_desktop.accounts.secrets import account_secret
from sublane_desktop.core.cache_miss import PreviousTurn
from sublane_desktop.core.pool import AccountState
from sublane_desktop.core.tasks import spawn
from sublane_desktop.store import repositories as repo

if TYPE_CHECKING:
    from sublane_desktop.service import Service

log = logging.getLogger(__name__)

IDENTITY_TTL = 1.0


def load_account_states() -> list[AccountState]:
    """Stored accounts with their persisted runtime, as pool states (runs on a DB thread)."""
    runtime = repo.runtime_rows()
    states = []
    for row in repo.account_rows():
        rt = runtime.get(row.id)
        state = AccountState(
            id=row.id,
            name=row.name,
            provider=row.provider,
            group_ids=row.group_ids,
            kind=row.kind,
            base_url=row.base_url,
            enabled=row.enabled,
            max_concurrency=row.max_concurrency,
            revision=row.revision,
            paused=bool(rt.paused) if rt else False,
            auth_failed=bool(rt.auth_failed) if rt else False,
            cooldown_until=rt.cooldown_until if rt else None,
            failure_streak=rt.failure_streak if rt else 0,
            runtime_revision=rt.runtime_revision if rt else 0,
            fable_cooldown_until=rt.fable_cooldown_until if rt else None,
            fable_streak=rt.fable_streak if rt else 0,
            pinned_until=rt.pinned_until if rt else None,
        )
        state.load_holds(repo.stored_holds(rt))
        states.append(state)
    return states


class StorePersistence:
    """The pool's persistence port: writes go to the writer thread; failures only log."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def _write(self, what: str, fn: Callable[[], Any]) -> None:
        async def run() -> None:
            try:
                await self.service.db.write(fn)
            except Exception as exc:  # R-POOL-10: in-memory state stays in force
                log.error("could not persist %s: %s", what, type(exc).__name__)

        spawn(run(), name=f"persist-{what}")

    def save_runtime(self, account_id: int, fields: dict[str, Any]) -> None:
        account = self.service.pool.accounts.get(account_id)
        revision = account.revision if account is not None else None
        self._write("runtime", lambda: repo.save_runtime(account_id, revision, **fields))

    def save_binding(self, group_id: int, digest: str, account_id: int) -> None:
        self._write("binding", lambda: repo.save_binding(group_id, digest, account_id))

    def delete_bindings(self, account_id: int) -> None:
        self._write("binding", lambda: repo.delete_bindings_for(account_id))

    def save_turn(self, group_id: int, digest: str, turns: dict[str, PreviousTurn]) -> None:
        latest = max(turns.values(), key=lambda t: t.ended_at)
        rows = {
            model: (t.account_id, t.ended_at, t.input_tokens, t.warm_tokens)
            for model, t in turns.items()
        }
        self._write("turn", lambda: repo.save_turn(group_id, digest, latest.account_id, rows))

    def save_lifecycle(self, account_id: int, enabled: bool, revision: int) -> None:
        self._write("lifecycle", lambda: repo.save_lifecycle(account_id, enabled, revision))


class AccountCatalog:
    """Accounts and client keys, kept in step with the database."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._data_version: int | None = None
        self._identities: dict[str, tuple[repo.KeyIdentity, float]] = {}
        # Advanced by every revocation: a key lookup that was reading the database while a
        # revocation committed must not put the old answer back into the cache (R-FT-12).
        self._key_generation = 0

    async def load(self) -> None:
        """At start: every account, then the stored conversation bindings."""
        service = self.service
        store = service.db
        await self.reload(force=True)
        if service.keyring_problem:  # every credential is out of reach: say so on each account
            for account_id in service.pool.accounts:
                service.credential_problems.note(
                    account_id, problems.KEYRING_UNAVAILABLE, machine=True
                )
        self.service.pool.load_bindings(await store.read(repo.load_bindings))
        self.service.turns.load(
            {
                key: {model: PreviousTurn(*facts) for model, facts in models.items()}
                for key, models in (await store.read(repo.load_turns)).items()
            }
        )

    async def reload(self, force: bool = False) -> None:
        """Re-read accounts when another process (the CLI) committed to the database.

        `PRAGMA data_version` is asked on the writer's own connection, where it changes only
        for *other* connections' commits: our own record and runtime writes never trigger a
        reload.
        """
        store = self.service.db

        def version() -> int:
            return store.db.execute_sql("PRAGMA data_version").fetchone()[0]

        current = await store.write(version)
        if not force and current == self._data_version:
            return
        states = await store.read(load_account_states)
        self._data_version = current
        self._identities.clear()  # keys may have been revoked too
        self.service.pool.sync_accounts(states)
        self.service.apply_settings()
        self.service.fresh_gauges.look()  # added, re-enabled or signed in elsewhere: read now

    async def identify(self, key: str) -> repo.KeyIdentity | None:
        """Who a client key belongs to (R-PX-1).

        Known keys are answered from memory for IDENTITY_TTL seconds, so the request path takes
        no database round trip; a revocation made by another process shows within that time,
        and one made through this service (revoke_key) at once.
        """
        known = self.known(key)
        if known is not None:
            return known
        digest = repo.hash_key(key)
        now = self.service.clock.monotonic()
        try:
            await self.reload()
        except Exception as exc:  # serving on the catalog we have beats failing the request
            log.error("could not check the account catalog: %s", type(exc).__name__)
        while True:
            generation = self._key_generation
            identity = await self.service.db.read(lambda: repo.identify_key(key))
            if generation == self._key_generation:
                break  # no revocation returned meanwhile: the answer is current
        if identity is not None:
            if len(self._identities) > 10_000:  # bounded: unknown keys are never cached
                self._identities.clear()
            self._identities[digest] = (identity, now)
        else:
            self._identities.pop(digest, None)
        return identity

    def known(self, key: str) -> repo.KeyIdentity | None:
        """The identity `identify` answers from memory, or None when it must ask the
        database: the request path asks this first, without a coroutine."""
        hit = self._identities.get(repo.hash_key(key))
        if hit is not None and self.service.clock.monotonic() - hit[1] < IDENTITY_TTL:
            return hit[0]
        return None

    async def create_key(
        self, name: str, user: str | None = None, group: str = "default"
    ) -> tuple[dict[str, Any], str]:
        """A new client key, returned once (the Client keys dialog and the API)."""

        def write() -> tuple[dict[str, Any], str]:
            owner = repo.find_user(user) if user else repo.ensure_admin()
            row, key = repo.create_key(name, owner, repo.find_group(group))
            return {"id": row.id, "name": row.name, "prefix": row.prefix}, key

        return await self.service.db.write(write)

    async def revoke_key(self, ref: str | int) -> dict[str, Any]:
        """Revoke a key (id or name); refused from the moment this returns (R-FT-12)."""

        def write() -> dict[str, Any]:
            row = repo.revoke_key(str(ref))
            return {"id": row.id, "name": row.name, "prefix": row.prefix, "revoked": True}

        revoked = await self.service.db.write(write)
        self._key_generation += 1
        self._identities.clear()
        return revoked

    async def add_user(self, name: str) -> int:
        return await self.service.db.write(lambda: repo.add_user(name).id)

    async def list_keys(self) -> list[dict[str, Any]]:
        return await self.service.db.read(repo.list_keys)

    async def add_account(
        self,
        provider: str,
        name: str,
        secret: Any,
        *,
        group: str = "default",
        base_url: str | None = None,
        max_concurrency: int = 2,
        replace: bool = False,
    ) -> int:
        """Validate and store an account; the secret goes straight to the keyring.

        Raises credentials.CredentialError with a clear message on bad input.
        """
        from sublane_desktop.accounts import credentials

        service = self.service
        clean = credentials.validate_secret(provider, secret)
        account_id, _, _ = await service.db.write(
            lambda: credentials.store_account(
                service.secrets,
                provider,
                name,
                group,
                base_url,
                max_concurrency,
                clean,
                replace=replace,
            )
        )
        service.credentials.forget(account_id)
        service.credential_problems.clear(account_id)
        await self.reload(force=True)
        return account_id

    async def import_login(
        self,
        which: str,
        path: Path | None = None,
        name: str | None = None,
        detach: bool = False,
    ) -> int:
        """Import the login a tool keeps ("claude-code", "codex", "gemini", "antigravity"):
        from `path`, or from the first place the tool keeps one (R-LOGIN-3); its source is
        remembered so refreshes keep the tool's copy in step (R-LOGIN-2, accounts/imports.py)."""
        from sublane_desktop.accounts.imports import find_login, store_import
        from sublane_desktop.accounts.sources import Places

        service = self.service
        places = Places(Path.home(), dict(service.env))
        loop = asyncio.get_running_loop()
        login = await loop.run_in_executor(None, find_login, which, path, places)
        account_id, _, _ = await service.db.write(
            lambda: store_import(service.secrets, login, name or which, "default", None, 2, detach)
        )
        service.credentials.forget(account_id)
        service.credential_problems.clear(account_id)
        await self.reload(force=True)
        return account_id

    async def remove_account(self, ref: str | int) -> None:
        """Delete an account: its secret leaves the keyring, its history stays ("deleted")."""
        service = self.service
        account = service.pool.find(ref)
        now = service.clock.now()

        def write() -> None:
            from sublane_desktop.store.models import Account

            Account.update(
                deleted_at=now, enabled=False, name=f"deleted-{account.id}-{account.name}"
            ).where(Account.id == account.id).execute()
            repo.delete_bindings_for(account.id)

        await service.db.write(write)
        await service.secrets.adelete(account_secret(account.id))
        service.credentials.forget(account.id)
        await self.reload(force=True)
