"""The OS keyring, as other tools use it (Codex, Antigravity): read and write one item, never
waiting on a locked or hung keyring longer than TIMEOUT_S."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from sublane_desktop.accounts.credentials import CredentialError

T = TypeVar("T")
TIMEOUT_S = 5.0


def _bounded(fn: Callable[[], T], what: str) -> T:
    result: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn())
        except BaseException as exc:  # reported below, in words
            failure.append(exc)

    worker = threading.Thread(target=run, daemon=True, name="tool-keyring")
    worker.start()
    worker.join(TIMEOUT_S)
    if worker.is_alive():
        raise CredentialError(f"the keyring did not answer within {TIMEOUT_S:g}s ({what})")
    if failure:
        raise CredentialError(f"the keyring could not be used ({what})")
    return result[0]


# keyring's stand-ins for "no keyring on this system": no tool can keep a login there either
NO_KEYRING = ("keyring.backends.fail", "keyring.backends.null")


def get(backend_of: Callable[[], Any], service: str, account: str) -> str | None:
    def read() -> str | None:
        backend = backend_of()
        if type(backend).__module__ in NO_KEYRING:
            return None
        value: str | None = backend.get_password(service, account)
        return value

    return _bounded(read, f"{service}")


def put(backend_of: Callable[[], Any], service: str, account: str, value: str) -> None:
    _bounded(lambda: backend_of().set_password(service, account, value), f"{service}")
