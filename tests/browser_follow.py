"""The "browser" of the sign-in tests (R-LOGIN-1): opens the URL it is given and follows every
redirect, as a person's browser would after they consent, and prints nothing.

Used as `BROWSER="<python> tests/browser_follow.py %s"` (Python's webbrowser runs it), or
imported: `follow(url)` returns the final status and body.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.parse
import urllib.request

# Straight to loopback: the fakes and SubLane's redirect listener, never via a proxy.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def follow(url: str, timeout: float = 20.0) -> tuple[int, str]:
    try:
        with OPENER.open(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def redirect_of(url: str, timeout: float = 20.0) -> str:
    """Where the authorize page sends the browser (its Location), without going there: what a
    person copies from the address bar when the loopback page does not load."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
    try:
        opener.open(url, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code in (301, 302, 303, 307, 308):
            return exc.headers["Location"]
        raise
    raise AssertionError("the authorize page did not redirect")


def forged(url: str) -> tuple[int, str]:
    """A redirect that reaches SubLane with another state than the sign-in's (a forged or
    stray answer): the code is real, the state is not."""
    where = redirect_of(url)
    parts = urllib.parse.urlsplit(where)
    query = dict(urllib.parse.parse_qsl(parts.query))
    query["state"] = "not-this-sign-in"
    return follow(urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query))))


if __name__ == "__main__":
    if sys.argv[1] == "--wrong-state":
        forged(sys.argv[2])
    else:
        follow(sys.argv[1])
