"""Credential storage: the OS keyring, or an opt-in password-encrypted file (SPEC §9 R-ST-2).

Secrets never reach SQLite, logs or error messages; messages here name secrets, never values.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import keyring
import keyring.core
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from keyring.backend import KeyringBackend
from keyring.backends import chainer, fail, null
from keyring.errors import KeyringError, KeyringLocked, PasswordDeleteError

from sublane_desktop import file_modes

log = logging.getLogger(__name__)
T = TypeVar("T")

SERVICE = "sublane-desktop"
ADMIN_TOKEN = "admin-token"
BACKEND_ENV = "SUBLANE_KEYRING"
PASSWORD_ENV = "SUBLANE_KEYRING_PASSWORD"
FILE_NAME = "secrets.enc"


def account_secret(account_id: int | str) -> str:
    """The secret name under which an account's credential JSON is stored."""
    return f"account:{account_id}"


@dataclass(frozen=True)
class SecretHome:
    """Where secrets really go, for a person (Add account says it): `kind` is one of
    SYSTEM (the desktop's password store), OWN_FILE (SubLane's encrypted file), ENCRYPTED_FILE
    and PLAIN_FILE (keyrings.alt's file keyrings, chosen in the keyring settings) or FILE
    (another keyring kept in a file); `file` is that file, if any."""

    kind: str
    file: str | None = None


SYSTEM, OWN_FILE, ENCRYPTED_FILE, PLAIN_FILE, FILE = (
    "system",
    "own_file",
    "encrypted_file",
    "plain_file",
    "file",
)


class KeyringUnavailable(KeyringError):
    """The keyring cannot be used right now (absent, locked, hung, wrong password)."""


