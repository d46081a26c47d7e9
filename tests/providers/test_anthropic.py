"""providers/anthropic.py as pure functions: the model-list call and error bodies."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict

from sublane_desktop.providers import anthropic


def test_model_discovery_uses_the_accounts_api_key_and_version():
    url, headers = anthropic.models_call("https://api.anthropic.com/", {"api_key": "sk-ant-1"})
    assert url == "https://api.anthropic.com/v1/models?limit=1000"
    assert headers == {"anthropic-version": anthropic.API_VERSION, "x-api-key": "sk-ant-1"}
    assert anthropic.verify_call("https://api.anthropic.com/", {"api_key": "sk-ant-1"}) == (
        url,
        headers,
    )


def test_an_oauth_login_has_no_model_list_and_is_verified_by_its_usage_endpoint():
    """R-WF-3: /v1/models refuses OAuth tokens (401 "OAuth authentication is currently not
    supported.")."""
    assert anthropic.models_call("https://gw", {"access_token": "sk-ant-oat01-x"}) == (None, {})
    url, headers = anthropic.verify_call("https://gw/", {"access_token": "sk-ant-oat01-x"})
    assert url == "https://gw/api/oauth/usage"
    assert headers == {
        "anthropic-version": anthropic.API_VERSION,
        "authorization": "Bearer sk-ant-oat01-x",
        "anthropic-beta": anthropic.OAUTH_BETA,
    }


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (
            b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}',
            "overloaded_error",
        ),
        (b'{"error":{"type":"' + b"x" * 100 + b'"}}', "x" * 64),  # bounded
        (b'{"error":{"message":"no type"}}', None),
        (b'{"error":"flat"}', None),
        (b"[]", None),
        (b"<html>", None),
    ],
)
def test_an_error_body_gives_its_type_or_nothing(body, kind):
    assert anthropic.error_type_of(body) == kind


def test_betas_merge_once_each_in_order():
    assert anthropic.merge_betas("a, b", None, "b,c,,", "") == "a,b,c"
    assert anthropic.merge_betas(None) == ""


def test_requests_carry_the_accounts_credential_and_the_clients_betas():
    client = {"anthropic-beta": "context-1m", "x-api-key": "sl-client", "cookie": "c=1"}
    oauth = anthropic.upstream_headers(
        client, {"access_token": "sk-ant-oat01-t"}, extra_betas=["extra"]
    )
    assert oauth == {
        "anthropic-beta": f"context-1m,extra,{anthropic.OAUTH_BETA}",
        "anthropic-version": anthropic.API_VERSION,  # the client sent none: ours
        "content-type": "application/json",
        "authorization": "Bearer sk-ant-oat01-t",
    }
    keyed = anthropic.upstream_headers(
        {"anthropic-version": "2024-01-01"}, {"api_key": "sk-ant-api"}, extra_betas=[]
    )
    assert keyed == {
        "anthropic-version": "2024-01-01",  # the client's own, forwarded unchanged
        "content-type": "application/json",
        "x-api-key": "sk-ant-api",
    }


def test_usage_counts_are_taken_as_sent_and_total_input_adds_the_cache():
    usage = anthropic.Usage()
    usage.absorb(
        {
            "input_tokens": 10,
            "output_tokens": 2,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 5,
        }
    )
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read, usage.cache_creation) == (
        10,
        2,
        30,
        5,
    )
    assert usage.total_input == 45
    usage.absorb({"output_tokens": 9, "input_tokens": -1, "cache_read_input_tokens": True})
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read) == (10, 9, 30)
    usage.absorb("odd")
    assert usage.output_tokens == 9
    assert anthropic.Usage().total_input is None
    assert anthropic.Usage(input_tokens=4).total_input == 4


@pytest.mark.parametrize(
    ("client_betas", "extra", "expected"),
    [
        (None, [], anthropic.OAUTH_BETA),  # the usual request: our one beta
        ("tools-1", [], f"tools-1,{anthropic.OAUTH_BETA}"),  # the client's kept, before ours
        (None, ["context-1m"], f"context-1m,{anthropic.OAUTH_BETA}"),  # two of ours, listed
        (f"{anthropic.OAUTH_BETA}", [], anthropic.OAUTH_BETA),  # never twice
    ],
)
def test_the_beta_header_lists_every_beta_once(client_betas, extra, expected):
    client = {"anthropic-beta": client_betas} if client_betas else {}
    headers = anthropic.upstream_headers(client, {"access_token": "t"}, extra_betas=extra)
    assert headers["anthropic-beta"] == expected


def test_a_credential_without_a_token_sends_an_empty_bearer_not_a_made_up_one():
    headers = anthropic.upstream_headers({}, {}, extra_betas=[])
    assert headers["authorization"] == "Bearer "  # the upstream's 401 starts the refresh


