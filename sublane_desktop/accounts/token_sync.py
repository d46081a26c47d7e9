"""One refresh-token family, two holders (R-LOGIN-2): an imported login and the tool it came
from stay in step, so neither is ever left holding a spent refresh token.

Claude and Codex rotate the refresh token on every refresh and refuse a spent one
(PROTOCOLS.md). So, around each of SubLane's refreshes of an imported login:

1. Before: read the source again (the file or keychain item the import remembered). When it
   holds a different refresh token for the same account, one SubLane has not spent itself, the
   tool has refreshed since: SubLane's token is spent, so it adopts the tool's (and uses its
   access token as is while it is fresh). A store still holding a token SubLane spent is stale
   (a write-back that failed): SubLane keeps its own and the write-back mends the store.
   Same account means the identity the source carries matches the one remembered at import
   (Codex: `account_id`, as Codex's own reload checks; Claude: the account uuid from
   `.claude.json`, else the plan) — a source now holding another account is left alone.
2. Refresh with that token. Refused (the tool rotated between the read and the refresh)? Read
   again once and, if the tool has a newer token, adopt it.
3. After: write the new tokens back in the tool's own format (the source module keeps every
   field it does not own, atomically), so the tool's next refresh uses the live token.

For Claude Code all three happen under Claude Code's own refresh lock (claude_refresh_lock.py),
so the two never refresh at once.

A detached import (`--detach`), a source SubLane does not write (Google logins: Google does not
rotate refresh tokens), one that vanished or cannot be read, or one that now holds another
account: SubLane refreshes its own copy and writes nothing back; the reason is logged in words,
never with a token.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sublane_desktop.accounts.credentials import CredentialError
from sublane_desktop.accounts.sources import NotThere, Places, Source, source_for
from sublane_desktop.accounts.sources.claude_refresh_lock import refresh_lock
from sublane_desktop.accounts.sources.tool_files import identity_digest, other_account
from sublane_desktop.providers import oauth

if TYPE_CHECKING:
    from sublane_desktop.core.pool import AccountState
    from sublane_desktop.service import Service

log = logging.getLogger(__name__)

# The token fields a source may hand SubLane; anything else in the credential stays SubLane's.
TOKEN_FIELDS = ("access_token", "refresh_token", "expires_at", "id_token")


@dataclass
class Holder:
    """The tool's side of an account's family, as read just now."""

    source: Source | None  # None: no source to keep in step with
    why_not: str | None = None  # why nothing is written back, in words


SPENT_KEPT = 8  # refresh tokens SubLane spent, remembered per account (as digests)


def digest(token: Any) -> str:
    return hashlib.sha256(str(token).encode("utf-8")).hexdigest()[:16]


def adopt(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """Our credential with the tool's newer tokens in it (same account, so the rest stays)."""
    merged = dict(ours)
    for name in TOKEN_FIELDS:
        if name in theirs:
            merged[name] = theirs[name]
    return merged


class TokenSync:
    def __init__(self, service: Service) -> None:
        self.service = service
        self.wait: Callable[[float], Awaitable[None]] = asyncio.sleep  # lock retries (tests)
        # What this process has spent, so a store still holding one is known to be stale
        # (in memory: after a restart a stale store costs one refused refresh, then a re-read)
        self.spent: defaultdict[int, deque[str]] = defaultdict(lambda: deque(maxlen=SPENT_KEPT))

    def places(self) -> Places:
        return Places(Path.home(), dict(self.service.env))

    async def _run(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn)

    async def holder(self, account: AccountState) -> tuple[Holder, str | None]:
        """The account's source, if it is one to keep in step, and the identity remembered."""
        from sublane_desktop.store import account_sources

        row = await self.service.db.read(lambda: account_sources.source_of(account.id))
        if row is None:
            return Holder(None), None
        if row.detached:
            return Holder(None, "the import was detached"), None
        source = source_for(row.kind, row.location, self.places())
        if source is None or not source.writable:
            return Holder(None, "SubLane does not write that login back"), None
        return Holder(source), row.identity

    async def newer_from_tool(
        self,
        account: AccountState,
        holder: Holder,
        identity: str | None,
        ours: dict[str, Any],
    ) -> dict[str, Any] | None:
        """The tool's tokens when they are newer than ours for the same account, else None
        (and `holder.why_not` says why nothing may be written back, if so)."""
        source = holder.source
        if source is None:
            return None
        try:
            login = await self._run(source.read)
        except NotThere:
            holder.why_not = f"its login is gone from {source.title}"
            holder.source = None
            return None
        except CredentialError as exc:
            holder.why_not = f"{source.title} cannot be read ({exc})"
            holder.source = None
            return None
        if other_account(identity, identity_digest(login.identity)):
            holder.why_not = f"{source.title} now holds another account"
            holder.source = None
            return None
        if login.secret.get("refresh_token") == ours.get("refresh_token"):
            return None
        if digest(login.secret.get("refresh_token")) in self.spent[account.id]:
            # The tool holds a login SubLane has already refreshed past (a write-back that
            # failed, a restored backup): ours is the live one, and the write-back after this
            # refresh mends the tool's copy.
            return None
        log.info(
            "account %s: adopting the newer login its tool wrote to %s", account.id, source.title
        )
        return login.secret

    async def refreshed(
        self,
        account: AccountState,
        ours: dict[str, Any],
        refresh: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """The account's next credential, kept in step with its tool (the module docstring
        says how). Raises oauth.RefreshRejected / RefreshFailed as `refresh` does."""
        holder, identity = await self.holder(account)
        lock_dir = getattr(holder.source, "lock_dir", None)
        if lock_dir is None:
            return await self._in_step(account, holder, identity, ours, refresh)
        # Claude Code refreshes under a lock of its own: hold it too (claude_refresh_lock.py)
        async with refresh_lock(lock_dir(), self.wait):
            return await self._in_step(account, holder, identity, ours, refresh)

    async def _in_step(
        self,
        account: AccountState,
        holder: Holder,
        identity: str | None,
        ours: dict[str, Any],
        refresh: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        credential = ours
        newer = await self.newer_from_tool(account, holder, identity, credential)
        if newer is not None:
            credential = adopt(credential, newer)
            if not oauth.needs_refresh(credential, self.service.clock.now()):
                return credential  # the tool refreshed just now: its access token serves
        spent = self.spent[account.id]
        try:
            spent.append(digest(credential.get("refresh_token")))  # used now, refused or not
            fresh = await refresh(credential)
        except oauth.RefreshRejected:
            # The tool may have spent our token between the read and the refresh.
            newer = await self.newer_from_tool(account, holder, identity, credential)
            if newer is None:
                raise
            credential = adopt(credential, newer)
            if not oauth.needs_refresh(credential, self.service.clock.now()):
                return credential
            spent.append(digest(credential.get("refresh_token")))
            fresh = await refresh(credential)
        await self.write_back(account, holder, fresh)
        return fresh

    async def write_back(
        self, account: AccountState, holder: Holder, fresh: dict[str, Any]
    ) -> None:
        source = holder.source
        if source is None:
            if holder.why_not:
                log.info(
                    "account %s: refreshed SubLane's own copy; nothing written back (%s)",
                    account.id,
                    holder.why_not,
                )
            return
        try:
            await self._run(lambda: source.write(fresh))
        except (CredentialError, OSError) as exc:
            reason = exc if isinstance(exc, CredentialError) else (exc.strerror or "failed")
            log.warning(
                "account %s: could not write the refreshed login back to %s (%s); the tool"
                " will need to log in again",
                account.id,
                source.title,
                reason,
            )
