"""Reading and writing a tool's own login file: JSON in, JSON out, atomically and in its mode.

A tool's file is the tool's: a write keeps every field SubLane does not own, goes to a temp
file beside it and is renamed over it (a reader never sees half a file), and keeps the file's
mode (a 0600 login stays 0600).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from sublane_desktop.accounts.credentials import CredentialError
from sublane_desktop.core import json_text


class NotThere(CredentialError):
    """No login in this place: not a fault, the tool simply keeps none here."""


def read_json(path: Path, what: str) -> Any:
    """The file's JSON, NotThere when it is absent, or a CredentialError saying what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotThere(f"no {what} login at {path}") from None
    except IsADirectoryError:
        raise CredentialError(f"cannot read {path}: it is a directory") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "unreadable"
        raise CredentialError(f"cannot read {path}: {reason}") from None
    try:
        return json_text.parse(text)
    except json_text.TooDeep:
        raise CredentialError(
            f"{path} is not a login file: its JSON is nested too deeply"
        ) from None
    except ValueError:
        raise CredentialError(f"{path} is not valid JSON") from None


def write_json_atomically(path: Path, data: Any, indent: int | None = 2) -> None:
    """Replace `path` with `data` as the tool writes it: temp file, fsync, rename, same mode.
    A login file that is a symbolic link (a dotfile manager's) is written where it points."""
    if path.is_symlink():
        path = path.resolve()
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".sublane", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), mode)
            json.dump(data, out, indent=indent)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def identity_digest(identity: str | None) -> str | None:
    """What SQLite keeps of an account identity (`kind:value`): its kind and a digest of the
    value, enough to compare and nothing to read back."""
    if not identity:
        return None
    kind, _, value = identity.rpartition(":")
    return f"{kind}:{hashlib.sha256(value.encode('utf-8')).hexdigest()[:16]}"


def other_account(remembered: str | None, now: str | None) -> bool:
    """The digests name two different accounts. Identities of different kinds (a Claude account
    uuid against a plan, when `.claude.json` appeared or went) cannot be told apart: the same."""
    if not remembered or not now:
        return False
    if remembered.partition(":")[0] != now.partition(":")[0]:
        return False
    return remembered != now