def test_zero_counts_are_counts_and_a_later_event_without_one_keeps_it():
    usage = anthropic.Usage()
    usage.absorb({"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0})
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read) == (0, 0, 0)
    usage.absorb({"output_tokens": 5, "cache_creation_input_tokens": 7})
    usage.absorb({"input_tokens": 3})  # message_delta-like: only what changed
    assert (usage.input_tokens, usage.output_tokens, usage.cache_creation) == (3, 5, 7)


def test_a_relayed_request_keeps_every_client_header_but_those_that_stay_here():
    """R-WF-1: names as spelled and in order; the client's key, hop-by-hop headers (and one
    its Connection header names), cookies and proxy route headers stay here."""
    client = CIMultiDict(
        [
            ("Accept", "application/json"),
            ("X-Stainless-Retry-Count", "0"),
            ("Host", "127.0.0.1:8765"),
            ("Content-Length", "12"),
            ("Connection", "keep-alive, X-Hop"),
            ("X-Hop", "1"),
            ("Transfer-Encoding", "chunked"),
            ("Upgrade", "h2c"),
            ("Proxy-Authorization", "Basic x"),
            ("Authorization", "Bearer sl-client"),
            ("X-Api-Key", "sl-client"),
            ("Cookie", "a=1"),
            ("X-Forwarded-For", "10.0.0.1"),
            ("Via", "1.1 p"),
            ("Expect", "100-continue"),
            ("Content-Encoding", "gzip"),
            ("x-client-request-id", "r-1"),
            ("Anthropic-Beta", "b-1, b-2"),
            ("anthropic-beta", "b-3"),  # a repeated field: one line, in order
        ]
    )
    headers = anthropic.relayed_headers(client, {"access_token": "tok"}, extra_betas=["b-2"])
    assert list(headers.items()) == [
        ("Accept", "application/json"),
        ("X-Stainless-Retry-Count", "0"),
        ("x-client-request-id", "r-1"),
        ("Anthropic-Beta", f"b-1, b-2, b-3,{anthropic.OAUTH_BETA}"),
        ("anthropic-version", anthropic.API_VERSION),  # the API needs one; the client sent none
        ("content-type", "application/json"),
        ("authorization", "Bearer tok"),
    ]
    offer = {"Accept-Encoding": "br, gzip"}  # narrowed when the relay cannot decode br
    narrowed = anthropic.relayed_headers(
        offer, {"api_key": "k"}, extra_betas=[], decodable=frozenset({"gzip"})
    )
    assert narrowed["Accept-Encoding"] == "gzip"
    keyed = anthropic.relayed_headers(
        {"anthropic-version": "2099-01-01", "Content-Type": "application/json; charset=utf-8"},
        {"api_key": "sk-ant-api"},
        extra_betas=[],
    )
    assert keyed == {
        "anthropic-version": "2099-01-01",
        "Content-Type": "application/json; charset=utf-8",
        "x-api-key": "sk-ant-api",
    }


@pytest.mark.parametrize(
    ("client", "needed", "expected"),
    [
        (None, [], ""),
        (None, ["o"], "o"),
        ("a, b", ["o"], "a, b,o"),  # the client's spelling kept, ours appended
        ("a,o", ["o"], "a,o"),  # listed already: the very value
        (" o ,a", ["o", "o", "c"], " o ,a,c"),
        ("a", ["c", "c"], "a,c"),  # once each
    ],
)
def test_betas_keep_the_clients_list_and_append_what_is_missing(client, needed, expected):
    assert anthropic.with_betas(client, needed) == expected


@pytest.mark.parametrize("as_dict", [False, True])
def test_headers_the_clients_connection_header_names_stay_here_in_any_spelling(as_dict):
    """RFC 9110 7.6.1: a header the Connection header names is hop-by-hop, whether the client's
    headers come as aiohttp's multidict or a plain dict, spaced or not, in any case."""
    pairs = [
        ("connection", "Keep-Alive,X-Hop"),
        ("x-hop", "1"),
        ("X-Keep", "2"),
        ("anthropic-version", "2023-06-01"),
    ]
    client = dict(pairs) if as_dict else CIMultiDict(pairs)
    headers = anthropic.relayed_headers(client, {"api_key": "k"}, extra_betas=[])
    assert "x-hop" not in {name.lower() for name in headers}
    assert headers["X-Keep"] == "2"


def test_a_header_value_in_utf8_goes_on_and_one_that_is_not_text_stays_here():
    """Non-ASCII header text a client sends is relayed as it is; bytes that are not UTF-8
    (read as lone surrogates) cannot go on the wire and are left out, not a 500."""
    client = {"X-Title": "café ☃", "X-Broken": "a\udcff", "anthropic-version": "2023-06-01"}
    headers = anthropic.relayed_headers(client, {"api_key": "k"}, extra_betas=[])
    assert headers["X-Title"] == "café ☃"
    assert "X-Broken" not in headers
