"""The Codex / OpenAI provider as pure functions: where requests go, what they carry, and the
quota and usage-limit signals read from answers."""

from __future__ import annotations

import json

import pytest

from sublane_desktop.providers import codex

SUB = {"access_token": "jwt-1", "refresh_token": "r", "expires_at": 1, "account_id": "acct-9"}
KEY = {"api_key": "sk-proj-1"}
CODEX_BASE = "https://chatgpt.com/backend-api/codex"
OPENAI_BASE = "https://api.openai.com"


@pytest.mark.parametrize(
    "account_base, credential, operation, url",
    [
        (None, SUB, "responses", "https://chatgpt.com/backend-api/codex/responses"),
        (None, SUB, "compact", "https://chatgpt.com/backend-api/codex/responses/compact"),
        (None, KEY, "responses", "https://api.openai.com/v1/responses"),
        (None, KEY, "compact", "https://api.openai.com/v1/responses/compact"),
        ("https://gw.corp/codex/", SUB, "responses", "https://gw.corp/codex/responses"),
        ("https://gw.corp", KEY, "responses", "https://gw.corp/v1/responses"),
        ("https://gw.corp/v1", KEY, "responses", "https://gw.corp/v1/responses"),  # no second /v1
    ],
)
def test_where_requests_go(account_base, credential, operation, url):
    base = codex.base_for(account_base, credential, CODEX_BASE, OPENAI_BASE)
    assert codex.endpoint(base, credential, operation) == url


def test_subscription_headers_and_passed_session_headers():
    client = {
        "session_id": "s-1",
        "session-id": "s-1",
        "thread-id": "t-1",
        "x-client-request-id": "c-1",
        "x-codex-turn-state": "ts-1",
        "x-api-key": "sl-client-key",
        "authorization": "Bearer sl-client-key",
        "cookie": "a=b",
        "connection": "keep-alive",
    }
    headers = codex.upstream_headers(client, SUB)
    assert headers["authorization"] == "Bearer jwt-1"
    assert headers["chatgpt-account-id"] == "acct-9"
    assert headers["originator"] == "codex_cli_rs"
    for name in (
        "session_id",
        "session-id",
        "thread-id",
        "x-client-request-id",
        "x-codex-turn-state",
    ):
        assert headers[name] == client[name]
    assert "sl-client-key" not in json.dumps(headers)
    assert "cookie" not in headers and "connection" not in headers


def test_api_key_headers():
    headers = codex.upstream_headers({}, KEY)
    assert headers["authorization"] == "Bearer sk-proj-1"
    assert "chatgpt-account-id" not in headers and "originator" not in headers


def test_body_shaping():
    body = {
        "model": "codex/gpt-5.4",
        "input": [],
        "stream": False,
        "store": True,
        "max_output_tokens": 100,
        "temperature": 0.3,
    }
    sub = codex.shape_body(body, SUB, "gpt-5.4")
    assert sub["model"] == "gpt-5.4" and sub["stream"] is True and sub["store"] is False
    # the ChatGPT backend refuses sampling and budget fields (R-WF-4)
    assert "max_output_tokens" not in sub and "temperature" not in sub
    api = codex.shape_body(body, KEY, "gpt-5.4")
    assert api["stream"] is True and api["store"] is True and api["max_output_tokens"] == 100
    assert api["temperature"] == 0.3  # the platform API takes them
    assert body["stream"] is False  # the caller's dict is not touched


def test_every_field_the_subscription_backend_refuses_is_removed():
    from tests.fake_codex import UNSUPPORTED

    body = {"model": "m", "input": [], **{name: 1 for name in UNSUPPORTED}, "text": {}}
    sub = codex.shape_body(body, SUB, "m")
    assert not set(UNSUPPORTED) & set(sub)
    assert sub["text"] == {}  # Codex CLI itself sends `text`; the backend takes it


def test_system_items_past_the_leading_ones_become_developer_items():
    shaped = codex.shape_body(
        {
            "model": "m",
            "instructions": "Be brief.",
            "input": [
                {"type": "message", "role": "system", "content": "Answer in French."},
                {"type": "message", "role": "user", "content": "hi"},
                {"role": "system", "content": [{"type": "input_text", "text": "Now German."}]},
            ],
        },
        SUB,
        "m",
    )
    assert shaped["instructions"] == "Be brief."
    assert [item.get("role") for item in shaped["input"]] == ["developer", "user", "developer"]
    assert shaped["input"][2]["content"] == [{"type": "input_text", "text": "Now German."}]
    api = codex.shape_body({"model": "m", "input": [{"role": "system", "content": "x"}]}, KEY, "m")
    assert api["input"][0]["role"] == "system"  # the platform API takes system items


