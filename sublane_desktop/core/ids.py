"""Identifiers: server-made request ids (R-PX-7), and who a client key belongs to (R-PX-1)."""

from __future__ import annotations

import os
import random
import threading
from dataclasses import dataclass

# Request ids must be unique, not unguessable: they name a request in logs and records and
# grant nothing. A seeded PRNG draws 96 bits without a system call per request (secrets did).
_draw = random.Random().getrandbits


@dataclass(frozen=True)
class KeyIdentity:
    key_id: int
    user_id: int
    group_id: int
    is_admin: bool


def new_request_id() -> str:
    return f"req_{_draw(96):024x}"


class _Entropy:
    """Bytes from the OS's CSPRNG, drawn a few KiB at a time: as unpredictable as `uuid4` or
    `secrets.token_hex`, without a system call for every id."""

    SIZE = 4096

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0
        self._lock = threading.Lock()  # two threads must never be handed the same bytes

    def take(self, nbytes: int) -> bytes:
        with self._lock:
            if self._at + nbytes > len(self._pool):
                self._pool, self._at = os.urandom(max(self.SIZE, nbytes)), 0
            start, self._at = self._at, self._at + nbytes
            return self._pool[start : self._at]


_entropy = _Entropy()


def random_hex(nbytes: int = 16) -> str:
    """An unguessable id: `nbytes` random bytes as hex (R-POOL-6's correlation ids)."""
    return _entropy.take(nbytes).hex()
