"""Asking the upstreams what they serve (R-AG-5) and whether a credential works (R-AG-6).

Both are one cheap authenticated call, a metadata operation: it takes a slot of the global
cap, never an account's model slot (R-POOL-11), and a full cap means "not now" rather than a
wait. Discovery answers are kept by `core.catalog.ModelCatalog`; verify only reports and
changes no account state (a person asks "does this login work?", and the answer must not pause
or repair anything behind their back).

Each call is one the upstream accepts for that kind of credential (R-WF-3): Anthropic's model
list takes API keys only, so an Anthropic subscription login lists the static catalog and is
verified with its usage endpoint. A metadata call never refreshes a token that is not about to
expire: the credential read refreshes one that is, and a refusal of a token with a known,
distant expiry is the answer, not a reason to rotate the login's refresh token.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import aiohttp

from sublane_desktop.accounts.problems import CredentialUnavailable
from sublane_desktop.core.catalog import OWNERS, ModelCatalog, model_ids
from sublane_desktop.core.pool import AccountState
from sublane_desktop.core.tasks import spawn
from sublane_desktop.providers import anthropic, antigravity, codex
from sublane_desktop.providers.unreachable import why_unreachable

log = logging.getLogger(__name__)

ASK_TIMEOUT_SECONDS = 10.0  # a list call is small; a slow upstream falls back to the menu


def lists_models(account: AccountState) -> bool:
    """Whether the account's login may ask its upstream's model list (R-WF-3)."""
    return account.provider != "anthropic" or account.kind == "api_key"


def refused_statuses(account: AccountState) -> tuple[int, ...]:
    """Answers that say "this token is no good": Google says 403 as often as 401."""
    return (401, 403) if account.provider == "antigravity" else (401,)


def expiry_unknown(credential: Any) -> bool:
    """A login token whose expiry we were never told (a refresh may mend its refusal)."""
    return (
        "api_key" not in credential
        and bool(credential.get("refresh_token"))
        and not isinstance(credential.get("expires_at"), (int, float))
    )


@dataclass(frozen=True)
class Answer:
    status: int | None  # None: no HTTP answer at all
    body: Any = None
    detail: str = ""
    unusable: bool = False  # no call made: the credential could not be used (detail says why)


class ModelDiscovery:
    def __init__(self, service: Any) -> None:
        self.service = service
        self.catalog = ModelCatalog(service.clock)
        self._asking: dict[str, asyncio.Task[None]] = {}

    # --- discovery ------------------------------------------------------------------------------

    async def models_for_group(self, group_id: int) -> list[tuple[str, str]]:
        """(model id, owner) pairs the group can reach, asking due providers first."""
        by_provider: dict[str, AccountState] = {}
        # An account whose login can ask the list goes first (an Anthropic API key before a
        # subscription login, which cannot).
        for account in sorted(
            self.service.pool.accounts.values(), key=lambda a: (not lists_models(a), a.id)
        ):
            if group_id in account.group_ids and account.enabled and not account.auth_failed:
                by_provider.setdefault(account.provider, account)
        due = [
            self._refresh(provider, account)
            for provider, account in by_provider.items()
            if lists_models(account) and self.catalog.due(provider)
        ]
        if due:
            await asyncio.gather(*due)
        seen: set[str] = set()
        listed: list[tuple[str, str]] = []
        for provider in sorted(by_provider):
            for model in self.catalog.models(provider):
                if model not in seen:  # Antigravity also serves Claude names: list them once
                    seen.add(model)
                    listed.append((model, OWNERS.get(provider, provider)))
        return listed

    async def _refresh(self, provider: str, account: AccountState) -> None:
        """One ask per provider at a time; concurrent callers wait for the same answer."""
        task = self._asking.get(provider)
        if task is None:
            task = spawn(self._learn(provider, account), name=f"models-{provider}")
            self._asking[provider] = task
            task.add_done_callback(lambda _t: self._asking.pop(provider, None))
        await asyncio.shield(task)

    async def _learn(self, provider: str, account: AccountState) -> None:
        answer = await self.ask(account)
        found = model_ids(answer.body) if answer.status == 200 else []
        if not found:
            log.info(
                "model list for %s unavailable (%s); using the static menu",
                provider,
                answer.detail or answer.status,
            )
        self.catalog.learn(provider, found or None)

    # --- verify ---------------------------------------------------------------------------------

    async def verify(self, account: AccountState) -> dict[str, Any]:
        self.service.credentials.recheck(account)  # "does it work now?": read the keyring now
        answer = await self.ask(account, verify=True)
        if answer.unusable:
            # R-LOGIN-4: what is wrong with the credential, in words ("credential missing from
            # the keyring — sign in again"), never an exception's name
            result, detail = "auth_failed", answer.detail
        elif answer.status is not None and 200 <= answer.status < 300:
            result, detail = "ok", "the credential works"
        elif answer.status in (401, 403):
            result, detail = (
                "auth_failed",
                f"the upstream refused the credential (HTTP {answer.status})",
            )
        elif answer.status is None:
            # A credential that cannot be used says why (R-UI-8), e.g. an Antigravity login
            # that has no project even after onboarding (R-WF-5).
            reason = self.service.credential_problems.reason(account.id)
            result, detail = ("auth_failed", reason) if reason else ("unreachable", answer.detail)
        else:
            result, detail = "unreachable", f"the upstream answered HTTP {answer.status}"
        return {
            "id": account.id,
            "name": account.name,
            "provider": account.provider,
            "result": result,
            "detail": detail,
        }

    # --- the one call ---------------------------------------------------------------------------

    async def ask(self, account: AccountState, *, verify: bool = False) -> Answer:
        pool = self.service.pool
        if not pool.try_metadata_slot():
            return Answer(None, detail="every slot of the global cap is busy; try again shortly")
        try:
            try:
                # refreshes a token about to expire (the one refresh a metadata call may cause)
                credential = await self.service.credential(account)
            except CredentialUnavailable as exc:  # words of ours, noted on the account too
                return Answer(None, detail=exc.reason, unusable=True)
            except antigravity.ProjectUnknown as exc:  # its text is ours and secret-free
                return Answer(None, detail=str(exc))  # a lasting one is noted on the account
            except Exception as exc:  # never echo the secret store's text, nor a class name
                log.warning(
                    "credential for account %s unusable: %s", account.id, type(exc).__name__
                )
                return Answer(None, detail="its credential could not be used", unusable=True)
            answer = await self._get(account, credential, verify)
            if answer.status in refused_statuses(account) and expiry_unknown(credential):
                # A token with no recorded expiry may have lapsed: refresh once, as requests
                # do. One with a known expiry that is not near was refused for another reason.
                try:
                    fresh = await self.service.refresh_credential(account, seen=credential)
                except Exception:
                    return answer
                answer = await self._get(account, fresh, verify)
            return answer
        finally:
            pool.release_metadata_slot()

    async def _get(self, account: AccountState, credential: Any, verify: bool = False) -> Answer:
        payload: dict[str, Any] | None = None
        url: str | None
        if account.provider == "antigravity":  # fetchAvailableModels is a POST
            url, headers, payload = self.service.antigravity.models_call(account, credential)
        else:
            url, headers = self._call(account, credential, verify)
        if url is None:
            return Answer(None, detail=f"{account.provider} has no model list")
        try:
            async with self.service.http.request(
                "POST" if payload is not None else "GET",
                url,
                headers=headers,
                json=payload,
                timeout=aiohttp.ClientTimeout(total=ASK_TIMEOUT_SECONDS),
            ) as resp:
                try:
                    body = await resp.json(content_type=None)
                except ValueError:
                    body = None
                if account.provider == "antigravity" and resp.status == 200:
                    # what this account is served, for the spill (R-WF-6)
                    models = antigravity.available_models(body)
                    self.service.antigravity.learn_models(account, models)
                return Answer(resp.status, body)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return Answer(None, detail=f"could not reach the upstream: {why_unreachable(exc)}")

    def _call(
        self, account: AccountState, credential: Any, verify: bool = False
    ) -> tuple[str | None, dict[str, str]]:
        service = self.service
        if account.provider == "anthropic":
            base = account.base_url or service.base_url("anthropic")
            if verify:
                return anthropic.verify_call(base, credential)
            return anthropic.models_call(base, credential)
        if account.provider == "codex":
            base = codex.base_for(
                account.base_url, credential, service.base_url("codex"), service.base_url("openai")
            )
            return codex.models_call(
                base, credential, str(service.settings.get("codex.client_version", ""))
            )
        return None, {}