def test_codex_cli_is_told_by_originator_and_user_agent_together():
    ua = "codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.171.0)"
    assert codex.is_codex_cli({"originator": "codex_exec", "user-agent": ua})
    tui = "codex_cli_rs/0.171.0 (Mac OS 15.1.0; arm64) iTerm.app"
    assert codex.is_codex_cli({"originator": "codex_cli_rs", "user-agent": tui})
    assert not codex.is_codex_cli({"originator": "codex_cli_rs", "user-agent": "OpenAI/Python"})
    assert not codex.is_codex_cli({"user-agent": ua})
    assert not codex.is_codex_cli({"originator": "codex_cli_rs", "user-agent": ua})
    assert not codex.is_codex_cli({"originator": "sdk", "user-agent": "sdk/1.0"})


def test_codex_cli_headers_pass_through_but_its_credential():
    client = {
        "x-codex-beta-features": "remote_compaction_v2",
        "session-id": "s-1",
        "Accept": "text/event-stream",
        "Content-Type": "application/json",
        "Authorization": "Bearer sl-client-key",
        "originator": "codex_exec",
        "User-Agent": "codex_exec/0.171.0",
        "Accept-Encoding": "zstd,gzip",
        "Host": "127.0.0.1:8765",
        "Content-Length": "42",
        "Connection": "keep-alive",
        "Cookie": "a=b",
        "ChatGPT-Account-Id": "someone-else",
    }
    headers = codex.passthrough_headers(client, SUB)
    assert list(headers) == [
        "x-codex-beta-features",
        "session-id",
        "Accept",
        "Content-Type",
        "originator",
        "User-Agent",
        "Accept-Encoding",
        "authorization",
        "chatgpt-account-id",
    ]
    assert headers["authorization"] == f"Bearer {SUB['access_token']}"
    assert headers["chatgpt-account-id"] == SUB["account_id"]
    socket = codex.passthrough_headers(
        {"OpenAI-Beta": "responses_websockets=2026-02-06", "Sec-WebSocket-Key": "k"},
        SUB,
        socket=True,
    )
    assert socket == {
        "content-type": "application/json",  # as Codex sends the same request over HTTP
        "accept": "text/event-stream",
        "authorization": f"Bearer {SUB['access_token']}",
        "chatgpt-account-id": SUB["account_id"],
    }


def test_a_socket_turn_body_is_what_codex_sends_over_http():
    message = {
        "model": "gpt-5.5",
        "input": [],
        "stream": False,
        "client_metadata": {"a": "1", "x-codex-ws-stream-request-start-ms": "9"},
    }
    assert codex.socket_turn_body(message) == (
        b'{"model":"gpt-5.5","stream":true,"input":[],"client_metadata":{"a":"1"}}'
    )
    assert codex.socket_turn_body({"input": "\u00e9"}) == '{"input":"é","stream":true}'.encode()


def test_the_model_list_asks_as_the_configured_client_version():
    url, _ = codex.models_call(CODEX_BASE, SUB, "0.180.2")
    assert url.endswith("/models?client_version=0.180.2")
    url, _ = codex.models_call(CODEX_BASE, SUB, "0.1&x=1")  # never into the query as is
    assert url.endswith(f"/models?client_version={codex.DEFAULT_CLIENT_VERSION}")
    assert codex.DEFAULT_CLIENT_VERSION == "0.171.0"


def test_quota_headers_become_fractions():
    headers = {
        "X-Codex-Primary-Used-Percent": "25.5",
        "x-codex-primary-window-minutes": "300",
        "x-codex-primary-reset-at": "1800003600",
        "x-codex-secondary-used-percent": "80",
        "x-codex-secondary-window-minutes": "10080",
        "x-codex-secondary-reset-at": "1800300000",
        "content-type": "text/event-stream",
    }
    obs = codex.quota_from_headers(headers, 1_800_000_000.0)
    assert obs == codex.QuotaObservation(
        codex.QuotaWindow(0.255, 300, 1800003600.0),
        codex.QuotaWindow(0.8, 10080, 1800300000.0),
        1_800_000_000.0,
    )


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"content-type": "application/json"},
        {"x-codex-primary-used-percent": "lots"},
        {"x-codex-primary-used-percent": "nan"},
        {"x-codex-primary-used-percent": "-3"},
        {"x-codex-promo-message": "hi"},
    ],
)
def test_quota_headers_missing_or_garbage(headers):
    assert codex.quota_from_headers(headers, 0.0) is None


