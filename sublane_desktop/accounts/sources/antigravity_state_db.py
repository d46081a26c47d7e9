"""Antigravity's IDE state database, `<config dir>/Antigravity/User/globalStorage/state.vscdb`
(SQLite, table `ItemTable`): the key `jetskiStateSync.agentManagerInitState` holds a base64
protobuf whose field 6 is the OAuth token (1 access token, 3 refresh token, 4 expiry as a
Timestamp whose field 1 is seconds) — lbjlaq/Antigravity-Manager
`src-tauri/src/modules/migration.rs` (old format) and `utils/protobuf.rs`; the path per OS as
badrisnarayanan/antigravity-claude-proxy `src/constants.js` has it.

Antigravity 1.16.5 and later keep the same token message under
`antigravityUnifiedStateSync.oauthToken`, wrapped as a topic (AGM `utils/protobuf.rs`,
`decode_topic_row_payload`): base64 of {1: entry {1: key "oauthTokenInfoSentinelKey", 2: row
{1: base64 of the token message}}}; early tools wrote the row as the token message itself. That
key is read first, as AGM does; a value in neither shape is said in words. The database is the
IDE's: it is opened read-only and never written.
"""

from __future__ import annotations

import base64
import binascii
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sublane_desktop.accounts.credentials import CredentialError, validate_secret
from sublane_desktop.accounts.sources import Login, Places
from sublane_desktop.accounts.sources.tool_files import NotThere

KIND = "antigravity-state-db"
OLD_KEY = "jetskiStateSync.agentManagerInitState"
NEW_KEY = "antigravityUnifiedStateSync.oauthToken"


def config_root(places: Places) -> Path:
    if places.platform == "darwin":
        return places.home / "Library" / "Application Support"
    if places.platform.startswith("win"):
        appdata = places.environ.get("APPDATA")
        return Path(appdata) if appdata else places.home / "AppData" / "Roaming"
    xdg = places.environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg else places.home / ".config"


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise ValueError("truncated varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7


def fields(data: bytes) -> dict[int, Any]:
    """The first value of each field of a protobuf message (bytes or int)."""
    found: dict[int, Any] = {}
    at = 0
    while at < len(data):
        tag, at = _varint(data, at)
        number, wire = tag >> 3, tag & 7
        value: Any
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
        elif wire == 1:
            value, at = data[at : at + 8], at + 8
        elif wire == 5:
            value, at = data[at : at + 4], at + 4
        else:
            raise ValueError("unknown wire type")
        found.setdefault(number, value)
    return found


SENTINEL = b"oauthTokenInfoSentinelKey"


def unified_token_message(blob: str) -> bytes:
    """The token message inside `antigravityUnifiedStateSync.oauthToken` (ValueError if not)."""
    entry = fields(fields(base64.b64decode(blob, validate=True))[1])
    if entry.get(1) != SENTINEL:
        raise ValueError("not the OAuth token entry")
    row = entry[2]
    try:  # the topic row: field 1 holds the message in base64
        return base64.b64decode(fields(row)[1], validate=True)
    except (KeyError, TypeError, ValueError, binascii.Error):
        return row  # an early tool's row: the message itself


def token_of(blob: str, where: str, unified: bool = False) -> dict[str, Any]:
    from sublane_desktop.providers.antigravity import CLIENTS

    try:
        if unified:
            oauth = fields(unified_token_message(blob))
        else:
            oauth = fields(fields(base64.b64decode(blob))[6])
        access = oauth[1].decode("utf-8")
        refresh = oauth.get(3, b"").decode("utf-8")
        expiry = fields(oauth[4]).get(1) if isinstance(oauth.get(4), bytes) else None
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise CredentialError(f"{where} holds no Antigravity login SubLane can read") from None
    client_id, client_secret = CLIENTS["antigravity"]
    return validate_secret(
        "antigravity",
        {
            "access_token": access,
            "refresh_token": refresh,
            "expires_at": float(expiry) if isinstance(expiry, int) and expiry > 0 else 1.0,
            "client_id": client_id,
            "client_secret": client_secret,
        },
    )


@dataclass(frozen=True)
class AntigravityStateDb:
    location: str
    places: Places
    kind: str = KIND
    tool: str = "antigravity"
    title: str = "Antigravity's state database"
    provider: str = "antigravity"
    writable: bool = False  # the IDE's database: read, never written

    @classmethod
    def of(cls, places: Places) -> AntigravityStateDb:
        path = config_root(places) / "Antigravity" / "User" / "globalStorage" / "state.vscdb"
        return cls(str(path), places)

    def read(self) -> Login:
        path = Path(self.location)
        if not path.exists():
            raise NotThere(f"no Antigravity state database at {path}")
        try:
            db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=2.0)
            try:
                rows = dict(
                    db.execute(
                        "SELECT key, value FROM ItemTable WHERE key IN (?, ?)", (OLD_KEY, NEW_KEY)
                    ).fetchall()
                )
            finally:
                db.close()
        except sqlite3.Error:
            raise CredentialError(f"cannot read {path}: not a readable SQLite database") from None
        values = {
            key: value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            for key, value in rows.items()
        }
        newer = values.get(NEW_KEY)
        if isinstance(newer, str) and newer:  # Antigravity 1.16.5 and later
            try:
                secret = token_of(newer, str(path), unified=True)
            except CredentialError:
                if not values.get(OLD_KEY):
                    raise CredentialError(
                        f"{path} keeps Antigravity's login ({NEW_KEY}) in a shape SubLane"
                        " cannot read: use `sublane account login antigravity`"
                    ) from None
            else:
                return Login(KIND, self.location, "antigravity", secret)
        value = values.get(OLD_KEY)
        if isinstance(value, str) and value:
            return Login(KIND, self.location, "antigravity", token_of(value, str(path)))
        raise NotThere(f"no Antigravity login in {path}")

    def write(self, credential: dict[str, Any]) -> None:
        raise CredentialError("Antigravity's state database is never written")
