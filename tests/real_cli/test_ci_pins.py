"""The CLI versions the fidelity tests pin are the ones CI installs."""

from pathlib import Path

from tests.real_cli import CLI_PACKAGES, ROOT


def test_ci_pins_match() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    for package in CLI_PACKAGES.values():
        assert package in ci, f".ci/run does not install {package}"
    assert Path(ROOT / ".gitignore").read_text().count(".clis/") == 1
