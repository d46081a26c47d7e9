"""Account credentials: read from the keyring once per account revision, refreshed in one flight,
and the reason an account's credential cannot be used (R-UI-8)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from sublane_desktop import credential_problems as problems
from sublane_desktop.accounts.token_sync import TokenSync
from sublane_desktop.core.pool import AccountState
from sublane_desktop.core.tasks import spawn
from sublane_desktop.credentials import is_setup_token
from sublane_desktop.providers import oauth
from sublane_desktop.secrets import KeyringUnavailable, SecretStore, account_secret
from sublane_desktop.service.admin import ensure_admin_token
from sublane_desktop.service.settings import BASE_URL_ENV, DEFAULT_BASE_URLS

if TYPE_CHECKING:
    from sublane_desktop.service import Service

log = logging.getLogger(__name__)


class CredentialCache:
    """Credentials by account id, valid while the account's revision stays the same."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.cache: dict[int, tuple[int, dict[str, Any]]] = {}
        self._token_refresh: dict[int, asyncio.Task] = {}
        self.token_sync = TokenSync(service)

    def forget(self, account_id: int) -> None:
        self.cache.pop(account_id, None)

    def ready(self, account: AccountState) -> dict[str, Any] | None:
        """The credential `credential` would answer from memory at once, or None when it has
        more to do (read the keyring, refresh, find a project): the request path asks this
        first, without a coroutine."""
        cached = self.cache.get(account.id)
        if (
            cached is None
            or cached[0] != account.revision
            or account.provider == "antigravity"
            or oauth.needs_refresh(cached[1], self.service.clock.now())
        ):
            return None
        return cached[1]

    async def credential(self, account: AccountState) -> dict[str, Any]:
        cached = self.cache.get(account.id)
        if cached is not None and cached[0] == account.revision:
            credential = cached[1]
        else:
            try:
                raw = await self.service.secrets.aget(account_secret(account.id))
            except KeyringUnavailable:
                self.note_problem(account, problems.KEYRING_UNAVAILABLE)
                raise
            if not raw:
                self.note_problem(account, problems.MISSING, gate=True)
                raise LookupError("no credential stored")
            try:
                credential = json.loads(raw)
            except ValueError:
                self.note_problem(account, problems.UNREADABLE, gate=True)
                raise LookupError("stored credential is not readable") from None
            self.cache[account.id] = (account.revision, credential)
            if self.service.credential_problems.clear(account.id):
                self.service._changed()
        if oauth.needs_refresh(credential, self.service.clock.now()):
            credential = await self.refresh(account)
        if account.provider == "antigravity":
            credential = await self.service.antigravity.with_project(account, credential)
        return credential

    def note_problem(self, account: AccountState, reason: str, gate: bool = False) -> None:
        """R-UI-8: the account shows `auth_failed` with the reason; an unusable credential of
        its own also gates it (stored) until it is added again."""
        news = self.service.credential_problems.note(account.id, reason)
        if gate and not account.auth_failed:
            self.service.pool.mark_auth_failed(account)
        elif news:
            self.service._changed()

    async def open_file_keyring(self, password: str, *, create: bool) -> str:
        """The GUI's "no keyring" dialog: create (or unlock) the encrypted file keyring and use
        it from now on. Returns where the secrets live. Raises KeyringUnavailable (wrong
        password, unreadable file) or ValueError (bad input) and changes nothing then."""
        from sublane_desktop.secrets import FILE_NAME, EncryptedFileKeyring

        service = self.service
        if not isinstance(password, str) or len(password) < 8:
            raise ValueError("choose a password of at least 8 characters")
        exists = (service.data_dir / FILE_NAME).exists()
        if create and exists:
            raise ValueError(f"{service.data_dir / FILE_NAME} already exists; unlock it instead")
        if not create and not exists:
            raise ValueError(f"there is no encrypted keyring at {service.data_dir / FILE_NAME}")
        loop = asyncio.get_running_loop()

        def open_store() -> tuple[SecretStore, str]:
            store = SecretStore(
                service.data_dir, backend=EncryptedFileKeyring(service.data_dir, password)
            )
            return store, ensure_admin_token(store)  # writes (create) or checks the password

        store, token = await loop.run_in_executor(None, open_store)
        service._secrets, service.admin_token, service.keyring_problem = store, token, None
        self.cache.clear()
        service.credential_problems.clear_keyring()
        service._changed()
        service.bus.publish("accounts.settings")
        return store.describe()

    def keyring_file_exists(self) -> bool:
        from sublane_desktop.secrets import FILE_NAME

        return (self.service.data_dir / FILE_NAME).exists()

    async def refresh(self, account: AccountState) -> dict[str, Any]:
        """One refresh in flight per account (R-ST-3); callers share its result."""
        task = self._token_refresh.get(account.id)
        if task is None or task.done():
            task = spawn(self._refresh(account), name=f"token-refresh-{account.id}")
            self._token_refresh[account.id] = task
        return await asyncio.shield(task)

    async def _refresh(self, account: AccountState) -> dict[str, Any]:
        service = self.service
        cached = self.cache.get(account.id)
        if cached is None:
            raw = await service.secrets.aget(account_secret(account.id))
            cached = (account.revision, json.loads(raw or "{}"))
        old = cached[1]
        if is_setup_token(old):
            # A `claude setup-token` token: nothing to refresh with, and refused means it has
            # expired or been revoked (R-LOGIN-3).
            from sublane_desktop.accounts.sources.claude_setup_token import REFUSED

            log.warning(
                "account %s: its setup-token was refused; marking it auth-failed", account.id
            )
            service.credential_problems.note(account.id, REFUSED)
            service.pool.mark_auth_failed(account)
            return old
        base = service.env.get(
            oauth.OAUTH_BASE_ENV.get(account.provider, BASE_URL_ENV["oauth"])
        ) or oauth.DEFAULT_OAUTH_BASE.get(account.provider, DEFAULT_BASE_URLS["oauth"])

        async def refresh(credential: dict[str, Any]) -> dict[str, Any]:
            return await oauth.refresh(
                service.session, account.provider, base, credential, service.clock.now()
            )

        try:
            # An imported login shares its family with its tool: re-read before, write back
            # after (R-LOGIN-2, accounts/token_sync.py).
            fresh = await self.token_sync.refreshed(account, old, refresh)
        except oauth.RefreshRejected as exc:
            log.warning("account %s: %s; marking it auth-failed", account.id, exc)
            service.credential_problems.note(account.id, problems.REFUSED)
            service.pool.mark_auth_failed(account)
            return old
        except oauth.RefreshFailed as exc:
            log.warning("account %s: %s; keeping the current token", account.id, exc)
            return old
        await service.secrets.aset(account_secret(account.id), json.dumps(fresh))
        self.cache[account.id] = (account.revision, fresh)
        return fresh