def test_quota_one_window_only():
    obs = codex.quota_from_headers(
        {
            "x-codex-secondary-used-percent": "100",
            "x-codex-secondary-window-minutes": "10080",
            "x-codex-secondary-reset-at": "junk",
        },
        5.0,
    )
    assert obs.five_hour is None and obs.five_hour_absent
    assert obs.seven_day == codex.QuotaWindow(1.0, 10080, None)


def test_windows_are_named_by_their_length_never_by_slot():
    """A plan without the 5-hour window reports its week as primary (R-WF-4)."""
    week_only = codex.quota_from_headers(
        {
            "x-codex-primary-used-percent": "62",
            "x-codex-primary-window-minutes": "10080",
            "x-codex-primary-reset-at": "1800300000",
        },
        5.0,
    )
    assert week_only.seven_day == codex.QuotaWindow(0.62, 10080, 1800300000.0)
    assert week_only.five_hour is None and week_only.five_hour_absent
    swapped = codex.quota_from_headers(
        {
            "x-codex-primary-used-percent": "10",
            "x-codex-primary-window-minutes": "10080",
            "x-codex-secondary-used-percent": "70",
            "x-codex-secondary-window-minutes": "300",
        },
        5.0,
    )
    assert (swapped.five_hour.utilization, swapped.seven_day.utilization) == (0.7, 0.1)
    assert not swapped.five_hour_absent
    # a window without a length (or of another length) is nobody's: not guessed from its slot
    unnamed = codex.quota_from_headers(
        {"x-codex-primary-used-percent": "10", "x-codex-secondary-used-percent": "20"}, 5.0
    )
    assert unnamed is None


def test_per_model_limit_families_are_read_by_limit_id():
    headers = {
        "x-codex-active-limit": "codex_bengalfox",
        "x-codex-primary-used-percent": "100",
        "x-codex-primary-window-minutes": "300",
        "x-codex-bengalfox-primary-used-percent": "100",
        "x-codex-bengalfox-primary-window-minutes": "300",
        "x-codex-bengalfox-primary-reset-at": "1800000600",
        "x-codex-bengalfox-limit-name": "GPT-5.3-Codex-Spark",
    }
    obs = codex.quota_from_headers(headers, 5.0)
    # `x-codex-*` carries the active limit's numbers here: not the account's 5h window
    assert obs.five_hour is None and obs.seven_day is None and not obs.five_hour_absent
    assert obs.families == (
        codex.LimitReading("codex_bengalfox", (codex.QuotaWindow(1.0, 300, 1800000600.0),)),
    )
    assert codex.active_limit(headers) == "codex_bengalfox"
    assert codex.active_limit({"x-codex-active-limit": "codex"}) is None
    assert codex.active_limit({}) is None


@pytest.mark.parametrize(
    "body, seconds",
    [
        (b'{"error":{"type":"usage_limit_reached","resets_in_seconds":3600}}', 3600.0),
        (b'{"error":{"type":"usage_limit_reached","resets_at":1000600}}', 600.0),
        (b'{"error":{"code":"usage_limit_reached","resets_in_seconds":"90"}}', 90.0),
        (b'{"error":{"type":"usage_limit_reached"}}', None),
        (b'{"error":{"type":"rate_limit_exceeded","resets_in_seconds":10}}', None),
        (b'{"error":{"type":"usage_limit_reached","resets_in_seconds":-5}}', None),
        (b"not json", None),
        (b"[]", None),
    ],
)
def test_usage_limit_retry_after(body, seconds):
    assert codex.usage_limit_retry_after(body, 1_000_000.0) == seconds


def test_usage_of_json():
    body = json.dumps(
        {
            "usage": {
                "input_tokens": 10,
                "output_tokens": 2,
                "input_tokens_details": {"cached_tokens": 4},
            }
        }
    ).encode()
    assert codex.usage_of_json(body) == (10, 2, 4)
    assert codex.usage_of_json(b'{"output":[]}') == (None, None, None)
    assert codex.usage_of_json(b"garbage") == (None, None, None)


