"""Why an account's credential cannot be used, in words a person can act on (R-UI-8, R-LOGIN-4).

The service notes a problem when reading a credential fails and forgets it when a read works
again, so the account's state says `auth_failed` with the reason instead of staying green
while every request through it fails.

Two kinds: a keyring that cannot be used at all (absent, locked, timing out) is a problem of
the machine — it ends when the keyring answers again, and is never stored as the account's own
failure; a credential missing from a working keyring, or unreadable, is the account's — it
gates the account until a credential is written for it again (signing in again, `account add
--replace`, an import of the same login: a new revision mends it in place, as after a refused
token refresh).

A problem belongs to the account revision it was seen under: a credential written by another
process (the CLI) moves the revision on, and the old reason no longer applies.

The words never carry a secret, a keyring's own error text or an exception's class name.
"""

from __future__ import annotations

from dataclasses import dataclass

KEYRING_UNAVAILABLE = (
    "the keyring is unavailable, so its credential cannot be read — set up "
    "a keyring from the Accounts window"
)
MISSING = "credential missing from the keyring"
UNREADABLE = "the stored credential could not be read"
REFUSED = "the sign-in was refused (token refresh rejected) — sign in again and re-import"

# The short fix, after the reason wherever an account's state is shown (tray, Accounts window,
# `account list`, the API's account view): what mends the account without removing it.
SIGN_IN_AGAIN = "sign in again"
ADD_KEY_AGAIN = "add its API key again"


def keyring_unreadable(words: str) -> str:
    """The reason when the keyring itself failed to answer; `words` is a KeyringUnavailable's
    text, which SecretStore keeps to words of ours."""
    return f"the keyring could not be read: {words}"


def own_reason(words: str, kind: str) -> str:
    """A problem of the account's own credential, with the fix for its kind of login."""
    return f"{words} — {SIGN_IN_AGAIN if kind != 'api_key' else ADD_KEY_AGAIN}"


def mend_hint(name: str, kind: str) -> str:
    """The fix spelled out with commands, for a request's error and the CLI."""
    if kind == "api_key":
        return (
            "add its API key again under the same name (Add account, or "
            f"`sublane account add --replace --name {name}` …); it is replaced in place"
        )
    return (
        f"sign in again (Sign in again in the tray, or `sublane account login {name}`), or add "
        f"its credential again under the same name (`sublane account add --replace --name {name}`"
        " …); it is mended in place"
    )


class CredentialUnavailable(Exception):
    """An account's credential cannot be used right now. Its text names the account, what is
    wrong and the fix, and is safe to show anywhere (no secret, no keyring text).

    `reason` is what the account's state says; `words`, for a problem of the account's own
    credential, the same without its short fix, which the text spells out with commands.
    """

    def __init__(self, name: str, kind: str, reason: str, words: str | None = None) -> None:
        self.name = name
        self.reason = reason
        self.own = words is not None  # the account's own credential (gated), not the keyring
        if words is None:
            super().__init__(f"account {name}: {reason}")
        else:
            super().__init__(f"account {name}: {words}; {mend_hint(name, kind)}")


@dataclass(frozen=True)
class Problem:
    reason: str
    machine: bool  # the keyring's, not the account's own: it ends when the keyring answers
    revision: int | None  # the account revision it was seen under (None: any)


class CredentialProblems:
    def __init__(self) -> None:
        self._problems: dict[int, Problem] = {}

    def note(
        self, account_id: int, reason: str, *, machine: bool = False, revision: int | None = None
    ) -> bool:
        """Remember the reason; True when this is news (the view should refresh)."""
        problem = Problem(reason, machine, revision)
        if self._problems.get(account_id) == problem:
            return False
        self._problems[account_id] = problem
        return True

    def clear(self, account_id: int) -> bool:
        return self._problems.pop(account_id, None) is not None

    def clear_passing(self, account_id: int) -> bool:
        """A read worked: forget a problem of the keyring (the account's own stays until a
        credential is written again). True when something was forgotten."""
        problem = self._problems.get(account_id)
        if problem is None or not problem.machine:
            return False
        del self._problems[account_id]
        return True

    def clear_keyring(self) -> list[int]:
        """The keyring works again: forget the problems it caused."""
        gone = [a for a, p in self._problems.items() if p.machine]
        for account_id in gone:
            del self._problems[account_id]
        return gone

    def _current(self, account_id: int, revision: int | None) -> Problem | None:
        problem = self._problems.get(account_id)
        if problem is None:
            return None
        if revision is not None and problem.revision not in (None, revision):
            return None  # seen under an older credential: a new one was written since
        return problem

    def reason(self, account_id: int, revision: int | None = None) -> str | None:
        problem = self._current(account_id, revision)
        return problem.reason if problem else None

    def own(self, account_id: int, revision: int | None = None) -> bool:
        """Whether a problem of the account's own credential is known (missing, unreadable,
        refused): it holds until a credential is written for the account again."""
        problem = self._current(account_id, revision)
        return problem is not None and not problem.machine
