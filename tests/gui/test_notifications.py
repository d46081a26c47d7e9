"""Desktop notifications: which state changes are news (a table), and the Notifier wiring."""

import time

import pytest
from gui_fakes import account

from sublane_desktop.gui.bridge import Bridge
from sublane_desktop.gui.notifications import Notifier, transitions

NOW = 1_800_000_000.0


def snap(**states):
    return [
        account(name, state, id=i) | ({"cooldown_until": NOW + 75} if state == "cooling" else {})
        for i, (name, state) in enumerate(states.items(), start=1)
    ]


@pytest.mark.parametrize(
    "before, after, expected",
    [
        # (old state, new state) -> kinds announced
        ("ok", "cooling", ["cooling"]),
        ("busy", "cooling", ["cooling"]),
        ("probing", "cooling", ["cooling"]),  # the recovery probe failed: cooling again
        ("ok", "quota_exhausted", ["exhausted"]),
        ("cooling", "quota_exhausted", ["exhausted"]),
        ("ok", "auth_failed", ["auth_failed"]),
        ("cooling", "probing", []),  # not recovered yet: waiting for its probe
        ("probing", "ok", ["recovered"]),
        ("cooling", "ok", ["recovered"]),
        ("quota_exhausted", "ok", ["recovered"]),
        ("quota_exhausted", "busy", ["recovered"]),
        ("auth_failed", "ok", ["recovered"]),
        ("ok", "busy", []),
        ("busy", "ok", []),
        ("ok", "paused", []),  # the person just did that
        ("paused", "ok", []),
        ("ok", "ok", []),
        ("ok", "disabled", []),
    ],
)
def test_transition_table(before, after, expected):
    notices = transitions(snap(work=before), snap(work=after))
    assert [n.kind for n in notices] == expected


def test_words():
    (cooling,) = transitions(snap(work="ok"), snap(work="cooling"))
    assert cooling.title == "work is cooling down"
    assert time.strftime("%H:%M:%S", time.localtime(NOW + 75)) in cooling.body
    (out,) = transitions(snap(work="ok"), snap(work="quota_exhausted"))
    assert out.title == "work ran out of quota"
    (back,) = transitions(snap(work="probing"), snap(work="ok"))
    assert back.title == "work recovered"


def test_first_snapshot_and_new_or_removed_accounts_say_nothing():
    assert transitions(None, snap(work="cooling")) == []
    assert transitions(snap(work="ok"), snap(work="ok", new="cooling")) == []
    assert transitions(snap(work="ok", gone="ok"), snap(work="ok")) == []


def test_several_accounts_at_once():
    notices = transitions(
        snap(a="ok", b="ok", c="cooling"), snap(a="cooling", b="quota_exhausted", c="probing")
    )
    assert [(n.account_id, n.kind) for n in notices] == [(1, "cooling"), (2, "exhausted")]


def test_notifier_shows_each_change_once(qtbot, service):
    shown = []
    service.set_accounts(snap(work="ok", home="ok"))
    bridge = Bridge(service)
    _notifier = Notifier(bridge, lambda title, body: shown.append(title))  # kept alive
    service.set_accounts(snap(work="cooling", home="ok"))
    qtbot.waitUntil(lambda: shown == ["work is cooling down"], timeout=1000)
    service.set_accounts(snap(work="probing", home="ok"))
    service.set_accounts(snap(work="ok", home="ok"))
    qtbot.waitUntil(lambda: shown[-1] == "work recovered", timeout=1000)
    service.set_accounts(snap(work="quota_exhausted", home="cooling"))
    qtbot.waitUntil(lambda: shown[-1] == "2 accounts changed", timeout=1000)
    assert len(shown) == 3
    bridge.close()
