"""What the service does for Antigravity accounts beyond the request path: which hosts and client
version to use, find the Cloud project a login bills to (onboarding a login that has none; once,
then kept with the credential in the keyring), read the per-family quota and the names each
account is served (R-AG-4, R-WF-5), and whether an account serves a model (R-WF-6). The
service's Antigravity collaborator."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from sublane_desktop.accounts.secrets import account_secret
from sublane_desktop.core.gauges import Observation
from sublane_desktop.core.pool import AccountState
from sublane_desktop.core.quota import QuotaReadError
from sublane_desktop.core.tasks import spawn
from sublane_desktop.providers import antigravity
from sublane_desktop.service.settings import BASE_URL_ENV

log = logging.getLogger(__name__)

VERSION_SETTING = "antigravity.client_version"


class AntigravityAccounts:
    def __init__(self, service: Any) -> None:
        self.service = service
        self._discovering: dict[int, asyncio.Task[dict[str, Any]]] = {}
        # account id -> (revision, project) once discovered: a caller that read the credential
        # before the discovery saved it must not start a second one (nor lose the project)
        self._projects: dict[int, tuple[int, str]] = {}
        # account id -> the model names its last fetchAvailableModels listed
        self.served: dict[int, tuple[str, ...]] = {}

    # --- where and as which client --------------------------------------------------------------

    def hosts(self, account: AccountState, *, setup: bool = False) -> tuple[str, ...]:
        """The hosts to try in order: the account's own base URL, else the environment's, else
        Google's (generation daily first; project set-up production first)."""
        override = account.base_url or self.service.env.get(BASE_URL_ENV["antigravity"])
        order = antigravity.SETUP_HOSTS if setup else antigravity.GENERATION_HOSTS
        return antigravity.hosts(override, order)

    def base(self, account: AccountState) -> str:
        return self.hosts(account)[0]

    def version(self) -> str:
        """The client version the user agent names (setting `antigravity.client_version`)."""
        return str(self.service.settings.get(VERSION_SETTING) or antigravity.DEFAULT_CLIENT_VERSION)

    def serves(self, account: AccountState, model: str) -> bool:
        """Whether this account serves a client's model name: its own fetchAvailableModels list
        once read, the known names before that."""
        return antigravity.serves_model(model, self.served.get(account.id))

    def learn_models(self, account: AccountState, models: list[str]) -> None:
        if models:
            self.served[account.id] = tuple(models)

    def models_call(
        self, account: AccountState, credential: Any
    ) -> tuple[str, dict[str, str], dict[str, Any]]:
        return antigravity.models_call(self.base(account), credential, self.version())

    # --- the project ------------------------------------------------------------------------------

    async def with_project(
        self, account: AccountState, credential: dict[str, Any]
    ) -> dict[str, Any]:
        """The credential with its project id, discovering it (one call per account at a time)
        when the login did not bring one. Raises antigravity.ProjectUnknown."""
        if credential.get("project_id"):
            return credential
        known = self._projects.get(account.id)
        if known is not None and known[0] == account.revision:
            return dict(credential, project_id=known[1])
        task = self._discovering.get(account.id)
        if task is None or task.done():
            task = spawn(
                self._discover(account, credential), name=f"antigravity-project-{account.id}"
            )
            self._discovering[account.id] = task
        return await asyncio.shield(task)

    async def _discover(self, account: AccountState, credential: dict[str, Any]) -> dict[str, Any]:
        service = self.service
        hosts = self.hosts(account, setup=True)
        try:
            try:
                project = await antigravity.discover_project(
                    service.http, hosts, credential, self.version()
                )
            except antigravity.ProjectUnknown as exc:
                if exc.status not in (401, 403):
                    raise
                # A token its file said was still good: refresh once and ask again, as
                # requests do (Google says 403 for it as often as 401).
                fresh = await service.refresh_credential(account, seen=credential)
                if fresh.get("access_token") == credential.get("access_token"):
                    raise
                credential = fresh
                project = await antigravity.discover_project(
                    service.http, hosts, credential, self.version()
                )
        except antigravity.ProjectUnknown as exc:
            if exc.permanent:
                # Google answered: this login has no project even after onboarding. It cannot
                # serve anything until someone sets it up, and the account says so (R-WF-5).
                log.warning("account %s: no Code Assist project after onboarding", account.id)
                service.credentials.note_problem(account, str(exc), gate=True)
            raise
        fresh = dict(credential, project_id=project)
        self._projects[account.id] = (account.revision, project)
        await service.secrets.aset(account_secret(str(account.id)), json.dumps(fresh))
        service.credentials.cache[account.id] = (account.revision, fresh)
        log.info("account %s: Code Assist project discovered", account.id)
        return fresh

    # --- quota ------------------------------------------------------------------------------------

    async def read_quota(self, account: AccountState) -> list[Observation]:
        """One fetchAvailableModels (R-AG-4); any failure is a QuotaReadError. The names it
        lists are what this account serves from now on."""
        try:
            credential = await self.service.credential(account)
        except antigravity.ProjectUnknown as exc:
            raise QuotaReadError(str(exc)) from None
        observations, models = await antigravity.read_available(
            self.service.http,
            self.hosts(account),
            credential,
            self.service.clock.now(),
            self.version(),
        )
        self.learn_models(account, models)
        return observations
