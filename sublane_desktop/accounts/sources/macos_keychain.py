"""The macOS Keychain through its `security` command: the one seam to it (tests on Linux put a
fake `security` script there, Places.security()).

Reads use `find-generic-password -s SERVICE -w` as the references do (better-ccflare); a write
goes through `security -i` on stdin with the value hex-encoded (`-X`), so a token never appears
in a process list.
"""

from __future__ import annotations

import subprocess

from sublane_desktop.accounts.credentials import CredentialError

TIMEOUT_S = 10.0  # the Keychain may ask the person to allow access; do not wait forever
NOT_FOUND = 44  # `security`'s exit status for "The specified item could not be found"


class ItemMissing(CredentialError):
    """No such item in the Keychain."""


def find(security: str, service: str) -> str:
    """The item's password text. Raises ItemMissing or CredentialError (in words)."""
    try:
        done = subprocess.run(
            [security, "find-generic-password", "-s", service, "-w"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except FileNotFoundError:
        raise CredentialError(f"cannot read the Keychain: {security} is not there") from None
    except subprocess.TimeoutExpired:
        raise CredentialError(
            f"the Keychain did not answer within {TIMEOUT_S:g}s (was access allowed?)"
        ) from None
    except OSError as exc:
        raise CredentialError(f"cannot read the Keychain: {exc.strerror or 'failed'}") from None
    if done.returncode == NOT_FOUND:
        raise ItemMissing(f"no Keychain item {service!r}")
    if done.returncode != 0:
        raise CredentialError(
            f"the Keychain refused to give out {service!r} (security exited {done.returncode})"
        )
    return done.stdout.rstrip("\n")


def account_of(security: str, service: str) -> str | None:
    """The account name an item is filed under (`"acct"<blob>="…"`), for updating it in place."""
    try:
        done = subprocess.run(
            [security, "find-generic-password", "-s", service],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in done.stdout.splitlines():
        line = line.strip()
        if line.startswith('"acct"<blob>="') and line.endswith('"'):
            return line[len('"acct"<blob>="') : -1]
    return None


def update(security: str, service: str, account: str, value: str) -> None:
    """Replace the item's password in place (`add-generic-password -U`)."""
    quoted = account.replace("\\", "\\\\").replace('"', '\\"')
    command = (
        f'add-generic-password -U -a "{quoted}" -s "{service}" -X {value.encode("utf-8").hex()}\n'
    )
    try:
        done = subprocess.run(
            [security, "-i"], input=command, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        raise CredentialError(f"could not update the Keychain item {service!r}") from None
    if done.returncode != 0:
        raise CredentialError(
            f"could not update the Keychain item {service!r} (security exited {done.returncode})"
        )
