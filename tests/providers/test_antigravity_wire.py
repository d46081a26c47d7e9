"""providers/antigravity.py as pure functions: Google error bodies and their retry delays, the
quota answer as family observations, project ids, the refresh form, the request envelope."""

from __future__ import annotations

import json

import pytest

from sublane_desktop.core.gauges import family_of
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
        ("0s", None),
        ("-3s", None),
        ("soon", None),
        (12, None),
        (None, None),
    ],
)
def test_durations(value, seconds):
    assert ag.parse_duration(value) == seconds


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
            "gemini-3-pro-high": {
                "quotaInfo": {"remainingFraction": 0.7, "resetTime": "2027-01-15T08:00:00Z"}
            },
            "gemini-3-pro-low": {
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
    assert found["gemini_pro"].resets_at == pytest.approx(ag._iso("2027-01-15T09:00:00Z"))
    assert found["gemini_flash"].utilization == 1.0 and found["gemini_flash"].rejected
    assert found["gemini_pro"].source == "poll" and found["gemini_pro"].observed_at == NOW
    for bad in (None, [], {"models": []}, {"models": {"gemini-3-pro-high": {}}}):
        assert ag.quota_observations(bad, NOW) == []
    assert ag.available_models(body)[0] == "chat_20706"


def test_families():
    assert [
        family_of(m)
        for m in (
            "claude-opus-4-5-thinking",
            "gemini-3-pro-high",
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
    assert envelope["requestId"].startswith("agent-") and envelope["request"] == {"contents": []}
    assert ag.upstream_model("claude-opus-4-5") == "claude-opus-4-5-thinking"
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
    assert ag.user_agent() == f"antigravity/{ag.VERSION} {agent}"


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
            "claude-opus-4-5-thinking": {"quotaInfo": {"remainingFraction": -0.5}},  # nonsense
            "claude-sonnet-4-5": {"quotaInfo": {"remainingFraction": 1.0, "resetTime": 5}},
            "gemini-3-flash": {"quotaInfo": {}},  # neither fraction nor reset: says nothing
            "gemini-3-pro-high": {
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