class SecretStore:
    """Get/set/delete named secrets under SERVICE, never blocking longer than `timeout`."""

    def __init__(
        self, data_dir: Path, backend: KeyringBackend | None = None, timeout: float = 5.0
    ) -> None:
        self.data_dir = Path(data_dir)
        self.timeout = timeout
        self._executor = _DaemonThreadExecutor()
        # One backend call at a time: the file keyring does read-modify-write, and a call
        # stuck behind a hung one gives up (see _guarded) instead of piling up threads.
        self._lock = threading.Lock()
        self._backend: KeyringBackend | None = None
        # Choosing a backend can itself block (get_keyring probes D-Bus), so it gets the
        # same timeout as every other call.
        self._backend = self._call(self._choose_backend, backend)
        self._stamp_path = _file_of(self._backend)
        log.info("secrets: %s", self.describe())

    def describe(self) -> str:
        b = self._backend
        if b is None:
            return "keyring not chosen yet"
        if isinstance(b, EncryptedFileKeyring):
            return f"encrypted file: {b.file_path}"
        if isinstance(b, chainer.ChainerBackend):
            return "OS keyring: " + ", ".join(k.name for k in b.backends)
        if hasattr(b, "file_path"):  # keyrings.alt file backends, chosen via the environment
            return f"keyring file ({b.name}): {b.file_path}"
        return f"OS keyring: {b.name}"

    def home(self) -> SecretHome:
        """describe() for people: no class names, only what kind of place it is."""
        from keyrings.alt.file import Encrypted, PlaintextKeyring  # as in _file_of

        b = self._chosen
        file = _file_of(b)
        if isinstance(b, EncryptedFileKeyring):
            return SecretHome(OWN_FILE, file)
        if isinstance(b, PlaintextKeyring):
            return SecretHome(PLAIN_FILE, file)
        if isinstance(b, Encrypted):
            return SecretHome(ENCRYPTED_FILE, file)
        other = getattr(b, "file_path", None)  # a third-party keyring kept in a file
        if file is None and other is not None:
            file = str(other)
        if file is not None:
            return SecretHome(FILE, file)
        return SecretHome(SYSTEM)

    # -- sync API --

    def get(self, name: str) -> str | None:
        return self._call(self._get, name)

    def set(self, name: str, value: str) -> None:
        _check_value(value)
        self._call(self._set, name, value)

    def delete(self, name: str) -> None:
        self._call(self._delete, name)

    # -- async API: same calls, off the event loop --

    async def aget(self, name: str) -> str | None:
        return await self._acall(self._get, name)

    async def aset(self, name: str, value: str) -> None:
        _check_value(value)
        await self._acall(self._set, name, value)

    async def adelete(self, name: str) -> None:
        await self._acall(self._delete, name)

    def stamp(self) -> tuple[int, ...] | None:
        """What the keyring looks like from outside, cheaply: a value that changes whenever its
        entries may have changed, or None when the backend cannot say (the OS keyrings).

        A keyring kept in a file (keyrings.alt's file backends, our encrypted file) rewrites
        that file on every set and delete, so the file's identity, size and times tell whether
        an entry read before could have vanished since (R-LOGIN-4) for the price of one
        `stat`, where reading the entry again costs a thread and a parse.
        """
        path = self._stamp_path
        if path is None:
            return None
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return (0,)  # no file: every entry is gone
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    # -- internals --

    @property
    def _chosen(self) -> KeyringBackend:
        assert self._backend is not None  # chosen in __init__, before any call can be made
        return self._backend

    def _get(self, name: str) -> str | None:
        return self._chosen.get_password(SERVICE, name)

    def _set(self, name: str, value: str) -> None:
        self._chosen.set_password(SERVICE, name, value)

    def _delete(self, name: str) -> None:
        try:
            self._chosen.delete_password(SERVICE, name)
        except PasswordDeleteError:
            pass  # already gone; callers want "absent afterwards", not "was present"

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        future = self._executor.submit(self._guarded, fn, *args)
        try:
            return future.result(timeout=self.timeout)
        except TimeoutError:
            raise self._timed_out() from None

    async def _acall(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(
                loop.run_in_executor(self._executor, self._guarded, fn, *args), self.timeout
            )
        except TimeoutError:
            raise self._timed_out() from None

    def _guarded(self, fn: Callable[..., T], *args: Any) -> T:
        """Run one backend call in the worker thread, turning keyring failures into ours."""
        if not self._lock.acquire(timeout=self.timeout):
            raise self._timed_out()
        try:
            return fn(*args)
        except KeyringUnavailable:
            raise
        except KeyringLocked as exc:
            raise KeyringUnavailable(
                f"keyring is locked ({self.describe()}); unlock it and retry"
            ) from exc
        except KeyringError as exc:
            # Only the class goes to the log: a person reads words (R-LOGIN-4), and a backend's
            # own message is not ours to vouch for (it may quote what it was handed).
            log.warning("keyring backend error: %s", type(exc).__name__)
            raise KeyringUnavailable(f"the keyring reported an error ({self.describe()})") from exc
        finally:
            self._lock.release()

    def _timed_out(self) -> KeyringUnavailable:
        return KeyringUnavailable(
            f"keyring did not answer within {self.timeout:g}s ({self.describe()}); "
            "is it locked or waiting on an unlock prompt?"
        )

    def _choose_backend(self, backend: KeyringBackend | None) -> KeyringBackend:
        if backend is not None:
            reason = _unusable_reason(backend, auto_detected=False)
        else:
            choice = os.environ.get(BACKEND_ENV, "")
            if choice == "file":
                return EncryptedFileKeyring(self.data_dir)
            if choice:
                raise KeyringUnavailable(f"{BACKEND_ENV}={choice!r} is not supported; use 'file'")
            backend = _configured_keyring()
            reason = _unusable_reason(backend, auto_detected=True)
        if reason:
            raise KeyringUnavailable(
                f"no usable OS keyring ({reason}); to keep secrets in an encrypted file "
                f"instead, set {BACKEND_ENV}=file and {PASSWORD_ENV}=<password> "
                f"(stored in {self.data_dir / FILE_NAME})"
            )
        return backend


def _configured_keyring() -> KeyringBackend:
    """keyring's own choice, honouring PYTHON_KEYRING_BACKEND and keyringrc.cfg (R-ST-2).

    A name there that does not load (a typo, a module not installed) makes keyring raise
    whatever the import raised; a person gets one line naming the setting to fix instead.
    """
    try:
        return keyring.get_keyring()
    except (ImportError, AttributeError, ValueError, TypeError) as exc:
        named = os.environ.get("PYTHON_KEYRING_BACKEND")
        where = (
            f"PYTHON_KEYRING_BACKEND={named!r}"
            if named is not None
            else "the keyringrc.cfg backend"
        )
        raise KeyringUnavailable(
            f"{where} cannot be loaded ({_first_line(exc)}); name a keyring backend class "
            "such as keyrings.alt.file.PlaintextKeyring, or unset it to use the OS keyring"
        ) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else "it is not a keyring backend"


def _unusable_reason(backend: KeyringBackend, auto_detected: bool) -> str | None:
    """Why `backend` cannot hold our secrets, or None if it can."""
    if isinstance(backend, (fail.Keyring, null.Keyring)):
        return f"{_class_path(backend)} stores nothing"
    if isinstance(backend, chainer.ChainerBackend):
        if not any(keyring.core.recommended(b) for b in backend.backends):
            return "the keyring chain has no recommended backend"
        return None
    if auto_detected and not keyring.core.recommended(backend) and not _explicitly_chosen():
        # With keyrings.alt installed and no desktop keyring, keyring quietly picks its
        # PlaintextKeyring; writing credentials unencrypted to ~/.local/share unasked is the
        # silent fallback the spec forbids. Naming it in PYTHON_KEYRING_BACKEND is fine.
        return f"only {_class_path(backend)} was found, which keyring does not recommend"
    return None


def _file_of(backend: KeyringBackend) -> str | None:
    """The file a file-kept keyring rewrites on every change, or None (an OS keyring)."""
    from keyrings.alt.file_base import FileBacked  # only here: quick commands never need it

    if isinstance(backend, (EncryptedFileKeyring, FileBacked)):
        return str(backend.file_path)
    return None


def _class_path(backend: KeyringBackend) -> str:
    return f"{type(backend).__module__}.{type(backend).__qualname__}"


def _explicitly_chosen() -> bool:
    return bool(os.environ.get("PYTHON_KEYRING_BACKEND")) or keyring.core.load_config() is not None


def _check_value(value: object) -> None:
    if not isinstance(value, str):
        # Say the type only: the value may be a secret.
        raise TypeError(f"secret value must be str, not {type(value).__name__}")


class _DaemonThreadExecutor(Executor):
    """One daemon thread per call.

    ThreadPoolExecutor joins its workers at interpreter exit, so a keyring call hung forever
    would hang quit; a daemon thread is simply abandoned. Calls are rare, threads are cheap.
    """

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)

        threading.Thread(target=run, name="sublane-keyring", daemon=True).start()
        return future


