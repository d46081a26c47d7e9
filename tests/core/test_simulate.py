"""The scripted-day trace runs on the real scheduler and shows the levers taking effect."""

from sublane_desktop import simulate


def test_scripted_day_trace(capsys):
    simulate.main(["--hours", "24"])
    out = capsys.readouterr().out
    lines = out.splitlines()
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
    assert "refused" not in out
