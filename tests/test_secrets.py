import asyncio
import json
import stat
import threading
import time

import keyring
import keyring.backend
import keyring.core
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail, null
from keyring.errors import KeyringLocked
from keyrings.alt.file import PlaintextKeyring

from sublane_desktop.accounts.secrets import (
    ADMIN_TOKEN,
    SERVICE,
    EncryptedFileKeyring,
    KeyringUnavailable,
    SecretStore,
    account_secret,
)

SECRET = '{"access_token": "sk-very-secret-value-123"}'


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in ("SUBLANE_KEYRING", "SUBLANE_KEYRING_PASSWORD", "PYTHON_KEYRING_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    # keyring caches its chosen backend process-wide; put back whatever was there.
    previous = keyring.get_keyring()
    yield
    keyring.core.set_keyring(previous)


def plaintext_backend(tmp_path):
    # file_path is a NonDataProperty in keyrings.alt 5, so an instance attribute overrides it.
    backend = PlaintextKeyring()
    backend.file_path = str(tmp_path / "k.cfg")
    return backend


@pytest.fixture
def store(tmp_path):
    return SecretStore(tmp_path, backend=plaintext_backend(tmp_path))


# Test-only backends take a constructor argument so keyring's auto-detection, which builds
# every registered backend with no arguments, never picks them up in other tests.
class HangingKeyring(KeyringBackend):
    priority = 0.1

    def __init__(self, release: threading.Event) -> None:
        super().__init__()
        self.release = release

    def get_password(self, service, username):
        self.release.wait()

    def set_password(self, service, username, password):
        self.release.wait()

    def delete_password(self, service, username):
        self.release.wait()


class LockedKeyring(KeyringBackend):
    priority = 0.1

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    def get_password(self, service, username, password=None):
        raise KeyringLocked(self.reason)

    set_password = delete_password = get_password


def test_roundtrip_sync(store, tmp_path):
    name = account_secret("acc1")
    assert store.get(name) is None
    store.set(name, SECRET)
    store.set(ADMIN_TOKEN, "tok")
    assert store.get(name) == SECRET
    assert plaintext_backend(tmp_path).get_password(SERVICE, name) == SECRET
    store.delete(name)
    assert store.get(name) is None
    assert store.get(ADMIN_TOKEN) == "tok"


async def test_roundtrip_async(store):
    name = account_secret("acc2")
    assert await store.aget(name) is None
    await store.aset(name, SECRET)
    assert await store.aget(name) == SECRET
    await store.adelete(name)
    assert await store.aget(name) is None


async def test_delete_missing_is_noop(store, tmp_path):
    """Deleting a secret that is not there raises nothing, leaves it absent and touches no
    other secret (callers want "absent afterwards", e.g. removing a half-added account)."""
    store.set(ADMIN_TOKEN, "kept")
    file = tmp_path / "k.cfg"
    before = file.read_bytes()
    store.delete("never-set")
    await store.adelete("never-set")
    assert store.get("never-set") is None
    assert await store.aget("never-set") is None
    assert store.get(ADMIN_TOKEN) == "kept"
    assert file.read_bytes() == before  # nothing rewritten


def test_set_rejects_non_str_without_echoing(store):
    with pytest.raises(TypeError) as info:
        store.set(ADMIN_TOKEN, b"sk-bytes-secret")
    assert "sk-bytes-secret" not in str(info.value)


def test_describe_names_backend(store, tmp_path):
    assert "PlaintextKeyring" in store.describe()
    assert str(tmp_path / "k.cfg") in store.describe()


def test_home_says_what_kind_of_place_the_secrets_go(monkeypatch, tmp_path):
    """Add account says it in words: the desktop's store, SubLane's encrypted file, or a file
    keyring chosen in keyring's settings (encrypted or not)."""
    from keyrings.alt.file import EncryptedKeyring

    from sublane_desktop.accounts.secrets import (
        ENCRYPTED_FILE,
        OWN_FILE,
        PLAIN_FILE,
        SYSTEM,
        SecretHome,
    )

    plain = SecretStore(tmp_path, backend=plaintext_backend(tmp_path))
    assert plain.home() == SecretHome(PLAIN_FILE, str(tmp_path / "k.cfg"))

    class Sealed(EncryptedKeyring):  # keyrings.alt's encrypted file; its cipher is not installed
        def __init__(self) -> None:
            KeyringBackend.__init__(self)

    encrypted_alt = Sealed()
    encrypted_alt.file_path = str(tmp_path / "crypted.cfg")
    assert SecretStore(tmp_path, backend=encrypted_alt).home() == SecretHome(
        ENCRYPTED_FILE, str(tmp_path / "crypted.cfg")
    )
    own = SecretStore(tmp_path, backend=EncryptedFileKeyring(tmp_path, "hunter2"))
    assert own.home() == SecretHome(OWN_FILE, str(tmp_path / "secrets.enc"))

    class DesktopStore(KeyringBackend):  # what Secret Service, KWallet or Keychain look like
        priority = 5

        def get_password(self, service, username):
            return None

        def set_password(self, service, username, password):
            pass

        def delete_password(self, service, username):
            pass

    assert SecretStore(tmp_path, backend=DesktopStore()).home() == SecretHome(SYSTEM)


def test_encrypted_file_keeps_values_out_of_the_file(monkeypatch, tmp_path):
    monkeypatch.setenv("SUBLANE_KEYRING", "file")
    monkeypatch.setenv("SUBLANE_KEYRING_PASSWORD", "hunter2")
    store = SecretStore(tmp_path)
    store.set(account_secret("acc1"), SECRET)
    store.set(ADMIN_TOKEN, "admin-secret-xyz")

    path = tmp_path / "secrets.enc"
    assert store.describe() == f"encrypted file: {path}"
    raw = path.read_text()
    for plain in (SECRET, "sk-very-secret-value-123", "admin-secret-xyz", "hunter2"):
        assert plain not in raw
    assert set(json.loads(raw)["secrets"][SERVICE]) == {"account:acc1", ADMIN_TOKEN}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list(tmp_path.iterdir()) == [path]  # no temp file left behind

    # A fresh instance (new process, same password) reads it back.
    again = SecretStore(tmp_path)
    assert again.get(account_secret("acc1")) == SECRET
    again.delete(ADMIN_TOKEN)
    again.delete(ADMIN_TOKEN)
    assert again.get(ADMIN_TOKEN) is None


async def test_encrypted_file_async(tmp_path):
    store = SecretStore(tmp_path, backend=EncryptedFileKeyring(tmp_path, password="pw"))
    await store.aset(ADMIN_TOKEN, SECRET)
    assert await store.aget(ADMIN_TOKEN) == SECRET


def test_encrypted_file_wrong_password(tmp_path):
    EncryptedFileKeyring(tmp_path, password="right").set_password(SERVICE, ADMIN_TOKEN, SECRET)
    store = SecretStore(tmp_path, backend=EncryptedFileKeyring(tmp_path, password="wrong"))
    with pytest.raises(KeyringUnavailable, match=r"^encrypted keyring: wrong password$"):
        store.get(ADMIN_TOKEN)
    with pytest.raises(KeyringUnavailable, match="wrong password"):
        store.set(ADMIN_TOKEN, "overwrite")
    right = EncryptedFileKeyring(tmp_path, password="right")
    assert right.get_password(SERVICE, ADMIN_TOKEN) == SECRET


def test_encrypted_file_missing_password(monkeypatch, tmp_path):
    monkeypatch.setenv("SUBLANE_KEYRING", "file")
    with pytest.raises(KeyringUnavailable, match="SUBLANE_KEYRING_PASSWORD"):
        SecretStore(tmp_path)


def test_unknown_sublane_keyring_value(monkeypatch, tmp_path):
    monkeypatch.setenv("SUBLANE_KEYRING", "plaintext")
    with pytest.raises(KeyringUnavailable, match="not supported"):
        SecretStore(tmp_path)


def assert_guidance(message: str, tmp_path) -> None:
    assert message.startswith("no usable OS keyring")
    assert "SUBLANE_KEYRING=file" in message
    assert "SUBLANE_KEYRING_PASSWORD" in message
    assert str(tmp_path / "secrets.enc") in message


@pytest.mark.parametrize("backend_cls", [null.Keyring, fail.Keyring])
def test_unusable_backend_is_refused_with_guidance(backend_cls, tmp_path):
    with pytest.raises(KeyringUnavailable) as info:
        SecretStore(tmp_path, backend=backend_cls())
    assert_guidance(str(info.value), tmp_path)


@pytest.mark.parametrize(
    "limit",
    [lambda kr: False, lambda kr: isinstance(kr, PlaintextKeyring)],
    ids=["empty-chain", "only-plaintext-chain"],
)
def test_chainer_without_a_real_backend_is_refused(limit, monkeypatch, tmp_path):
    from keyring.backends.chainer import ChainerBackend

    # The chainer reads keyring.backend._limit to decide what it chains.
    monkeypatch.setattr(keyring.backend, "_limit", limit)
    with pytest.raises(KeyringUnavailable) as info:
        SecretStore(tmp_path, backend=ChainerBackend())
    assert_guidance(str(info.value), tmp_path)


def test_python_keyring_backend_is_honoured(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    keyring.core.init_backend()
    with pytest.raises(KeyringUnavailable) as info:
        SecretStore(tmp_path)
    assert_guidance(str(info.value), tmp_path)

    # The way CI and headless servers opt in: name a backend, point it at a file.
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyrings.alt.file.PlaintextKeyring")
    monkeypatch.setenv("KEYRING_PROPERTY_FILE_PATH", str(tmp_path / "env.cfg"))
    keyring.core.init_backend()
    store = SecretStore(tmp_path)
    store.set(ADMIN_TOKEN, "tok")
    assert (tmp_path / "env.cfg").exists()
    assert store.get(ADMIN_TOKEN) == "tok"


@pytest.mark.parametrize(
    "name",
    [
        "keyrings.alt.file.PlaintextKeyrin",  # a typo in the class
        "keyrings.alt.fille.PlaintextKeyring",  # a typo in the module
        "PlaintextKeyring",  # no module at all
        "os.path.join",  # loads, but is no keyring backend
        "",
    ],
)
def test_a_python_keyring_backend_that_does_not_load_is_one_clear_error(
    monkeypatch, tmp_path, name
):
    """R-ST-2: keyring raises whatever the import raised; the person gets the setting's name,
    what they wrote and what to do, as the KeyringUnavailable every caller already shows."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", name)
    monkeypatch.setattr(keyring.core, "_keyring_backend", None)  # chosen afresh, as at startup
    with pytest.raises(KeyringUnavailable) as info:
        SecretStore(tmp_path)
    message = str(info.value)
    assert message.startswith(f"PYTHON_KEYRING_BACKEND={name!r} cannot be loaded (")
    assert "keyrings.alt.file.PlaintextKeyring" in message and "unset it" in message
    assert "\n" not in message and "Error" not in message


def test_auto_detected_plaintext_is_refused(monkeypatch, tmp_path):
    # What keyring picks on a desktop-less box with keyrings.alt installed.
    monkeypatch.setattr(keyring.core, "load_config", lambda: None)
    keyring.core.set_keyring(plaintext_backend(tmp_path))
    with pytest.raises(KeyringUnavailable) as info:
        SecretStore(tmp_path)
    assert_guidance(str(info.value), tmp_path)


def test_hanging_backend_times_out(tmp_path):
    release = threading.Event()
    try:
        store = SecretStore(tmp_path, backend=HangingKeyring(release), timeout=0.2)
        for call in (lambda: store.get(ADMIN_TOKEN), lambda: store.set(ADMIN_TOKEN, SECRET)):
            started = time.monotonic()
            with pytest.raises(KeyringUnavailable, match=r"did not answer within 0\.2s") as info:
                call()
            assert time.monotonic() - started < 1.0
            assert SECRET not in str(info.value)
    finally:
        release.set()


async def test_hanging_backend_times_out_async(tmp_path):
    release = threading.Event()
    try:
        store = SecretStore(tmp_path, backend=HangingKeyring(release), timeout=0.2)
        started = time.monotonic()
        with pytest.raises(KeyringUnavailable, match="did not answer"):
            await store.aget(ADMIN_TOKEN)
        assert time.monotonic() - started < 1.0
        # The loop stayed free while the keyring hung.
        assert await asyncio.wait_for(asyncio.sleep(0, "alive"), 1) == "alive"
    finally:
        release.set()


def test_locked_keyring(tmp_path):
    store = SecretStore(tmp_path, backend=LockedKeyring("collection is locked"))
    with pytest.raises(KeyringUnavailable, match="keyring is locked"):
        store.get(ADMIN_TOKEN)
    with pytest.raises(KeyringUnavailable, match="keyring is locked") as info:
        store.set(ADMIN_TOKEN, SECRET)
    assert SECRET not in str(info.value)
