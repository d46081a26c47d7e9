"""Account credentials: read from the keyring per account revision and read again whenever the
entry may have vanished (R-LOGIN-4, accounts/keyring_watch.py), refreshed in one flight, and the
reason an account's credential cannot be used (R-UI-8)."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from typing import TYPE_CHECKING, Any

from sublane_desktop.accounts import keyring_watch, problems
from sublane_desktop.accounts.credentials import is_setup_token
from sublane_desktop.accounts.secrets import KeyringUnavailable, SecretStore, account_secret
from sublane_desktop.accounts.token_sync import TokenSync
from sublane_desktop.core.pool import AccountState
from sublane_desktop.core.tasks import spawn
from sublane_desktop.providers import oauth
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
        # R-LOGIN-4: the last good read of each entry, and the reads under way (each with the
        # order it began in, so a use waits for a read that began after it did).
        self.readings = keyring_watch.Readings()
        self._reads: dict[int, tuple[int, asyncio.Task[Any]]] = {}
        self._order = itertools.count()

    def forget(self, account_id: int) -> None:
        self.cache.pop(account_id, None)
        self.readings.forget(account_id)

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
            or not self._still_there(account)
        ):
            return None
        return cached[1]

    async def credential(self, account: AccountState) -> dict[str, Any]:
        """The account's credential, refreshed when about to expire. Raises
        CredentialUnavailable (words a person can act on) when the keyring has none, cannot
        give it, or gives something unreadable (R-LOGIN-4)."""
        held_back = self._keyring_held_back(account)
        if held_back is not None:
            raise held_back
        cached = self.cache.get(account.id)
        if cached is not None and cached[0] == account.revision:
            if not self._still_there(account):
                # Read again to see the entry is still there; the copy in memory stays the one
                # used (a refresh may have just replaced both, and must not be undone).
                await self._entry(account)
            credential = self._cached(account) or cached[1]
        else:
            read = await self._entry(account)
            # A refresh that ended while the keyring was read stored a newer one: keep it.
            credential = self._cached(account) or read
            self.cache[account.id] = (account.revision, credential)
        if oauth.needs_refresh(credential, self.service.clock.now()):
            credential = await self.refresh(account, seen=credential)
        if account.provider == "antigravity":
            credential = await self.service.antigravity.with_project(account, credential)
        return credential

    def note_problem(self, account: AccountState, reason: str, gate: bool = False) -> None:
        """R-UI-8: the account shows `auth_failed` with the reason; an unusable credential of
        its own also gates it (stored) until a credential is written for it again."""
        news = self.service.credential_problems.note(
            account.id, reason, machine=not gate, revision=account.revision
        )
        if gate and not account.auth_failed:
            self.service.pool.mark_auth_failed(account)
        elif news:
            self.service._changed()

    # --- R-LOGIN-4: noticing a credential that vanished (accounts/keyring_watch.py) ----------

    def recheck(self, account: AccountState) -> None:
        """The next use reads the entry again (verify: a person asks about the keyring now)."""
        self.readings.forget(account.id)

    def _keyring_held_back(self, account: AccountState) -> problems.CredentialUnavailable | None:
        """Rule 3: the reason, when the keyring failed to answer for this account too recently
        to be asked again (each ask of a locked desktop keyring prompts the person)."""
        if self.readings.retry_due(account.id, self.service.clock.monotonic()):
            return None
        reason = self.service.credential_problems.reason(account.id, account.revision)
        return self._unavailable(account, reason) if reason else None

    def _still_there(self, account: AccountState) -> bool:
        """Whether a use may trust the credential in memory without reading the entry again."""
        secrets = self.service._secrets
        return secrets is not None and self.readings.good_for_use(
            account.id, account.revision, self.service.clock.monotonic(), secrets.stamp()
        )

    async def _entry(self, account: AccountState) -> dict[str, Any]:
        """The account's entry, read from the keyring by a read that began after this call did
        (so a deletion made before a use is always seen by it); callers that arrive while a
        read is under way share the next one. Raises CredentialUnavailable."""
        arrived = next(self._order)
        while True:
            running = self._reads.get(account.id)
            if running is None or running[1].done():
                task = spawn(self._read(account), name=f"credential-read-{account.id}")
                running = (next(self._order), task)
                self._reads[account.id] = running
            if running[0] > arrived:
                found = await asyncio.shield(running[1])
                break
            await asyncio.wait([running[1]])  # began before this call: wait it out, then read
        if isinstance(found, problems.CredentialUnavailable):
            raise found
        return found

    async def _read(self, account: AccountState) -> dict[str, Any] | problems.CredentialUnavailable:
        """One read of the entry: the credential, or the problem noted on the account (a result,
        not an exception: a failed background task would be logged as a fault of ours)."""
        service = self.service
        secrets = service._secrets
        if secrets is None:  # no keyring was ever opened
            self.note_problem(account, problems.KEYRING_UNAVAILABLE)
            return self._unavailable(account, problems.KEYRING_UNAVAILABLE)
        stamp, began = secrets.stamp(), service.clock.monotonic()
        try:
            raw = await secrets.aget(account_secret(account.id))
        except KeyringUnavailable as exc:
            reason = problems.keyring_unreadable(str(exc))
            self.readings.record_failure(account.id, service.clock.monotonic())
            self.note_problem(account, reason)
            return self._unavailable(account, reason)
        credential = _credential_in(raw)
        if credential is None:
            words = _wrong_with(raw)
            log.warning("account %s: %s", account.id, words)
            reason = problems.own_reason(words, account.kind)
            self.note_problem(account, reason, gate=True)
            return self._unavailable(account, reason, words)
        self.readings.record(account.id, account.revision, began, stamp)
        if service.credential_problems.clear_passing(account.id):
            service._changed()
        return credential

    @staticmethod
    def _unavailable(
        account: AccountState, reason: str, words: str | None = None
    ) -> problems.CredentialUnavailable:
        return problems.CredentialUnavailable(account.name, account.kind, reason, words)

    async def sweep(self) -> list[int]:
        """Rule 2 of accounts/keyring_watch.py: read the entries due a background read; returns
        the accounts read. An account with a known problem is not read in the background: one
        missing its own credential waits for a new one, and a keyring that could not be read is
        asked again at the next use, not behind the person's back (a locked desktop keyring
        asks them to unlock it at every read)."""
        service = self.service
        now = service.clock.monotonic()
        stamp = service._secrets.stamp() if service._secrets is not None else None
        due = [
            account
            for account in list(service.pool.accounts.values())
            if account.enabled
            and service.credential_problems.reason(account.id, account.revision) is None
            and self.readings.due_in_background(account.id, account.revision, now, stamp)
        ]
        for account in due:
            try:
                await self._entry(account)
            except problems.CredentialUnavailable:
                pass  # noted on the account: its state now says why
        return [account.id for account in due]

    def note_stored(self, secrets: SecretStore | None, trouble: str | None = None) -> None:
        """The CLI with no server running (`account list`): say which stored credentials are
        missing or unreadable, as a running service would, changing nothing stored. `trouble`:
        why no keyring could be opened, when `secrets` is None."""
        for account in self.service.pool.accounts.values():
            if not account.enabled:
                continue
            if secrets is None:
                reason, own = problems.keyring_unreadable(trouble or "no keyring"), False
            else:
                try:
                    raw = secrets.get(account_secret(account.id))
                except KeyringUnavailable as exc:
                    reason, own = problems.keyring_unreadable(str(exc)), False
                else:
                    if _credential_in(raw) is not None:
                        continue
                    reason, own = problems.own_reason(_wrong_with(raw), account.kind), True
            self.service.credential_problems.note(
                account.id, reason, machine=not own, revision=account.revision
            )

    async def watch(self) -> None:
        """The background half of R-LOGIN-4, running while the service serves. Each look also
        picks up accounts another process (the CLI) changed, e.g. a credential written again
        with `account add --replace`, so a mended account turns green without a request."""
        while True:
            await asyncio.sleep(keyring_watch.LOOK_EVERY_S)
            try:
                await self.service.catalog.reload()
                await self.sweep()
            except Exception as exc:  # the next look tries again; never echo keyring text
                log.warning("credential check failed: %s", type(exc).__name__)

    async def open_file_keyring(self, password: str, *, create: bool) -> str:
        """The GUI's "no keyring" dialog: create (or unlock) the encrypted file keyring and use
        it from now on. Returns where the secrets live. Raises KeyringUnavailable (wrong
        password, unreadable file) or ValueError (bad input) and changes nothing then."""
        from sublane_desktop.accounts.secrets import FILE_NAME, EncryptedFileKeyring

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
        self.readings = keyring_watch.Readings()  # read under another keyring: read again
        service.credential_problems.clear_keyring()
        service._changed()
        service.bus.publish("accounts.settings")
        return store.describe()

    def keyring_file_exists(self) -> bool:
        from sublane_desktop.accounts.secrets import FILE_NAME

        return (self.service.data_dir / FILE_NAME).exists()

    def _cached(self, account: AccountState) -> dict[str, Any] | None:
        cached = self.cache.get(account.id)
        return cached[1] if cached is not None and cached[0] == account.revision else None

    async def refresh(
        self, account: AccountState, seen: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """One refresh in flight per account (R-ST-3); callers share its result. `seen`: the
        credential that made the caller ask. When a refresh has replaced it since (the caller
        read it before that refresh ended), the caller gets the replacement: refreshing again
        would spend a second single-use refresh token for nothing."""
        task = self._token_refresh.get(account.id)
        if task is None or task.done():
            now = self._cached(account)
            if (
                seen is not None
                and now is not None
                and now.get("access_token") != seen.get("access_token")
            ):
                return now
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
            service.credential_problems.note(account.id, REFUSED, revision=account.revision)
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
            service.credential_problems.note(
                account.id, problems.REFUSED, revision=account.revision
            )
            service.pool.mark_auth_failed(account)
            return old
        except oauth.RefreshFailed as exc:
            log.warning("account %s: %s; keeping the current token", account.id, exc)
            return old
        await service.secrets.aset(account_secret(account.id), json.dumps(fresh))
        self.cache[account.id] = (account.revision, fresh)
        return fresh


def _wrong_with(raw: str | None) -> str:
    """What is wrong with an entry that holds no credential, in words."""
    return problems.MISSING if not raw else problems.UNREADABLE


def _credential_in(raw: str | None) -> dict[str, Any] | None:
    """The credential JSON object a keyring entry holds, or None (absent, empty, damaged)."""
    if not raw:
        return None
    try:
        credential = json.loads(raw)
    except ValueError:
        return None
    return credential if isinstance(credential, dict) else None
