"""Identifiers: server-made request ids (R-PX-7), and who a client key belongs to (R-PX-1)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass


@dataclass(frozen=True)
class KeyIdentity:
    key_id: int
    user_id: int
    group_id: int
    is_admin: bool


def new_request_id() -> str:
    return "req_" + secrets.token_hex(12)
