"""The administrator's token: the bearer credential of the management API, kept in the keyring.

Made once, on first need, by whichever comes first: the server starting or `sublane admin-token`.
"""

from __future__ import annotations

import secrets as pysecrets

from sublane_desktop.accounts.secrets import SecretStore

ADMIN_TOKEN = "admin-token"  # the keyring entry


def ensure_admin_token(secret_store: SecretStore) -> str:
    token = secret_store.get(ADMIN_TOKEN)
    if not token:
        token = "sla-" + pysecrets.token_urlsafe(32)
        secret_store.set(ADMIN_TOKEN, token)
    return token
