"""The authorization-code grant with PKCE as the three fakes' OAuth servers speak it
(R-LOGIN-1): an authorize page that sends the browser back to the redirect URI with `code` and
`state`, and the token endpoint's `grant_type=authorization_code`.

Like the real servers it refuses (docs/upstreams.md lists each rule with its source): an
unknown client, a redirect URI the client has not registered, a missing or non-S256 challenge,
a missing state; at the exchange, a code it never issued or already exchanged (codes are
single-use), another client or redirect URI than the authorize request named, a verifier whose
SHA-256 is not the challenge, and (Anthropic, which takes `state` in the exchange body) another
state. Each fake says it in its provider's words (`Words`).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from aiohttp import web


@dataclass
class Grant:
    """What one authorize request asked for, kept under the code it was given."""

    client_id: str
    redirect_uri: str
    challenge: str
    state: str
    scope: str
    query: dict[str, str] = field(default_factory=dict)  # everything the authorize URL held


@dataclass
class Words:
    """One provider's refusals: (status, JSON body) for each rule the exchange enforces."""

    bad_code: tuple[int, dict[str, Any]]  # unknown, spent, or issued to another exchange
    bad_verifier: tuple[int, dict[str, Any]]
    bad_redirect: tuple[int, dict[str, Any]]
    bad_client: tuple[int, dict[str, Any]]
    bad_state: tuple[int, dict[str, Any]] | None = None  # only where the body carries state


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass
class AuthorizationServer:
    """One provider's authorize page and code exchange; `issue` makes the token answer."""

    client_id: str
    redirect_ok: Callable[[str], bool]
    words: Words
    issue: Callable[[Grant], dict[str, Any]]
    prefix: str = "code"
    grants: dict[str, Grant] = field(default_factory=dict)
    spent: set[str] = field(default_factory=set)
    authorize_calls: list[dict[str, str]] = field(default_factory=list)
    exchanges: list[dict[str, str]] = field(default_factory=list)
    _n: Any = field(default_factory=lambda: itertools.count(1))

    def refuse_authorize(self, query: dict[str, str]) -> str | None:
        """Why the authorize page would show an error instead of redirecting, or None."""
        if query.get("client_id") != self.client_id:
            return "Invalid client: the client_id is not registered."
        if not self.redirect_ok(query.get("redirect_uri", "")):
            return "Invalid redirect_uri: not registered for this client."
        if query.get("response_type") != "code":
            return "Unsupported response_type."
        if not query.get("code_challenge"):
            return "Missing code_challenge parameter"
        if query.get("code_challenge_method") != "S256":
            return "Unsupported code_challenge_method."
        if not query.get("state"):
            return "Missing state parameter"
        return None

    async def authorize(self, request: web.Request) -> web.Response:
        """The page a person signs in on; here it consents at once and redirects back."""
        query = dict(request.query)
        self.authorize_calls.append(query)
        refused = self.refuse_authorize(query)
        if refused is not None:
            return web.Response(status=400, text=f"Invalid OAuth request: {refused}")
        code = f"{self.prefix}-{next(self._n)}-{secrets.token_urlsafe(12)}"
        self.grants[code] = Grant(
            client_id=query["client_id"],
            redirect_uri=query["redirect_uri"],
            challenge=query["code_challenge"],
            state=query["state"],
            scope=query.get("scope", ""),
            query=query,
        )
        where = query["redirect_uri"]
        joiner = "&" if urlsplit(where).query else "?"
        raise web.HTTPFound(where + joiner + urlencode({"code": code, "state": query["state"]}))

    def exchange(self, fields: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """`grant_type=authorization_code`: the token answer, or the provider's refusal."""
        self.exchanges.append(dict(fields))
        if fields.get("client_id") != self.client_id:
            return self.words.bad_client
        code = fields.get("code", "")
        grant = self.grants.get(code)
        if grant is None or code in self.spent:
            return self.words.bad_code
        if fields.get("redirect_uri") != grant.redirect_uri:
            return self.words.bad_redirect
        verifier = fields.get("code_verifier") or ""
        if not verifier or s256(verifier) != grant.challenge:
            return self.words.bad_verifier
        if self.words.bad_state is not None and fields.get("state") != grant.state:
            return self.words.bad_state
        self.spent.add(code)
        return 200, self.issue(grant)


async def paste_back_page(request: web.Request) -> web.Response:
    """Anthropic's paste-back page (`/oauth/code/callback`): it shows `code#state` for the
    person to copy into the terminal (Claude Code's manual sign-in)."""
    code = request.query.get("code", "")
    state = request.query.get("state", "")
    return web.Response(
        text=f'<html><body><p>Paste this into Claude Code:</p><code id="code">{code}#{state}</code>'
        "</body></html>",
        content_type="text/html",
    )


def loopback(path: str, ports: set[int] | None = None) -> Callable[[str], bool]:
    """A redirect URI check: `http://localhost:<port><path>`, any port unless `ports` names
    the registered ones."""

    def ok(uri: str) -> bool:
        parts = urlsplit(uri)
        if parts.scheme != "http" or parts.hostname != "localhost" or parts.path != path:
            return False
        if parts.query or parts.fragment:
            return False
        return ports is None or parts.port in ports

    return ok