def test_subscription_bodies_get_what_the_backend_insists_on():
    hoisted = codex.shape_body(
        {
            "model": "m",
            "input": [
                {"type": "message", "role": "system", "content": "Be brief."},
                {"role": "developer", "content": [{"type": "input_text", "text": "No tools."}]},
                {"type": "message", "role": "user", "content": "hi"},
            ],
        },
        SUB,
        "m",
    )
    assert hoisted["instructions"] == "Be brief.\n\nNo tools."
    assert hoisted["input"] == [{"type": "message", "role": "user", "content": "hi"}]
    bare = codex.shape_body({"model": "m", "input": "hi"}, SUB, "m")
    assert bare["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ]
    assert bare["instructions"] == codex.DEFAULT_INSTRUCTIONS
    kept = codex.shape_body({"model": "m", "input": "hi", "instructions": "Codex prompt"}, SUB, "m")
    assert kept["instructions"] == "Codex prompt"
    assert codex.shape_body({"model": "m", "input": "hi"}, KEY, "m")["input"] == "hi"


def test_bases_lose_their_trailing_slash_and_a_v1_base_is_not_doubled():
    assert codex.base_for("https://gw.corp/codex/", SUB, CODEX_BASE, OPENAI_BASE) == (
        "https://gw.corp/codex"
    )
    assert codex.base_for(None, SUB, CODEX_BASE + "/", OPENAI_BASE) == CODEX_BASE
    assert codex.base_for(None, KEY, CODEX_BASE, OPENAI_BASE + "/") == OPENAI_BASE
    assert codex.endpoint("https://gw.corp/v1/", KEY) == "https://gw.corp/v1/responses"


def test_requests_are_json_and_stream_unless_asked_not_to():
    streamed = codex.upstream_headers({}, SUB)
    assert streamed["content-type"] == "application/json"
    assert streamed["accept"] == "text/event-stream"
    whole = codex.upstream_headers({}, KEY, stream=False)
    assert whole["content-type"] == "application/json" and whole["accept"] == "application/json"


def test_a_credential_without_its_token_sends_an_empty_bearer_never_a_placeholder():
    assert codex.upstream_headers({}, {})["authorization"] == "Bearer "


@pytest.mark.parametrize(
    "base, credential, url",
    [
        (
            CODEX_BASE + "/",
            SUB,
            f"{CODEX_BASE}/models?client_version={codex.DEFAULT_CLIENT_VERSION}",
        ),
        ("https://api.openai.com/", KEY, "https://api.openai.com/v1/models"),
        ("https://gw.corp/v1", KEY, "https://gw.corp/v1/models"),
    ],
)
def test_model_discovery_asks_the_right_list_with_the_accounts_credential(base, credential, url):
    got_url, headers = codex.models_call(base, credential)
    assert got_url == url
    assert headers["accept"] == "application/json" and "content-type" not in headers
    token = credential.get("access_token") or credential["api_key"]
    assert headers["authorization"] == f"Bearer {token}"


def test_a_compaction_body_names_the_upstream_model_and_is_not_streamed():
    body = {"model": "codex/gpt-5.4", "input": [], "stream": True}
    assert codex.compact_body(body, "gpt-5.4") == {"model": "gpt-5.4", "input": []}
    assert body["stream"] is True  # the caller's dict is not touched


def test_quota_windows_at_their_edges():
    obs = codex.quota_from_headers(
        {
            "x-codex-primary-used-percent": "0",
            "x-codex-primary-window-minutes": "300",
            "x-codex-primary-reset-at": "0.5",
            "x-codex-secondary-used-percent": "0.5",
            "x-codex-secondary-window-minutes": "10080",
            "x-codex-secondary-reset-at": "-100",
        },
        5.0,
    )
    assert obs.five_hour == codex.QuotaWindow(0.0, 300, 0.5)  # an idle window is still read
    assert obs.seven_day == codex.QuotaWindow(0.005, 10080, None)
    negative = codex.quota_from_headers(
        {"x-codex-primary-used-percent": "1", "x-codex-primary-window-minutes": "-300"}, 5.0
    )
    assert negative is None  # no usable length: no window


def test_usage_limit_waits_must_be_positive():
    assert (
        codex.usage_limit_retry_after(
            b'{"error":{"type":"usage_limit_reached","resets_in_seconds":0.5}}', 0.0
        )
        == 0.5
    )
    assert (
        codex.usage_limit_retry_after(
            b'{"error":{"type":"usage_limit_reached","resets_in_seconds":0}}', 0.0
        )
        is None
    )


def test_usage_of_json_ignores_odd_shapes():
    assert codex.usage_of_json(b"[]") == (None, None, None)
    odd = {"usage": {"input_tokens": "7", "output_tokens": True, "input_tokens_details": 5}}
    assert codex.usage_of_json(json.dumps(odd).encode()) == (None, None, None)


def test_only_leading_system_messages_are_hoisted():
    shaped = codex.shape_body(
        {
            "model": "m",
            "input": [
                {"role": "system", "content": ["stray", {"type": "input_text", "text": "Rules."}]},
                {"type": "reasoning", "role": "developer", "content": "kept"},
                {"role": "system", "content": "late"},
            ],
        },
        SUB,
        "m",
    )
    assert shaped["instructions"] == "Rules."
    assert [item["content"] for item in shaped["input"]] == ["kept", "late"]
    assert codex.shape_body({"model": "m"}, SUB, "m")["input"] == []
