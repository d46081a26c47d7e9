from sublane_desktop.core.affinity import conversation_digest, conversation_key


def test_session_headers_make_a_conversation():
    for name in ("session_id", "session-id", "x-claude-code-session-id"):
        assert conversation_key({name: "abc"}, {}) == "s:abc"


def test_legacy_metadata_user_id_session_part():
    uid = "user_ab12_account_1111-2222_session_3333-4444"
    assert conversation_key({}, {"metadata": {"user_id": uid}}) == "s:3333-4444"


def test_json_metadata_user_id_session():
    uid = '{"device_id":"d","session_id":"sess-9"}'
    assert conversation_key({}, {"metadata": {"user_id": uid}}) == "s:sess-9"


def test_prompt_cache_key_and_independent_requests():
    assert conversation_key({}, {"prompt_cache_key": "thread-1"}) == "c:thread-1"
    assert conversation_key({}, {"prompt_cache_key": ""}) is None
    assert conversation_key({}, {"metadata": {"user_id": "user_abc"}}) is None
    assert conversation_key({"session_id": "  "}, {}) is None
    assert conversation_key({}, {"metadata": {"user_id": "{not json"}}) is None


def test_digest_hides_the_session_and_depends_on_provider():
    a = conversation_digest("s:secret-session", "anthropic")
    assert "secret-session" not in a
    assert a != conversation_digest("s:secret-session", "codex")
    assert a == conversation_digest("s:secret-session", "anthropic")


def test_odd_metadata_user_ids_are_independent_requests_not_errors():
    for uid in (123, ["s"], None, "", '{"session_id": 5}', '{"session_id": ""}', '{"other": "x"}'):
        assert conversation_key({}, {"metadata": {"user_id": uid}}) is None, uid
    padded = '  {"session_id": "sess-pad"}'  # leading whitespace before the JSON object
    assert conversation_key({}, {"metadata": {"user_id": padded}}) == "s:sess-pad"


def test_digest_is_stable_across_releases():
    """Stored bindings survive restarts and upgrades only if the digest never changes."""
    import hashlib

    expected = hashlib.sha256(b"anthropic\0s:abc").hexdigest()[:32]
    assert conversation_digest("s:abc", "anthropic") == expected


def test_a_blank_prompt_cache_key_is_no_conversation():
    assert conversation_key({}, {"prompt_cache_key": "   "}) is None
