"""peewee models. Credentials never live here (R-ST-2): only account metadata and key hashes."""

from __future__ import annotations

from peewee import (
    AutoField,
    BooleanField,
    CompositeKey,
    DatabaseProxy,
    FloatField,
    ForeignKeyField,
    IntegerField,
    Model,
    TextField,
)

db = DatabaseProxy()


class BaseModel(Model):
    class Meta:
        database = db


class SchemaVersion(BaseModel):
    version = IntegerField()

    class Meta:
        table_name = "schema_version"


class User(BaseModel):
    id = AutoField()
    name = TextField(unique=True)
    is_admin = BooleanField(default=False)
    created_at = FloatField()

    class Meta:
        table_name = "users"


class Group(BaseModel):
    id = AutoField()
    name = TextField(unique=True)

    class Meta:
        table_name = "groups"


class ClientKey(BaseModel):
    id = AutoField()
    name = TextField()
    user = ForeignKeyField(User, backref="keys", on_delete="CASCADE")
    user_id: int  # peewee's id accessor, declared for the type checker
    group = ForeignKeyField(Group, backref="keys")
    group_id: int  # peewee's id accessor, declared for the type checker
    prefix = TextField()  # first characters, shown so a person can tell keys apart
    key_hash = TextField(unique=True)  # sha256 of the whole key; the key itself is never stored
    created_at = FloatField()
    revoked_at = FloatField(null=True)

    class Meta:
        table_name = "client_keys"


class Account(BaseModel):
    id = AutoField()
    provider = TextField()
    name = TextField(unique=True)
    kind = TextField(default="oauth")  # oauth | api_key
    base_url = TextField(null=True)
    enabled = BooleanField(default=True)
    max_concurrency = IntegerField(default=2)
    revision = IntegerField(default=1)  # lifecycle revision: re-auth / disable bump it
    created_at = FloatField()
    deleted_at = FloatField(null=True)

    class Meta:
        table_name = "accounts"


class AccountGroup(BaseModel):
    account = ForeignKeyField(Account, backref="memberships", on_delete="CASCADE")
    account_id: int  # peewee's id accessor, declared for the type checker
    group = ForeignKeyField(Group, backref="memberships", on_delete="CASCADE")
    group_id: int  # peewee's id accessor, declared for the type checker

    class Meta:
        table_name = "account_groups"
        primary_key = CompositeKey("account", "group")


class Setting(BaseModel):
    key = TextField(primary_key=True)
    value = TextField()  # JSON

    class Meta:
        table_name = "settings"


class AccountRuntime(BaseModel):
    """Persisted scheduling state (R-POOL-10); in-flight counts are process-local and not here."""

    account = ForeignKeyField(Account, primary_key=True, on_delete="CASCADE")
    account_id: int  # peewee's id accessor, declared for the type checker
    paused = BooleanField(default=False)
    auth_failed = BooleanField(default=False)
    cooldown_until = FloatField(null=True)
    failure_streak = IntegerField(default=0)
    runtime_revision = IntegerField(default=0)
    updated_at = FloatField(null=True)
    fable_cooldown_until = FloatField(null=True)  # the Fable scope's own rest (R-FT-10)
    fable_streak = IntegerField(default=0)
    # JSON: what each cooldown rests on (kind, window, reset) and the resting model families
    # (R-OBS-3, R-POOL-10); see AccountState.holds_json.
    holds = TextField(null=True)
    pinned_until = FloatField(null=True)  # a manual pin's wall-clock end (R-LANE-2, R-OBS-2)

    class Meta:
        table_name = "account_runtime"


class AffinityBinding(BaseModel):
    """Conversation digest -> account (R-POOL-4). Only a digest; never the session id itself."""

    scope = TextField()
    group_id = IntegerField()
    digest = TextField()
    account = ForeignKeyField(Account, on_delete="CASCADE")
    account_id: int  # peewee's id accessor, declared for the type checker
    created_at = FloatField()
    bound = BooleanField(default=True)  # False: freed, kept for the last turn's facts
    # The conversation's last turn per model (R-CF-1), as JSON: model -> [account id, ended
    # at, total input, warm input]. Numbers and model names only, never prompt content.
    # (Step 6's last_account_id … last_warm_tokens columns are superseded and unused.)
    last_turns = TextField(null=True)

    class Meta:
        table_name = "affinity_bindings"
        primary_key = CompositeKey("scope", "group_id", "digest")


class RecordRow(BaseModel):
    """One model attempt's metadata (R-REC-2); core's RequestRecord is the in-memory form."""

    id = AutoField()
    request_id = TextField()
    user_id = IntegerField()
    key_id = IntegerField()
    group_id = IntegerField()
    account_id = IntegerField(null=True)
    provider = TextField()
    model = TextField()
    protocol = TextField()
    operation = TextField()
    started_at = FloatField()
    duration_ms = IntegerField(null=True)
    first_token_ms = IntegerField(null=True)
    outcome = TextField()
    error_code = TextField(null=True)
    upstream_status = IntegerField(null=True)
    input_tokens = IntegerField(null=True)
    output_tokens = IntegerField(null=True)
    cached_tokens = IntegerField(null=True)
    cache_miss = TextField(null=True)
    reread_tokens = IntegerField(null=True)
    previous_account_id = IntegerField(null=True)
    idle_seconds = FloatField(null=True)

    class Meta:
        table_name = "request_records"


class QuotaObservation(BaseModel):
    account = ForeignKeyField(Account, on_delete="CASCADE")
    account_id: int  # peewee's id accessor, declared for the type checker
    window = TextField()
    utilization = FloatField()
    resets_at = FloatField(null=True)
    observed_at = FloatField()
    source = TextField()
    rejected = BooleanField(default=False)
    revision = IntegerField()

    class Meta:
        table_name = "quota_observations"
        primary_key = CompositeKey("account", "window")


class QuotaHistory(BaseModel):
    account = ForeignKeyField(Account, on_delete="CASCADE")
    account_id: int  # peewee's id accessor, declared for the type checker
    window = TextField()
    utilization = FloatField()
    observed_at = FloatField()
    voided = BooleanField(default=False)  # read before a reset-usage: chart only, no forecast

    class Meta:
        table_name = "quota_history"
        primary_key = False


class QuotaPoll(BaseModel):
    """When quota reads may happen again (R-GAUGE-3), kept so a restart honours it (R-OBS-2)."""

    account = ForeignKeyField(Account, primary_key=True, on_delete="CASCADE")
    account_id: int  # peewee's id accessor, declared for the type checker
    started_at = FloatField(null=True)  # the last read's start: the poll floor counts from it
    blocked_until = FloatField(null=True)  # the usage endpoint's own retry-after
    revision = IntegerField(null=True)  # the account revision the floor belongs to

    class Meta:
        table_name = "quota_polls"


class AccountSource(BaseModel):
    """Where an imported login lives in its tool (R-LOGIN-2); metadata only, never a token."""

    account = ForeignKeyField(Account, primary_key=True, on_delete="CASCADE")
    account_id: int  # peewee's id accessor, declared for the type checker
    kind = TextField()  # the source module's name, e.g. "claude-code-file"
    location = TextField()  # a file path or a keychain item's name
    identity = TextField(null=True)  # a digest of the account identity the source carried
    detached = BooleanField(default=False)  # --detach: never read or written again
    updated_at = FloatField()

    class Meta:
        table_name = "account_sources"


ALL_MODELS = [
    SchemaVersion,
    User,
    Group,
    ClientKey,
    Account,
    AccountGroup,
    Setting,
    AccountRuntime,
    AffinityBinding,
    RecordRow,
]
