"""The scripted day (`sublane simulate --explain`) runs on the real scheduler and shows the
levers taking effect, decision by decision."""

from sublane_desktop.core.simulation.scripted_day import explain


def test_scripted_day_trace():
    lines = explain(24)
    assert "11:00  | main          | team      score      -  manual pin" in lines
    assert "11:00  | fable         | team      score      -  manual pin" in lines
    # The 3-hour Fable bucket is burned first, at a far higher score than the main lane.
    first_fable = next(line for line in lines if line.startswith("00:00  | fable"))
    assert "personal" in first_fable
    # While team is paused, nothing is served by it.
    paused = [
        line
        for line in lines
        if line[:5] in ("06:00", "07:00", "08:00") and ("| main" in line or "| fable" in line)
    ]
    assert len(paused) == 6  # both lanes, every hour of the pause
    assert all("team" not in line for line in paused)
    assert not any("refused" in line for line in lines)
    assert "15:00  | ** fable 429 on current fable account" in lines


def test_the_scripted_day_is_the_same_every_time_and_follows_the_policy():
    assert explain(6) == explain(6)
    assert explain(6, "round_robin") != explain(6)  # round robin keeps its first anchor
    assert all("round robin" in line for line in explain(6, "round_robin")[2:] if "| main" in line)
