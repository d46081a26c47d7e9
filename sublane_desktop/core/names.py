"""What a person may name things and where an account may point (SPEC §2 bad input).

One place for the rule, used wherever accounts, client keys and members are made (the CLI,
the dialogs, sign-in and imports all end in the store's add functions or
`accounts.credentials.store_account`). A name is shown in tables, menus and tooltips and typed
back on the command line, so it must be visible text on one line. A base URL is where every
request of the account goes: anything but an http(s) address with a host would fail only later,
as 502s that cool the account, far from the typo that caused them.
"""

from __future__ import annotations

import urllib.parse


class BadInput(ValueError):
    """Input refused before anything is changed; the message says what is wrong, in words."""


def check_name(name: str, what: str) -> str:
    """`name` unchanged when it is usable, else BadInput naming `what` ("account", "key", ...)."""
    if not isinstance(name, str) or not name.strip():
        raise BadInput(f"{what} name must not be empty")
    if not name.isprintable():
        raise BadInput(f"{what} name must be one line of visible text")
    if name != name.strip():
        raise BadInput(f"{what} name must not start or end with a space")
    return name


def check_base_url(url: str) -> str:
    """`url` unchanged when it is an http:// or https:// address with a host, else BadInput."""
    problem = _base_url_problem(url)
    if problem is not None:
        raise BadInput(
            f"base URL {url!r} {problem}: give an http:// or https:// address with a host, "
            "e.g. https://api.anthropic.com"
        )
    return url


def _base_url_problem(url: str) -> str | None:
    if not isinstance(url, str) or not url:
        return "is empty"
    if url != url.strip() or any(c.isspace() or not c.isprintable() for c in url):
        return "contains spaces"
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        return "is not a URL"
    if parts.scheme not in ("http", "https"):
        return "is not an http or https address"
    if not parts.hostname:
        return "has no host"
    if parts.query or parts.fragment:
        return "must not carry a query or fragment"
    return None
