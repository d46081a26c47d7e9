"""providers/antigravity.py as pure functions: Google error bodies and their retry delays (Go
durations included, hypothesis-tested), the quota answer as family observations, project ids
and onboarding tiers, the refresh form, the request envelope, hosts, the client version and
the names an account serves."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sublane_desktop.core.gauges import family_of
from sublane_desktop.core.numbers import iso_seconds
from sublane_desktop.providers import antigravity as ag

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("12s", 12.0),
        ("0.5s", 0.5),
        ("1500ms", 1.5),
        ("3m", 180.0),
        ("7", 7.0),
        ("4h54m56.87563923s", 4 * 3600 + 54 * 60 + 56.87563923),
        ("479.417207ms", 0.479417207),
        ("1h0m0s", 3600.0),
        ("2m3.5s", 123.5),
        ("250us", 0.00025),
        ("0s", None),
        ("4h 5m", None),
        ("5m4h7", None),
        ("h", None),
        ("1.5.2s", None),
        ("-3s", None),
        ("soon", None),
        (12, None),
        (None, None),
    ],
)
def test_durations(value, seconds):
    assert ag.parse_duration(value) == pytest.approx(seconds) if seconds else seconds is None


UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(list(UNITS)),
            st.integers(min_value=0, max_value=10_000),
            st.one_of(st.none(), st.integers(min_value=0, max_value=999_999)),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_go_durations_read_as_the_sum_of_their_terms(terms):
    """Any Go duration `time.Duration.String()` or a person could write (terms of a number and
    a unit, in any order) reads as the sum of its terms; a zero one is no wait."""
    text = "".join(
        f"{whole}{'' if frac is None else f'.{frac}'}{unit}" for unit, whole, frac in terms
    )
    expected = sum(
        float(f"{whole}{'' if frac is None else f'.{frac}'}") * UNITS[unit]
        for unit, whole, frac in terms
    )
    parsed = ag.parse_duration(text)
    if expected == 0 or expected > ag.MAX_DURATION_SECONDS:
        assert parsed is None
    else:
        assert parsed == pytest.approx(expected, rel=1e-9)


@given(st.text(max_size=20))
def test_any_text_is_a_duration_or_none_never_an_error(text):
    parsed = ag.parse_duration(text)
    assert parsed is None or 0 < parsed <= ag.MAX_DURATION_SECONDS


def test_a_spent_quota_names_its_model_and_its_reset():
    """QUOTA_EXHAUSTED comes with only an ErrorInfo (antigravity-claude-proxy
    rate-limit-parser.js): the reset is quotaResetDelay, else quotaResetTimeStamp."""

    def body(**metadata):
        detail = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "QUOTA_EXHAUSTED"}
        return json.dumps(
            {
                "error": {
                    "code": 429,
                    "status": "RESOURCE_EXHAUSTED",
                    "details": [dict(detail, metadata=metadata)],
                }
            }
        ).encode()

    spent = ag.read_google_error(
        body(model="claude-opus-4-6-thinking", quotaResetDelay="4h54m56.87563923s"), 429, NOW
    )
    assert spent.quota_exhausted and spent.model == "claude-opus-4-6-thinking"
    assert spent.retry_after == pytest.approx(17696.87563923)
    stamped = ag.read_google_error(body(quotaResetTimeStamp="2027-01-15T09:00:00Z"), 429, NOW)
    assert stamped.retry_after == pytest.approx(iso_seconds("2027-01-15T09:00:00Z") - NOW)
    assert stamped.model is None and stamped.quota_exhausted
    past = ag.read_google_error(body(quotaResetTimeStamp="2020-01-01T00:00:00Z"), 429, NOW)
    assert past.retry_after is None
    other = ag.read_google_error(
        json.dumps(
            {"error": {"code": 429, "details": [{"reason": "RATE_LIMIT_EXCEEDED", "metadata": {}}]}}
        ).encode(),
        429,
        NOW,
    )
    assert not other.quota_exhausted


def test_the_client_version_is_current_and_well_formed():
    assert ag.check_client_version(ag.DEFAULT_CLIENT_VERSION) == "2.9.1"
    assert ag.check_client_version("2.9.0") == "2.9.0"
    assert ag.check_client_version("10.0.3") == "10.0.3"
    for bad in ("2.8.99", "1.11.5", "2.9", "2.9.0.1", "v2.9.1", " 2.9.1", "2.x.1", None, 2.91):
        with pytest.raises(ValueError, match="antigravity"):
            ag.check_client_version(bad)
    assert ag.user_agent("3.0.0").startswith("antigravity/3.0.0 ")
    assert ag.upstream_headers({}, stream=False, version="3.0.0")["user-agent"].startswith(
        "antigravity/3.0.0 "
    )


def test_an_antigravity_login_says_so_in_its_metadata(monkeypatch):
    monkeypatch.setattr(ag.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(ag.platform, "machine", lambda: "arm64")
    assert ag.client_metadata() == {
        "ideType": "ANTIGRAVITY",
        "platform": "DARWIN_ARM64",
        "pluginType": "GEMINI",
    }
    monkeypatch.setattr(ag.platform, "system", lambda: "Plan9")
    assert ag.client_metadata()["platform"] == "PLATFORM_UNSPECIFIED"


def test_onboarding_takes_the_default_tier():
    tiers = {"allowedTiers": [{"id": "legacy"}, {"id": "free-tier", "isDefault": True}]}
    assert ag.default_tier(tiers) == "free-tier"
    assert ag.default_tier({"allowedTiers": [{"id": "legacy"}]}) is None
    assert ag.default_tier({"allowedTiers": "x"}) is None and ag.default_tier(None) is None


def test_host_order_and_its_override():
    assert ag.GENERATION_HOSTS == (ag.DAILY, ag.PRODUCTION)
    assert ag.SETUP_HOSTS == (ag.PRODUCTION, ag.DAILY)
    assert ag.hosts(None, ag.GENERATION_HOSTS) == ag.GENERATION_HOSTS
    assert ag.hosts("https://gw.corp/", ag.GENERATION_HOSTS) == ("https://gw.corp",)


def test_what_an_account_serves():
    listed = ("claude-sonnet-4-6", "gemini-3-flash")
    assert ag.serves_model("claude-sonnet-4-6", listed)
    assert not ag.serves_model("claude-haiku-4-5", listed)
    assert not ag.serves_model("claude-opus-4-6", listed)  # its served name is not listed
    # before an account's list has been read: the known names and the alias table
    assert ag.serves_model("claude-opus-4-6", None)
    assert not ag.serves_model("claude-haiku-4-5", None)
    assert not ag.serves_model("claude-sonnet-4-5", None)  # retired


def test_google_error_bodies():
    body = {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": "Quota exceeded",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "metadata": {"quotaResetDelay": "90s"},
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12.5s"},
            ],
        }
    }
    assert ag.read_google_error(json.dumps(body).encode(), 429) == ag.GoogleError(
        "RESOURCE_EXHAUSTED", "Quota exceeded", 12.5
    )
    only_reset = {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": "m",
            "details": [{"metadata": {"quotaResetDelay": "90s"}}],
        }
    }
    assert ag.read_google_error(json.dumps(only_reset).encode(), 429).retry_after == 90.0
    wrapped = json.dumps(
        [{"error": {"code": 403, "status": "PERMISSION_DENIED", "message": "no"}}]
    ).encode()
    assert ag.read_google_error(wrapped, 403) == ag.GoogleError("PERMISSION_DENIED", "no", None)
    for garbage in (b"<html>502</html>", b"", b"\xff\xfe", b'{"error": "flat"}', b"[]"):
        error = ag.read_google_error(garbage, 502)
        assert error.status is None and error.retry_after is None
        assert (
            error.message == "the upstream answered HTTP 502 with a body that is not a Google error"
        )


def test_quota_answer_as_family_observations():
    body = {
        "models": {
            "gemini-3.1-pro-high": {
                "quotaInfo": {"remainingFraction": 0.7, "resetTime": "2027-01-15T08:00:00Z"}
            },
            "gemini-3.1-pro-low": {
                "quotaInfo": {"remainingFraction": 0.2, "resetTime": "2027-01-15T09:00:00Z"}
            },
            "gemini-2.5-flash": {"quotaInfo": {"resetTime": "2027-01-15T07:00:00Z"}},  # exhausted
            "claude-sonnet-4-5": {"quotaInfo": {"remainingFraction": 1.5}},  # nonsense: ignored
            "chat_20706": {"quotaInfo": {"remainingFraction": 0.1}},  # not a family model
            "gemini-3-flash": "garbage",
        }
    }
    found = {o.window: o for o in ag.quota_observations(body, NOW)}
    assert set(found) == {"gemini_pro", "gemini_flash"}
    assert found["gemini_pro"].utilization == pytest.approx(0.8)  # the tightest model
    assert found["gemini_pro"].resets_at == pytest.approx(iso_seconds("2027-01-15T09:00:00Z"))
    assert found["gemini_flash"].utilization == 1.0 and found["gemini_flash"].rejected
    assert found["gemini_pro"].source == "poll" and found["gemini_pro"].observed_at == NOW
    for bad in (None, [], {"models": []}, {"models": {"gemini-3.1-pro-high": {}}}):
        assert ag.quota_observations(bad, NOW) == []
    assert ag.available_models(body)[0] == "chat_20706"


def test_families():
    assert [
        family_of(m)
        for m in (
            "claude-opus-4-6-thinking",
            "gemini-3.1-pro-high",
            "gemini-2.5-flash-lite",
            "gemini-3-flash",
            "gpt-5",
        )
    ] == ["claude", "gemini_pro", "gemini_flash", "gemini_flash", None]


def test_project_ids_and_the_envelope():
    assert ag.project_of({"cloudaicompanionProject": "p-1"}) == "p-1"
    assert ag.project_of({"cloudaicompanionProject": {"id": "p-2", "name": "x"}}) == "p-2"
    assert ag.project_of({"cloudaicompanionProject": ""}) is None
    assert ag.project_of([]) is None
    envelope = ag.envelope("p-1", "gemini-3-flash", {"contents": []})
    assert envelope["project"] == "p-1" and envelope["userAgent"] == "antigravity"
    assert envelope["requestType"] == "agent" and envelope["requestId"].startswith("agent-")
    # a request outside any conversation still carries a session id, its own
    assert envelope["request"]["contents"] == [] and envelope["request"]["sessionId"]
    again = ag.envelope("p-1", "gemini-3-flash", {"contents": []})
    assert again["request"]["sessionId"] != envelope["request"]["sessionId"]
    kept = ag.envelope("p-1", "gemini-3-flash", {"contents": [], "sessionId": "conv-1"})
    assert kept["request"]["sessionId"] == "conv-1"
    assert ag.upstream_model("claude-opus-4-6") == "claude-opus-4-6-thinking"
    assert ag.upstream_model("gemini-3.1-pro-preview") == "gemini-3.1-pro-high"
    assert ag.upstream_model("claude-opus-4-5") == "claude-opus-4-5"  # no silent upgrades
    assert ag.upstream_model("gemini-2.5-pro") == "gemini-2.5-pro"
    assert ag.endpoint("https://x/", True) == "https://x/v1internal:streamGenerateContent?alt=sse"
    assert ag.endpoint("https://x", False) == "https://x/v1internal:generateContent"
    assert ag.user_agent().startswith("antigravity/")
    assert ag.serves("gemini-3-flash") and ag.serves("claude-sonnet-4-5")
    assert not ag.serves("gpt-5.4")


def test_the_refresh_form_names_the_client_that_issued_the_login():
    gemini_id, gemini_secret = ag.CLIENTS["gemini-cli"]
    imported = {"refresh_token": "r", "client_id": gemini_id, "client_secret": gemini_secret}
    assert ag.refresh_form(imported) == {
        "grant_type": "refresh_token",
        "refresh_token": "r",
        "client_id": gemini_id,
        "client_secret": gemini_secret,
    }
    # a known client id without its secret gets that client's secret, not the default one
    assert (
        ag.refresh_form({"refresh_token": "r", "client_id": gemini_id})["client_secret"]
        == gemini_secret
    )
    assert ag.refresh_form({"refresh_token": "r"})["client_id"] == ag.CLIENTS["antigravity"][0]


@pytest.mark.parametrize(
    ("system", "machine", "agent"),
    [
        ("Linux", "x86_64", "linux/amd64"),
        ("Darwin", "aarch64", "darwin/arm64"),
        ("Windows", "RISCV64", "windows/riscv64"),  # unknown machines go as they are
        ("", "", "linux/amd64"),  # a platform that names nothing reads as the common one
    ],
)
def test_the_user_agent_names_the_platform_as_antigravity_does(monkeypatch, system, machine, agent):
    monkeypatch.setattr(ag.platform, "system", lambda: system)
    monkeypatch.setattr(ag.platform, "machine", lambda: machine)
    assert ag.user_agent() == f"antigravity/{ag.DEFAULT_CLIENT_VERSION} {agent}"


def test_request_headers_carry_the_token_and_ask_for_the_right_answer():
    streamed = ag.upstream_headers({"access_token": "ya29.t"}, stream=True)
    assert streamed == {
        "authorization": "Bearer ya29.t",
        "content-type": "application/json",
        "accept": "text/event-stream",
        "user-agent": ag.user_agent(),
    }
    assert ag.upstream_headers({}, stream=False)["accept"] == "application/json"
    assert ag.upstream_headers({}, stream=False)["authorization"] == "Bearer "


def test_urls_keep_the_base_as_typed_without_its_trailing_slash():
    assert ag.base_for("https://gw.corp/BOX/", ag.DEFAULT_BASE_URL) == "https://gw.corp/BOX"
    assert ag.base_for(None, "https://cloud/") == "https://cloud"
    assert ag.method_url("https://gw/BOX/", "loadCodeAssist") == (
        "https://gw/BOX/v1internal:loadCodeAssist"
    )
    assert ag.endpoint("https://gw/BOX/", True) == (
        "https://gw/BOX/v1internal:streamGenerateContent?alt=sse"
    )
    assert ag.endpoint("https://gw/BOX/", False) == "https://gw/BOX/v1internal:generateContent"
    assert ag.envelope("p", "gemini-3-flash", {})["model"] == "gemini-3-flash"


def test_the_model_list_call_is_a_post_for_the_logins_project():
    url, headers, body = ag.models_call("https://gw/", {"access_token": "t", "project_id": "p-7"})
    assert url == "https://gw/v1internal:fetchAvailableModels"
    assert headers["authorization"] == "Bearer t" and headers["accept"] == "application/json"
    assert body == {"project": "p-7"}
    assert ag.models_call("https://gw", {"access_token": "t"})[2] == {"project": ""}
    assert ag.available_models(None) == [] and ag.available_models({"models": []}) == []


def test_hours_and_odd_google_error_details():
    assert ag.parse_duration("2h") == 7200.0
    body = {
        "error": {
            "details": [
                "not a detail",
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"},
                {"metadata": {"quotaResetDelay": "90s"}},  # RetryInfo comes first
                {"metadata": "odd"},
            ],
            "message": "m" * 600,
            "status": "S" * 80,
        }
    }
    error = ag.read_google_error(json.dumps(body).encode(), 429)
    assert error.retry_after == 12.0
    assert error.message == "m" * 500 and error.status == "S" * 64
    bare = ag.read_google_error(b'{"error": {"code": 429}}', 429)
    assert bare == ag.GoogleError(None, "upstream HTTP 429", None)


def test_quota_edges_unreadable_models_are_skipped_not_fatal():
    body = {
        "models": {
            "chat_20706": {"quotaInfo": {"remainingFraction": 0.1}},  # not a family model
            "claude-opus-4-6-thinking": {"quotaInfo": {"remainingFraction": -0.5}},  # nonsense
            "claude-sonnet-4-5": {"quotaInfo": {"remainingFraction": 1.0, "resetTime": 5}},
            "gemini-3-flash": {"quotaInfo": {}},  # neither fraction nor reset: says nothing
            "gemini-3.1-pro-high": {
                "quotaInfo": {"remainingFraction": 0.25, "resetTime": "2027-01-15T09:00:00Z"}
            },
        }
    }
    found = {o.window: o for o in ag.quota_observations(body, NOW)}
    assert set(found) == {"claude", "gemini_pro"}
    assert found["claude"].utilization == 0.0 and found["claude"].resets_at is None
    assert not found["claude"].rejected
    assert found["gemini_pro"].resets_at == 1_800_003_600.0  # 2027-01-15T09:00:00Z


def test_a_login_with_its_own_client_refreshes_with_that_client():
    form = ag.refresh_form({"refresh_token": "r", "client_id": "own", "client_secret": "s3"})
    assert (form["client_id"], form["client_secret"]) == ("own", "s3")
    # an unknown client without a secret falls back to the default client's secret
    assert (
        ag.refresh_form({"refresh_token": "r", "client_id": "own"})["client_secret"]
        == ag.CLIENTS[ag.DEFAULT_CLIENT][1]
    )
