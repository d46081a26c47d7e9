"""The pure parts of a browser sign-in (R-LOGIN-1): the PKCE pair, the state, the authorize URL,
and reading what comes back (a redirect's query, a pasted redirect URL, Anthropic's pasted
`code#state`, or a bare code).

What it decides, in order: a verifier of 43+ URL-safe characters and its S256 challenge (RFC
7636 §4.1-4.2); a state of 32 random bytes; then, for an answer, whether it carries the
provider's error, whether its state is this sign-in's (a wrong state is refused before any code
is used, so a stray or forged redirect changes nothing), and the code.

No I/O and no third-party imports: the flow module does the network.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit


class AnswerError(ValueError):
    """What came back from the browser cannot be used; the message is safe to show (it never
    holds the code or the state)."""


@dataclass(frozen=True)
class Pkce:
    verifier: str
    challenge: str


def challenge_of(verifier: str) -> str:
    """S256: base64url(SHA-256(verifier)) without padding (RFC 7636 §4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def new_pkce() -> Pkce:
    # 64 random bytes: an 86-character verifier (RFC 7636 allows 43 to 128);
    # antigravity-claude-proxy draws 32 bytes, CLIProxyAPI 96.
    verifier = secrets.token_urlsafe(64)
    return Pkce(verifier, challenge_of(verifier))


def new_state() -> str:
    return secrets.token_urlsafe(32)


def authorize_url(endpoint: str, params: dict[str, str]) -> str:
    """The endpoint with the parameters as its query, in the order given."""
    joiner = "&" if urlsplit(endpoint).query else "?"
    return endpoint + joiner + urlencode(params)


@dataclass(frozen=True)
class Answer:
    """A code that passed the state check, and the redirect URI it came back to (when the
    answer was a URL: the exchange must name the same one)."""

    code: str
    redirect_uri: str | None = None


def read_query(query: dict[str, str], expected_state: str) -> Answer:
    """The loopback redirect's query: the provider's error, a state check, then the code."""
    error = query.get("error")
    if error:
        described = query.get("error_description") or error
        raise AnswerError(f"the provider refused the sign-in: {_short(described)}")
    state = query.get("state")
    if not state or not hmac.compare_digest(state.encode(), expected_state.encode()):
        raise AnswerError(
            "the answer is not from this sign-in (its state does not match); nothing was changed"
        )
    code = query.get("code")
    if not code:
        raise AnswerError("the answer carries no authorization code")
    return Answer(code)


def read_pasted(text: str, expected_state: str) -> Answer:
    """What a person pasted: the whole redirect URL, Anthropic's `code#state`, or a bare code
    (then there is no state to check: the code is bound to this sign-in's verifier anyway)."""
    text = text.strip()
    if not text:
        raise AnswerError("nothing was pasted: paste the code (or the whole address) shown")
    if text.startswith(("http://", "https://")):
        parts = urlsplit(text)
        query = {k: v[0] for k, v in parse_qs(parts.query).items() if v}
        answer = read_query(query, expected_state)
        uri = f"{parts.scheme}://{parts.netloc}{parts.path}"
        return Answer(answer.code, uri)
    if "#" in text:  # Anthropic's paste-back page shows code#state
        code, _, state = text.partition("#")
        return read_query({"code": code, "state": state}, expected_state)
    if any(c.isspace() for c in text):
        raise AnswerError("the pasted code has spaces in it: paste the code alone")
    return Answer(text)


def _short(text: str) -> str:
    """A provider's error text, one line and bounded."""
    line = " ".join(text.split())
    return line if len(line) <= 200 else line[:197] + "..."
