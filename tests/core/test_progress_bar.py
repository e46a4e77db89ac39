"""Progress bars (cotune/cli/_progress.py): on a terminal only, never with --quiet."""

from __future__ import annotations

import io

import pytest

from cotune.cli._progress import progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("tty, quiet, shown", [(True, False, True), (True, True, False), (False, False, False)])
def test_bar_only_on_a_terminal_and_not_quiet(monkeypatch, tty, quiet, shown):
    pytest.importorskip("tqdm")
    stream = _Terminal() if tty else io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    with progress_bar("fitting models", quiet=quiet, delay_s=0) as advance:
        for done in range(1, 4):
            advance(done, 3)
    assert ("fitting models" in stream.getvalue()) is shown
    if shown:
        assert "3/3" in stream.getvalue()


def test_fit_reports_progress_through_its_callback():
    from cotune import fit_models, load_profile

    calls = []
    fit_models(load_profile("cifar10-resnet18"), progress=lambda done, total: calls.append((done, total)))
    assert calls[-1][0] == calls[-1][1] and [d for d, _ in calls] == sorted(d for d, _ in calls)
