"""Browser sign-in (R-LOGIN-1): run one provider's `LoginFlow` from the authorize URL to the
account's secret, then settle the account in a service (verify, read its quota).

The order: listen for the answer on 127.0.0.1 (the flow's port, its registered fallback, or any
free port; a taken port is one clear error before any browser opens), open the system browser
(a seam: tests pass an HTTP client that follows the redirect), wait for the redirect with a
timeout, check the state before the code is used, exchange the code with the PKCE verifier.
With `--no-browser` nothing listens: the URL is shown and the person pastes the code, the
`code#state` of Anthropic's paste-back page, or the whole address the browser ended on.

Codes, tokens and the state never reach a log, an error or the output: the loopback server
keeps no access log, and every error here is built from fixed words and the provider's own
error fields.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import threading
import time
import webbrowser
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from sublane_desktop.accounts import pkce
from sublane_desktop.accounts.login_flow import LoginFlow, TokenAnswerError
from sublane_desktop.core import json_text
from sublane_desktop.providers.unreachable import why_unreachable

DEFAULT_TIMEOUT = 300.0  # a person signing in, perhaps with a second factor
PORT_ENV = "SUBLANE_LOGIN_PORT"  # listen here instead of the flow's own port(s)
TIMEOUT_ENV = "SUBLANE_LOGIN_TIMEOUT"  # seconds to wait for the browser's answer

Browser = Callable[[str], Any]  # opens a URL; called on a worker thread (browsers may block)
Paste = Callable[[], Awaitable[str]]  # what the person pasted


class SignInError(Exception):
    """A sign-in that did not complete: one line a person can act on, with no secret in it."""


@dataclass(frozen=True)
class SignedIn:
    flow: LoginFlow
    secret: dict[str, Any]
    who: str | None  # the account's e-mail when the answer names it


def system_browser(url: str) -> Any:
    return webbrowser.open(url)


def timeout_from(env: Mapping[str, str]) -> float:
    raw = env.get(TIMEOUT_ENV)
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise SignInError(f"{TIMEOUT_ENV} must be a number of seconds") from None
    if not 0 < value <= 3600:
        raise SignInError(f"{TIMEOUT_ENV} must be from 0 to 3600 seconds")
    return value


def ports_for(flow: LoginFlow, env: Mapping[str, str]) -> tuple[int, ...]:
    raw = env.get(PORT_ENV)
    if not raw:
        return flow.ports or (0,)
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise SignInError(f"{PORT_ENV} must be a port number from 1 to 65535")
    return (int(raw),)


class Loopback:
    """The one-shot HTTP server the browser is sent back to."""

    def __init__(self, flow: LoginFlow, state: str) -> None:
        self.flow = flow
        self.state = state
        self.answer: asyncio.Future[pkce.Answer] = asyncio.get_running_loop().create_future()
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self, ports: tuple[int, ...]) -> int:
        app = web.Application()
        app.router.add_get(self.flow.redirect_path, self._callback)
        # access_log=None: the redirect's query holds the code; it must not reach a log.
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        taken: list[int] = []
        for port in ports:
            # asyncio's default (SO_REUSEADDR on POSIX only): a port the last sign-in closed
            # moments ago (TIME_WAIT) can be listened on again, one another program listens on
            # cannot; Windows would let a second listener steal it, so it is not set there.
            site = web.TCPSite(self._runner, "127.0.0.1", port)
            try:
                await site.start()
            except OSError as exc:
                if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                    await self.stop()
                    raise SignInError(
                        f"cannot listen on 127.0.0.1:{port} for the sign-in answer: "
                        f"{exc.strerror or type(exc).__name__}"
                    ) from None
                taken.append(port)
                continue
            server = site._server
            sockets = getattr(server, "sockets", None) or []
            self.port = sockets[0].getsockname()[1] if sockets else port
            return self.port
        await self.stop()
        which = " and ".join(f"127.0.0.1:{p}" for p in taken)
        raise SignInError(
            f"cannot listen for the sign-in answer: {which} "
            f"{'is' if len(taken) == 1 else 'are'} taken (another sign-in may still be "
            "waiting there); close it and try again"
        )

    async def _callback(self, request: web.Request) -> web.Response:
        if self.answer.done():
            return _page(400, "This sign-in is already finished. You can close this window.")
        try:
            answer = pkce.read_query(dict(request.query), self.state)
        except pkce.AnswerError as exc:
            self.answer.set_exception(SignInError(str(exc)))
            return _page(400, f"Sign-in failed: {exc}.")
        self.answer.set_result(answer)
        return _page(200, "Signed in. You can close this window and return to SubLane.")

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def _page(status: int, text: str) -> web.Response:
    body = f"<!doctype html><title>SubLane sign-in</title><p>{_escape(text)}</p>"
    return web.Response(status=status, text=body, content_type="text/html")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


async def sign_in(
    flow: LoginFlow,
    *,
    env: Mapping[str, str],
    show_url: Callable[[str], None],
    browser: Browser | None = system_browser,
    paste: Paste | None = None,
    timeout: float | None = None,
    now: Callable[[], float] = time.time,
) -> SignedIn:
    """One sign-in, start to secret. `paste` set: the `--no-browser` way (nothing listens).
    Raises SignInError."""
    wait = timeout if timeout is not None else timeout_from(env)
    pair = pkce.new_pkce()
    state = pkce.new_state()
    if paste is not None:
        redirect_uri = flow.paste_back_uri(env) or flow.loopback_uri(ports_for(flow, env)[0])
        show_url(_authorize(flow, env, redirect_uri, pair, state))
        try:
            text = await asyncio.wait_for(paste(), wait)
        except TimeoutError:
            raise SignInError(
                f"no code was pasted within {wait:g} s; nothing was changed"
            ) from None
        try:
            answer = pkce.read_pasted(text, state)
        except pkce.AnswerError as exc:
            raise SignInError(str(exc)) from None
    else:
        loopback = Loopback(flow, state)
        port = await loopback.start(ports_for(flow, env))
        try:
            redirect_uri = flow.loopback_uri(port)
            url = _authorize(flow, env, redirect_uri, pair, state)
            show_url(url)
            if browser is not None:
                _open_in_background(browser, url)
            try:
                answer = await asyncio.wait_for(asyncio.shield(loopback.answer), wait)
            except TimeoutError:
                raise SignInError(
                    f"no answer from the browser within {wait:g} s (was the page closed?); "
                    "nothing was changed"
                ) from None
        finally:
            await loopback.stop()
    return await exchange(flow, env, answer.code, redirect_uri, pair.verifier, state, now())


def _open_in_background(browser: Browser, url: str) -> None:
    """On a daemon thread: some browsers block until they are closed, and a sign-in must not
    wait for that (nor the process's exit). A browser that cannot be opened is no error: the
    URL is on screen to open by hand."""

    def run() -> None:
        with contextlib.suppress(Exception):
            browser(url)

    threading.Thread(target=run, name="sign-in-browser", daemon=True).start()


def _authorize(
    flow: LoginFlow, env: Mapping[str, str], redirect_uri: str, pair: pkce.Pkce, state: str
) -> str:
    params = flow.authorize_params(redirect_uri, pair.challenge, state)
    return pkce.authorize_url(flow.authorize_endpoint(env), params)


async def exchange(
    flow: LoginFlow,
    env: Mapping[str, str],
    code: str,
    redirect_uri: str,
    verifier: str,
    state: str,
    now: float,
) -> SignedIn:
    """The authorization code for tokens at the flow's token endpoint (JSON or a form)."""
    fields = flow.exchange_fields(code, redirect_uri, verifier, state)
    url = flow.token_endpoint(env)
    kwargs: dict[str, Any] = {"json": fields} if flow.body == "json" else {"data": fields}
    try:
        async with aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=30), trust_env=True
        ) as http:
            async with http.post(url, headers={"Accept": "application/json"}, **kwargs) as resp:
                status = resp.status
                text = await resp.text()
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise SignInError(
            f"could not reach {flow.label}'s sign-in server: {why_unreachable(exc)}; "
            "nothing was changed"
        ) from None
    answer = _json(text)
    if status != 200:
        raise SignInError(
            f"{flow.label} refused the sign-in (HTTP {status}: {_refusal(answer)}); "
            "nothing was changed"
        )
    if answer is None:
        raise SignInError(f"{flow.label}'s sign-in server answered something that is not JSON")
    try:
        secret = flow.to_secret(answer, now)
    except TokenAnswerError as exc:
        raise SignInError(f"{flow.label}'s sign-in answer cannot be used: {exc}") from None
    return SignedIn(flow, secret, flow.describe(answer))


