import uuid
from pathlib import Path

from sublane_desktop.gui.single_instance import SingleInstance, instance_name


def unique_name():
    return f"sublane-test-{uuid.uuid4().hex[:12]}"


def test_second_instance_finds_first_and_asks_it_to_show(qtbot):
    name = unique_name()
    first = SingleInstance(name)
    assert not first.already_running()
    shown = []
    assert first.listen(lambda: shown.append(True))
    try:
        second = SingleInstance(name)
        assert second.already_running()
        qtbot.waitUntil(lambda: shown == [True], timeout=2000)
    finally:
        first.close()


def test_after_close_nobody_is_running(qtbot):
    name = unique_name()
    first = SingleInstance(name)
    assert first.listen(lambda: None)
    first.close()
    assert not SingleInstance(name).already_running()


def test_name_depends_on_data_dir(tmp_path):
    a, b = instance_name(tmp_path / "a"), instance_name(tmp_path / "b")
    assert a != b and a.startswith("sublane-") and len(a) == len("sublane-") + 12
    assert instance_name(Path(tmp_path / "a")) == a
