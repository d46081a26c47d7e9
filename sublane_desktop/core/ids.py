"""Identifiers: server-made request ids (R-PX-7), and who a client key belongs to (R-PX-1)."""

from __future__ import annotations

import random
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
