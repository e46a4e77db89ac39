"""`python -m benchmarks` runs every registered setting by default: a new setting is one
registry entry, with no list of names in __main__ to edit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import __main__ as bench_main
from benchmarks import _registry as reg


@pytest.fixture
def extra_setting() -> Iterator[str]:
    """A setting registered for the test alone (removed after it)."""
    reg.load()
    name = "test-extra-setting"
    reg.setting(name, description="registered by a test", order=9)(lambda workload: None)
    try:
        yield name
    finally:
        del reg.SETTINGS[name]


@pytest.mark.parametrize("flags", [[], ["--quick"]])
def test_a_newly_registered_setting_runs_by_default_after_the_others_in_registered_order(
    flags: list[str], extra_setting: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FULL and QUICK named ("one-curve", "free-curves", "closed-loop"): a new setting
    # did not run until both lists were edited too.
    ran: list[tuple[str, ...]] = []

    def run(cfg: bench_main.Config, out: Path, **_kw: object) -> dict:
        ran.append(cfg.settings)
        raise OSError("stop here: the run itself is not under test")

    monkeypatch.setattr(bench_main, "run", run)
    assert bench_main.main([*flags, "--out", str(tmp_path)]) == 2
    assert ran == [("one-curve", "free-curves", "closed-loop", extra_setting)]


def test_the_settings_help_names_every_registered_setting(extra_setting: str, capsys: pytest.CaptureFixture[str]) -> None:
    # The help text hard-coded "one-curve, free-curves, closed-loop".
    with pytest.raises(SystemExit):
        bench_main.main(["--help"])
    assert extra_setting in " ".join(capsys.readouterr().out.split())