# Memory-hard enough to slow guessing (32 MiB, ~0.1 s), cheap enough for an app start.
_SCRYPT = {"n": 2**15, "r": 8, "p": 1}
_CHECK = b"sublane-desktop secrets"  # a known plaintext, so a wrong password is caught up front


class EncryptedFileKeyring(KeyringBackend):
    """Fernet-encrypted secrets in <data_dir>/secrets.enc for machines with no OS keyring.

    Layout: {"version", "kdf": {"salt", "n", "r", "p"}, "check", "secrets": {service: {name:
    token}}}. Only names are in the clear.
    """

    # Never picked by keyring's auto-detection: that builds each registered backend with no
    # arguments and skips those raising TypeError, and data_dir is required.
    priority = 0.1

    def __init__(self, data_dir: Path, password: str | None = None) -> None:
        super().__init__()
        password = password if password is not None else os.environ.get(PASSWORD_ENV)
        if not password:
            raise KeyringUnavailable(
                f"encrypted keyring: no password; set {PASSWORD_ENV} to unlock "
                f"{Path(data_dir) / FILE_NAME}"
            )
        self.file_path = Path(data_dir) / FILE_NAME
        self._password = password.encode()
        self._unlocked: tuple[str, Fernet] | None = None  # (salt, key): scrypt is slow on purpose
        self._lock = threading.Lock()

    def get_password(self, service: str, username: str) -> str | None:
        with self._lock:
            doc = self._read()
            if doc is None:
                return None
            token = doc["secrets"].get(service, {}).get(username)
            if token is None:
                return None
            try:
                return self._fernet(doc).decrypt(token.encode()).decode()
            except InvalidToken:
                raise KeyringUnavailable(
                    f"encrypted keyring: entry {service}/{username} is corrupt"
                ) from None

    def set_password(self, service: str, username: str, password: str) -> None:
        with self._lock:
            doc = self._read() or self._new_document()
            token = self._fernet(doc).encrypt(password.encode()).decode()
            doc["secrets"].setdefault(service, {})[username] = token
            self._write(doc)

    def delete_password(self, service: str, username: str) -> None:
        with self._lock:
            doc = self._read()
            entries = doc["secrets"].get(service, {}) if doc else {}
            if doc is None or username not in entries:
                raise PasswordDeleteError(f"no secret {service}/{username}")
            self._fernet(doc)  # only the password holder may delete
            del entries[username]
            if not entries:
                del doc["secrets"][service]
            self._write(doc)

    def _read(self) -> dict | None:
        try:
            doc = json.loads(self.file_path.read_bytes())
        except FileNotFoundError:
            return None
        except ValueError:
            raise KeyringUnavailable(
                f"encrypted keyring: {self.file_path} is not valid JSON"
            ) from None
        if doc.get("version") != 1:
            raise KeyringUnavailable(f"encrypted keyring: {self.file_path} has an unknown format")
        return doc

    def _new_document(self) -> dict:
        salt = base64.b64encode(os.urandom(16)).decode()
        kdf = {"salt": salt, **_SCRYPT}
        fernet = self._derive(kdf)
        self._unlocked = (salt, fernet)
        return {"version": 1, "kdf": kdf, "check": fernet.encrypt(_CHECK).decode(), "secrets": {}}

    def _fernet(self, doc: dict) -> Fernet:
        kdf = doc["kdf"]
        if self._unlocked and self._unlocked[0] == kdf["salt"]:
            return self._unlocked[1]
        fernet = self._derive(kdf)
        try:
            fernet.decrypt(doc["check"].encode())
        except InvalidToken:
            raise KeyringUnavailable("encrypted keyring: wrong password") from None
        self._unlocked = (kdf["salt"], fernet)
        return fernet

    def _derive(self, kdf: dict) -> Fernet:
        salt = base64.b64decode(kdf["salt"])
        scrypt = Scrypt(salt=salt, length=32, n=kdf["n"], r=kdf["r"], p=kdf["p"])
        return Fernet(base64.urlsafe_b64encode(scrypt.derive(self._password)))

    def _write(self, doc: dict) -> None:
        # Atomic and 0600 from the first byte: a crash leaves the old file or the new one.
        file_modes.write_private(self.file_path, json.dumps(doc, indent=1))