def _json(text: str) -> dict[str, Any] | None:

    try:
        value = json_text.parse(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _refusal(answer: dict[str, Any] | None) -> str:
    """The provider's reason in its own fields (OAuth's error/error_description, or an API
    error object's type/message), one line and bounded; never the request's values."""
    if answer is None:
        return "no reason given"
    error = answer.get("error")
    parts: list[str] = []
    if isinstance(error, dict):
        for key in ("code", "type", "message"):
            if isinstance(error.get(key), str) and error[key]:
                parts.append(error[key])
    elif isinstance(error, str):
        parts.append(error)
    if isinstance(answer.get("error_description"), str):
        parts.append(answer["error_description"])
    text = " — ".join(dict.fromkeys(parts)) or "no reason given"
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


# --- after the tokens: the account in a service ---------------------------------------------------


async def settle(service: Any, account_id: int) -> dict[str, Any]:
    """Verify the new credential and wait for its first quota read, so the account shows real
    gauges (R-LOGIN-1). The read is the one the account's arrival started (R-UI-14,
    service/fresh_gauges.py), joined rather than sent again. Returns the verdict and the
    account's view; a failed quota read is said in words, never raised."""
    await service.refresh_catalog()
    account = service.pool.find(account_id)
    verdict = await service.verify(account_id)
    if verdict.get("result") == "ok":
        quota = await service.quota.read_signed_in(account)
    else:
        quota = "not read (the credential did not verify)"
    return {"verdict": verdict, "quota": quota, "account": service.account_view(account_id)}


def default_name(signed: SignedIn, taken: set[str]) -> str:
    """The account's e-mail when the answer names it (the same person signing in twice then
    meets their account, not a copy of it), else `<provider>-<n>`, the first free."""
    if signed.who:
        return signed.who
    n = 1
    while f"{signed.flow.name}-{n}" in taken:
        n += 1
    return f"{signed.flow.name}-{n}"


async def sign_in_for(
    service: Any,
    which: str,
    *,
    account: str | int | None = None,
    name: str | None = None,
    browser: Browser | None = None,
    show_url: Callable[[str], None] | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """The GUI's sign-in through a running service: `which` a flow (claude, codex,
    antigravity) for a new account, or `account` (id or name) to sign in again in place.
    Stores the credential, then settles the account; returns `settle`'s answer."""
    from sublane_desktop.accounts import credentials
    from sublane_desktop.accounts.login_flow import flow_for_provider, flows

    existing = None
    if account is not None:
        try:
            existing = service.pool.find(account)
        except KeyError:
            raise SignInError(f"unknown account {account!r}") from None
        found = flow_for_provider(existing.provider)
        if found is None:
            raise SignInError(f"{existing.provider} accounts have no browser sign-in")
        flow = found
    else:
        known = flows()
        if which not in known:
            raise SignInError(f"no browser sign-in for {which!r}")
        flow = known[which]
        if name is not None and any(a.name == name for a in service.pool.accounts.values()):
            raise SignInError(f"account {name!r} already exists; sign it in again instead")
    signed = await sign_in(
        flow,
        env=service.env,
        show_url=show_url or (lambda url: None),
        browser=browser or system_browser,
        timeout=timeout,
        now=service.clock.now,
    )
    if existing is not None:
        target = existing.name
    else:
        target = name or default_name(signed, {a.name for a in service.pool.accounts.values()})
    try:
        account_id = await service.catalog.add_account(
            flow.provider, target, signed.secret, replace=existing is not None
        )
    except credentials.CredentialError as exc:
        hint = ""
        if existing is None and "already exists" in str(exc):
            hint = "; to give it this login, use Sign in again on it (tray or Accounts window)"
        raise SignInError(f"{exc}{hint}") from None
    return await settle(service, account_id)
