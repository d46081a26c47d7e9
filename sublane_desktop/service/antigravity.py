"""What the service does for Antigravity accounts beyond the request path: find the Cloud
project a login bills to (once, then kept with the credential in the keyring), and read the
per-family quota (R-AG-4). The service's Antigravity collaborator."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from sublane_desktop.core.gauges import Observation
from sublane_desktop.core.pool import AccountState
from sublane_desktop.core.quota import QuotaReadError
from sublane_desktop.core.tasks import spawn
from sublane_desktop.providers import antigravity
from sublane_desktop.secrets import account_secret

log = logging.getLogger(__name__)


class AntigravityAccounts:
    def __init__(self, service: Any) -> None:
        self.service = service
        self._discovering: dict[int, asyncio.Task[dict[str, Any]]] = {}

    def base(self, account: AccountState) -> str:
        return antigravity.base_for(account.base_url, self.service.base_url("antigravity"))

    async def with_project(
        self, account: AccountState, credential: dict[str, Any]
    ) -> dict[str, Any]:
        """The credential with its project id, discovering it (one call per account at a time)
        when the login did not bring one. Raises antigravity.ProjectUnknown."""
        if credential.get("project_id"):
            return credential
        task = self._discovering.get(account.id)
        if task is None or task.done():
            task = spawn(
                self._discover(account, credential), name=f"antigravity-project-{account.id}"
            )
            self._discovering[account.id] = task
        return await asyncio.shield(task)

    async def _discover(self, account: AccountState, credential: dict[str, Any]) -> dict[str, Any]:
        service = self.service
        try:
            project = await antigravity.discover_project(
                service.http, self.base(account), credential
            )
        except antigravity.ProjectUnknown as exc:
            if exc.status not in (401, 403):
                raise
            # A token its file said was still good: refresh once and ask again, as requests do.
            fresh = await service.refresh_credential(account)
            if fresh.get("access_token") == credential.get("access_token"):
                raise
            credential = fresh
            project = await antigravity.discover_project(
                service.http, self.base(account), credential
            )
        fresh = dict(credential, project_id=project)
        await service.secrets.aset(account_secret(str(account.id)), json.dumps(fresh))
        service.credentials.cache[account.id] = (account.revision, fresh)
        log.info("account %s: Code Assist project discovered", account.id)
        return fresh

    async def read_quota(self, account: AccountState) -> list[Observation]:
        """One fetchAvailableModels (R-AG-4); any failure is a QuotaReadError."""
        try:
            credential = await self.service.credential(account)
        except antigravity.ProjectUnknown as exc:
            raise QuotaReadError(str(exc)) from None
        return await antigravity.read_quota(
            self.service.http, self.base(account), credential, self.service.clock.now()
        )
