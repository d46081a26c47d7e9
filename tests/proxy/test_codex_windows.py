"""R-WF-4 end to end: Codex quota windows named by their length and per-model limit families,
against the strict fake ChatGPT backend (its headers carry what openai/codex
codex-api/src/rate_limits.rs reads)."""

from __future__ import annotations

import openai
import pytest

from sublane_desktop.cli.accounts import print_accounts
from sublane_desktop.gui.pool_status import gauge_caption, gauge_windows
from tests.fake_codex import LimitFamily, Window
from tests.openai_helpers import oai, until

SPARK = "gpt-5.3-codex-spark"


@pytest.fixture
async def ready(codex_harness):
    codex_harness.codex.usage_for["*"] = 429  # the header feed only
    account = await codex_harness.add_codex_account("sub", "tok-sub")
    return codex_harness, account, await codex_harness.create_key()


async def test_a_lone_week_window_is_the_seven_day_gauge(ready, capsys):
    """A plan without the 5-hour window: its primary is the week; the 5h gauge reads "no such
    window" rather than the week's number or a stale 5h reading."""
    h, acc, key = ready
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")  # 5h and 7d as usual
    account = h.service.pool.accounts[acc]
    await until(lambda: account.gauges.five_hour.utilization == 0.25, "the 5h reading")
    h.codex.windows = [Window(62, 10080, 1800300000)]
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    await until(lambda: account.gauges.five_hour.absent, "the 5h window gone")
    view = h.service.account_view(acc)
    assert view["gauges"]["seven_day"]["utilization"] == pytest.approx(0.62)
    five = view["gauges"]["five_hour"]
    assert five["utilization"] is None and five["absent"] is True
    assert gauge_caption(five, 0.0) == "no such window"  # what the tray and windows show
    print_accounts({"accounts": [view]})  # and `sublane account list`
    row = capsys.readouterr().out.splitlines()[-1]
    assert row.split()[-3:] == ["none", "62%", "cold"]  # 5H 7D FABLE
    # and it gates nothing: the account keeps serving
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")


async def test_a_week_at_its_limit_named_as_primary_excludes_the_account(ready):
    h, acc, key = ready
    other = await h.add_codex_account("other", "tok-other")
    h.codex.windows = [Window(100, 10080, 1800300000)]
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    await until(
        lambda: (
            h.service.pool.accounts[acc].gauges.seven_day.utilization == 1.0
            or h.service.pool.accounts[other].gauges.seven_day.utilization == 1.0
        ),
        "a spent week",
    )
    views = [h.service.account_view(a) for a in (acc, other)]
    assert "quota_exhausted" in [v["state"] for v in views]  # the week, not a "5h" at 100 %


def spark_family(used: float) -> LimitFamily:
    return LimitFamily("GPT-5.3-Codex-Spark", (SPARK,), Window(used, 300, 1800000600))


async def test_a_model_scoped_429_rests_that_limit_only(ready):
    h, acc, key = ready
    h.codex.families["codex_bengalfox"] = spark_family(100)
    with pytest.raises(openai.RateLimitError):
        await oai(h, key).responses.create(model=SPARK, input="hi")
    assert len(h.codex.seen) == 1
    account = h.service.pool.accounts[acc]
    assert account.cooldown_until is None and account.failure_streak == 0  # not the account
    assert "limit:codex_bengalfox" in account.family_cooldowns
    # the account's other models are still served
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    assert h.codex.seen[-1].body["model"] == "gpt-5.4" and len(h.codex.seen) == 2
    # the spent limit's model is refused here, without asking the upstream again
    with pytest.raises(openai.RateLimitError) as err:
        await oai(h, key).responses.create(model=SPARK, input="hi")
    assert err.value.body["code"] == "quota_exhausted" and len(h.codex.seen) == 2
    view = h.service.account_view(acc)
    assert view["gauges"]["limit:codex_bengalfox"]["utilization"] == 1.0
    assert gauge_windows(view) == ("five_hour", "seven_day", "limit:codex_bengalfox")


async def test_per_model_limit_headers_are_kept_as_gauges(ready):
    h, acc, key = ready
    h.codex.families["codex_bengalfox"] = spark_family(40)
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    account = h.service.pool.accounts[acc]
    await until(lambda: "limit:codex_bengalfox" in account.gauges.limits, "the family gauge")
    view = h.service.account_view(acc)["gauges"]
    assert view["limit:codex_bengalfox"]["utilization"] == pytest.approx(0.4)
    assert view["five_hour"]["utilization"] == pytest.approx(0.25)  # the account's own


async def test_a_spent_limit_seen_in_the_usage_poll_rests_the_models_that_draw_on_it(ready):
    """A response names the limit a model draws on; once the usage read says that limit is
    spent, its models wait here while the account's others are served."""
    h, acc, key = ready
    h.codex.families["codex_bengalfox"] = spark_family(50)
    await oai(h, key).responses.create(model=SPARK, input="hi")
    account = h.service.pool.accounts[acc]
    assert account.gauges.model_limits == {SPARK: "limit:codex_bengalfox"}
    h.codex.usage_for["*"] = {
        "plan_type": "pro",
        "rate_limit": {
            "allowed": True,
            "primary_window": {"used_percent": 10, "limit_window_seconds": 18000},
            "secondary_window": {"used_percent": 10, "limit_window_seconds": 604800},
        },
        "additional_rate_limits": [
            {
                "limit_name": "GPT-5.3-Codex-Spark",
                "metered_feature": "codex_bengalfox",
                "rate_limit": {
                    "allowed": False,
                    "limit_reached": True,
                    "primary_window": {"used_percent": 100, "limit_window_seconds": 18000},
                },
            }
        ],
    }
    await h.service.refresher.want([account], force=True)[0]
    await until(lambda: account.gauges.limits["limit:codex_bengalfox"].rejected, "the poll")
    seen = len(h.codex.seen)
    with pytest.raises(openai.RateLimitError) as err:
        await oai(h, key).responses.create(model=SPARK, input="hi")
    assert err.value.body["code"] == "quota_exhausted" and len(h.codex.seen) == seen
    await oai(h, key).responses.create(model="gpt-5.4", input="hi")
    assert len(h.codex.seen) == seen + 1
